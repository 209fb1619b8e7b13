//! A Docker placement on a remote host (issue 23), with a network
//! namespace on this machine standing for the host and its own Docker
//! daemon standing for that host's Docker Engine
//! (`tare_testbed::ssh_hosts`, `HostSpec::docker`: a second dockerd in the
//! namespace, reached by the host's ssh sessions through `DOCKER_HOST`).
//! `tare run` puts `tare serve` in `docker-host` on that host: the
//! container is that daemon's, not this machine's, and lives in the host's
//! network; load from here reaches it at the host's address; it is
//! monitored there; nothing is left on the host or its daemon. Dropping
//! the testbed stops the daemon and removes its directories, containers
//! and the namespaces even when an assertion fails.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tare_testbed::ssh_hosts::{HostSpec, SshHosts};

const TARE: &str = env!("CARGO_BIN_EXE_tare");

const BODY: &str = r#"
[target]
kind = "tare-serve"
host = "dk"
[factors]
placement = ["docker-host"]
[load]
connections = 4
threads = 1
duration = "1s"
warmup = "200ms"
[trials]
count = 1
"#;

#[test]
fn a_docker_host_target_runs_on_the_remote_hosts_own_daemon() {
    let here = Command::new("docker")
        .args(["info", "--format", "{{.Driver}}"])
        .output();
    if !here.is_ok_and(|o| o.status.success()) {
        eprintln!("skipping: this machine's Docker daemon does not answer");
        return;
    }
    let hosts = SshHosts::start(&[HostSpec {
        name: "dk",
        bare_path: false,
        docker: true,
    }]);
    let dk = &hosts.dockers[0].1;
    let work = hosts.dir.join("work");
    let host_dir = work.join("on-dk");
    std::fs::create_dir_all(&host_dir).unwrap();
    let exp = work.join("docker.toml");
    std::fs::write(&exp, format!("{}{BODY}", hosts.toml("dk", &host_dir))).unwrap();
    let out_dir = work.join("run");
    let mut child = Command::new(TARE)
        .args([
            "run",
            exp.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
            "-q",
        ])
        .current_dir(&work)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The container appears on the host's daemon while the run lasts (and
    // is gone after it): what it is, asked while it runs.
    let deadline = Instant::now() + Duration::from_secs(240);
    let mut seen = None;
    while seen.is_none() && Instant::now() < deadline && child.try_wait().unwrap().is_none() {
        let id = dk
            .docker(&["ps", "-q", "--no-trunc"])
            .ok()
            .and_then(|ids| ids.split_whitespace().next().map(String::from));
        if let Some(id) = id {
            let mode = dk.docker(&["inspect", "-f", "{{.HostConfig.NetworkMode}}", &id]);
            let local = Command::new("docker")
                .args(["inspect", &id])
                .output()
                .unwrap();
            seen = Some((id, mode, local.status.success()));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let err = wait_output(&mut child, Duration::from_secs(300));
    let (id, mode, local) =
        seen.unwrap_or_else(|| panic!("no container on the host's daemon: {err}"));
    assert_eq!(
        mode.map(|m| m.trim().to_string()),
        Ok("host".into()),
        "{id}: {err}"
    );
    assert!(!local, "{id} is this machine's daemon's too");

    let recs: Vec<serde_json::Value> = std::fs::read_to_string(out_dir.join("trials.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(recs.len(), 1, "{err}");
    let r = &recs[0];
    assert!(r["result"]["requests"].as_u64().unwrap_or(0) > 0, "{r}");
    assert_eq!(r["monitor"]["host"], "dk", "{r}");
    assert!(
        r["monitor"]["per_request"]["server_us"]
            .as_f64()
            .unwrap_or(0.0)
            > 0.0,
        "the container's CPU, read from its cgroup on the host: {r}"
    );
    // Facts from the host: its daemon's image and container.
    let facts = std::fs::read_to_string(out_dir.join("facts.json")).unwrap();
    assert!(facts.contains("docker-host"), "{facts}");

    // Nothing left: no container on the host's daemon, nothing in the
    // host's directory.
    assert_eq!(dk.docker(&["ps", "-aq"]).unwrap().trim(), "", "{err}");
    assert!(left_in(&host_dir).is_empty(), "{:?}", left_in(&host_dir));
}

fn left_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path().display().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Waits for `child` at most `limit` (then kills it) and returns its stderr.
fn wait_output(child: &mut std::process::Child, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut s = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut s);
    }
    s
}
