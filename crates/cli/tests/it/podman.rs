//! tare serve (the tare binary this package builds) in the rootful Podman
//! placements: deployed and loaded by tare's HTTP engine with an exact
//! request count, and a whole `tare run` across native, podman-host,
//! podman-bridge and podman-publish; nothing of Podman's left afterwards.
//! The deploy crate's tests (crates/deploy/tests/it/podman.rs) do nginx.
//! The rootless placements' tests are `podman/rootless.rs`, in this binary
//! so that the two take turns.

mod rootless;

use crate::support::{Killer, ScratchDir};

use std::path::{Path, PathBuf};
use std::process::Command;

use tare_deploy::{deploy, DeploySpec, PlacementKind, TargetKind, TargetSpec};
use tare_engine::Endpoint;
use tare_http::{HttpConfig, Target};

const TARE: &str = env!("CARGO_BIN_EXE_tare");

/// The tests compare snapshots of Podman's store: one at a time.
static STORE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    STORE.lock().unwrap_or_else(|e| e.into_inner())
}

const PODMAN: [&str; 3] = ["podman-host", "podman-bridge", "podman-publish"];

fn podman_ok() -> bool {
    match PlacementKind::named("podman-host").unwrap().available() {
        Ok(_) => true,
        Err(reason) => {
            eprintln!("rootful Podman not available here: {reason}");
            false
        }
    }
}

/// Podman's containers and volumes now, as lines.
fn podman_things() -> Vec<String> {
    tare_testbed::machine::resources()
        .into_iter()
        .filter(|l| l.starts_with("podman "))
        .collect()
}

/// Whether Podman says the container `name` is running.
fn running(name: &str) -> bool {
    Command::new("podman")
        .args(["inspect", "--format", "{{.State.Running}}", name])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "true")
}

#[test]
fn tare_serve_in_every_podman_placement_counts_exactly() {
    if !podman_ok() {
        return;
    }
    let _store = one_at_a_time();
    for name in PODMAN {
        let before = podman_things();
        let mut target = TargetSpec::of(TargetKind::named("tare-serve").unwrap());
        target.target.binary = Some(PathBuf::from(TARE));
        let run = format!("c{}{}", std::process::id() % 100000, &name[7..]);
        let spec = DeploySpec::new(&run, target, PlacementKind::named(name).unwrap());
        let d = deploy(&spec).unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Endpoint::Tcp(a) = d.endpoint() {
            assert_eq!(a.ip().is_loopback(), name != "podman-bridge", "{name}: {a}");
        }
        counts_exactly(&d, name);
        let f = d.facts();
        assert!(
            f.image
                .as_deref()
                .unwrap_or("")
                .starts_with("tare/tare-serve:"),
            "{f:?}"
        );
        assert_eq!(f.process.binary_path, TARE, "the host's own binary");
        d.stop().unwrap();
        let left: Vec<String> = podman_things()
            .into_iter()
            .filter(|l| !before.contains(l))
            .collect();
        assert_eq!(left, Vec::<String>::new(), "{name}");
    }
}

/// Loads `d` for exactly 2000 requests and checks every one completed.
fn counts_exactly(d: &tare_deploy::Deployment, name: &str) {
    // A bridge address is a container tare started: allowed.
    let mut c = HttpConfig::new(Target::new(&d.url(), None, true).unwrap());
    c.load.threads = 2;
    c.load.connections = 8;
    // Counting, not latency: slirp4netns's one-threaded forwarder on a
    // loaded machine (a clean-clone CI with a build beside it) held three
    // requests past the default 2 s and the test failed on their timeouts.
    c.load.timeout = std::time::Duration::from_secs(20);
    c.load.duration = None;
    c.requests = Some(2000);
    let r = tare_http::run(&c).unwrap();
    assert_eq!(r.requests, 2000, "{name}");
    assert_eq!(r.in_flight, 0, "{name}");
    assert_eq!(r.errors.total(), 0, "{name}: {:?}", r.errors);
}

/// Every trial record under `dir`.
fn trials(dir: &Path) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(trials(&p));
        } else if p.file_name().is_some_and(|n| n == "trials.jsonl") {
            for l in std::fs::read_to_string(&p).unwrap().lines() {
                out.push(serde_json::from_str(l).unwrap());
            }
        }
    }
    out
}

#[test]
fn tare_run_across_native_and_podman() {
    if !podman_ok() {
        return;
    }
    let _store = one_at_a_time();
    let scratch = ScratchDir::new("podman");
    let dir = scratch.0.clone();
    let exp = "name = \"podman\"\n[target]\nkind = \"tare-serve\"\n[factors]\n\
               placement = [\"native\", \"podman-host\", \"podman-bridge\", \"podman-publish\"]\n\
               [load]\nthreads = 1\nconnections = 4\nduration = \"500ms\"\nwarmup = \"200ms\"\n\
               [trials]\ncount = 1\ncooldown = \"0s\"\n";
    std::fs::write(dir.join("podman.toml"), exp).unwrap();
    let before = podman_things();
    let out = Command::new(TARE)
        .arg("run")
        .arg(dir.join("podman.toml"))
        .arg("--out")
        .arg(dir.join("out"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let records = trials(&dir.join("out"));
    for name in ["native", "podman-host", "podman-bridge", "podman-publish"] {
        let r = records
            .iter()
            .find(|r| r["factors"]["placement"] == name)
            .unwrap_or_else(|| panic!("no trial of {name}: {records:?}"));
        assert!(r["error"].is_null(), "{name}: {r}");
        assert!(r["result"]["requests"].as_u64().unwrap_or(0) > 0, "{r}");
    }
    let left: Vec<String> = podman_things()
        .into_iter()
        .filter(|l| !before.contains(l))
        .collect();
    assert_eq!(left, Vec::<String>::new());
}

/// A `tare run` killed with SIGKILL while its podman-publish cell runs
/// leaves its container; `tare cleanup` removes it and nothing else of
/// Podman's.
#[test]
fn cleanup_after_sigkill_removes_the_podman_container() {
    if !podman_ok() {
        return;
    }
    let _store = one_at_a_time();
    let _cleanup = tare_testbed::machine::cleanup_lock();
    let scratch = ScratchDir::new("pkill");
    let dir = scratch.0.clone();
    let exp = "name = \"pkill\"\n[target]\nkind = \"tare-serve\"\n[factors]\n\
               placement = [\"podman-publish\"]\n\
               [load]\nthreads = 1\nconnections = 2\nduration = \"30s\"\nwarmup = \"0s\"\n\
               [trials]\ncount = 1\n";
    std::fs::write(dir.join("pkill.toml"), exp).unwrap();
    let before = podman_things();
    let child = Command::new(TARE)
        .arg("run")
        .arg(dir.join("pkill.toml"))
        .arg("--out")
        .arg(dir.join("pkillout"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // This run's containers only (`tare-<run id>-<pid>-<n>`): other tests
    // may run Podman containers meanwhile, and theirs come and go.
    let ours = format!("podman container tare-rpkillout-{}-", child.id());
    let mut child = Killer(child);
    let start = std::time::Instant::now();
    let made = loop {
        // Running, not only created: a `podman run` killed while it starts
        // the container may take the container with it, and then SIGKILL
        // leaves nothing for the test to see cleaned.
        let new: Vec<String> = podman_things()
            .into_iter()
            .filter(|l| !before.contains(l) && l.starts_with(&ours))
            .filter(|l| running(l.trim_start_matches("podman container ")))
            .collect();
        if !new.is_empty() {
            break new;
        }
        assert!(
            child.0.try_wait().unwrap().is_none(),
            "tare run ended before it made a container"
        );
        assert!(
            start.elapsed() < std::time::Duration::from_secs(120),
            "tare run made no container in 120 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    std::thread::sleep(std::time::Duration::from_millis(500));
    // SAFETY: plain syscall on our own child.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGKILL) };
    let _ = child.0.wait();
    let left: Vec<String> = podman_things()
        .into_iter()
        .filter(|l| !before.contains(l))
        .collect();
    assert!(
        made.iter().all(|m| left.contains(m)),
        "SIGKILL left nothing to clean ({made:?}): the test proves nothing"
    );
    let out = Command::new(TARE).arg("cleanup").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{text}");
    for m in &made {
        let name = m.trim_start_matches("podman container ");
        assert!(text.contains(name), "cleanup did not name {name}: {text}");
    }
    let after = podman_things();
    let diff: Vec<String> = after
        .iter()
        .filter(|l| !before.contains(l))
        .cloned()
        .collect();
    assert_eq!(diff, Vec::<String>::new(), "left after cleanup: {text}");
    let gone: Vec<String> = before
        .iter()
        .filter(|l| !after.contains(l))
        .cloned()
        .collect();
    assert_eq!(
        gone,
        Vec::<String>::new(),
        "cleanup removed what tare did not make"
    );
}
