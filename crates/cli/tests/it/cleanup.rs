//! Leaves no trace: a `tare run` killed with SIGKILL mid-run leaves
//! containers, namespaces, links, nft tables, processes and directories;
//! `tare cleanup` removes exactly those, and a user's own container, network
//! namespace and nftables table survive it. Also: tare-serve (this very
//! binary, `tare serve`) in every placement the machine supports.

use crate::support::{Killer, ScratchDir};

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tare_deploy::{deploy, DeploySpec, PlacementKind, TargetKind, TargetSpec};

const TARE: &str = env!("CARGO_BIN_EXE_tare");

/// The two tests compare whole-machine snapshots: never both at once.
static MACHINE: Mutex<()> = Mutex::new(());

/// Processes whose deployments these tests watch: this test process and the
/// `tare run` it kills.
static DEPLOYERS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

fn deployers() -> Vec<u32> {
    let mut v = DEPLOYERS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    v.push(std::process::id());
    v
}

/// Everything tare could leave, tare's or not: containers, volumes, netns,
/// links, nft tables, tare directories, tare server processes.
fn machine_state() -> Vec<String> {
    let mut v = tare_testbed::machine::resources();
    for e in std::fs::read_dir(std::env::temp_dir()).unwrap().flatten() {
        let n = e.file_name().to_string_lossy().to_string();
        let ours = deployers().iter().any(|p| n.contains(&format!("-{p}-")));
        if n.starts_with("tare-") && e.path().join(".tare-owner").exists() && ours {
            v.push(format!("dir {n}"));
        }
    }
    for l in tare_testbed::machine::output("ps", &["-eo", "pid,args"]).lines() {
        // Deployment paths are /tmp/tare-<run>-<deploying pid>-<n>: only
        // this test's deployers count (other suites may run beside it).
        if l.contains("/tmp/tare-") && deployers().iter().any(|p| l.contains(&format!("-{p}-"))) {
            v.push(format!("process {}", l.trim()));
        }
    }
    v.sort();
    v
}

fn tare_things(state: &[String]) -> Vec<String> {
    state
        .iter()
        .filter(|l| l.contains("tare") || l.starts_with("link tr") || l.starts_with("process"))
        .cloned()
        .collect()
}

fn docker_ok() -> bool {
    tare_deploy::docker::engine_version().is_ok()
}

/// A user's own things, made without tare: they must survive `tare cleanup`.
struct UserThings {
    netns: String,
    nft_table: String,
    container: Option<String>,
}

impl UserThings {
    fn make() -> UserThings {
        let id = std::process::id();
        let netns = format!("user-ns-{id}");
        let nft_table = format!("user_table_{id}");
        assert!(Command::new("ip")
            .args(["netns", "add", &netns])
            .status()
            .unwrap()
            .success());
        // A table with a chain and a rule: the rule must survive too.
        for args in [
            vec!["add", "table", "inet", nft_table.as_str()],
            vec!["add", "chain", "inet", nft_table.as_str(), "userchain"],
            vec![
                "add",
                "rule",
                "inet",
                nft_table.as_str(),
                "userchain",
                "tcp",
                "dport",
                "9",
                "counter",
            ],
        ] {
            let ok = Command::new("nft").args(&args).status().unwrap().success();
            assert!(ok, "nft {args:?}");
        }
        // From a tare image, so it even inherits the image's `tare` label.
        let container = docker_ok().then(|| {
            let image = tare_deploy::build_image(
                &TargetKind::named("tare-serve").unwrap().target(),
                std::path::Path::new(TARE),
                false,
            )
            .unwrap();
            let name = format!("user-container-{id}");
            let ok = Command::new("docker")
                .args(["create", "--name", &name, &image.tag, TARE, "--version"])
                .stdout(Stdio::null())
                .status()
                .unwrap()
                .success();
            assert!(ok, "docker create");
            name
        });
        UserThings {
            netns,
            nft_table,
            container,
        }
    }

    fn all_exist(&self) -> bool {
        let s = machine_state();
        s.contains(&format!("netns {}", self.netns))
            && s.iter()
                .any(|l| l == &format!("nft table inet {}", self.nft_table))
            && tare_testbed::machine::output("nft", &["list", "table", "inet", &self.nft_table])
                .contains("tcp dport 9 counter")
            && self
                .container
                .as_ref()
                .is_none_or(|c| s.contains(&format!("container {c}")))
    }
}

impl Drop for UserThings {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.netns])
            .status();
        let _ = Command::new("nft")
            .args(["delete", "table", "inet", &self.nft_table])
            .status();
        if let Some(c) = &self.container {
            let _ = Command::new("docker")
                .args(["rm", "-f", c])
                .stdout(Stdio::null())
                .status();
        }
    }
}

#[test]
fn cleanup_after_sigkill_leaves_the_machine_as_it_was() {
    let _lock = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let _cleanup = tare_testbed::machine::cleanup_lock();
    let scratch = ScratchDir::new("kill");
    let dir = scratch.0.clone();
    let mut placements = vec!["\"native\""];
    if tare_deploy::lab::available().is_ok() {
        placements.push("\"lab-nat\"");
    }
    if docker_ok() {
        placements.push("\"docker-publish\"");
    }
    let exp = format!(
        "name = \"kill\"\n[target]\nkind = \"nginx\"\n[factors]\nplacement = [{}]\n\
         [load]\nthreads = 1\nconnections = 4\nduration = \"20s\"\nwarmup = \"0s\"\n[trials]\ncount = 1\n",
        placements.join(", ")
    );
    std::fs::write(dir.join("kill.toml"), exp).unwrap();

    let user = UserThings::make();
    let before = machine_state();
    let child = Command::new(TARE)
        .arg("run")
        .arg(dir.join("kill.toml"))
        .arg("--out")
        .arg(dir.join("out"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    DEPLOYERS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(child.id());
    let mut child = Killer(child);
    // Wait until the run has made something (a cell is deployed and loaded).
    let start = Instant::now();
    let made = loop {
        let now = tare_things(&machine_state());
        let new: Vec<String> = now
            .iter()
            .filter(|l| !before.contains(l))
            .cloned()
            .collect();
        if new
            .iter()
            .any(|l| l.starts_with("process") || l.starts_with("container"))
        {
            break new;
        }
        if let Ok(Some(status)) = child.0.try_wait() {
            let err = crate::support::stderr_of(&mut child.0);
            panic!("tare run ended before it deployed anything ({status}): {err}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "tare run made nothing in 120 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: plain syscall on our own child.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGKILL) };
    let _ = child.0.wait();

    let leftovers: Vec<String> = tare_things(&machine_state())
        .into_iter()
        .filter(|l| !before.contains(l))
        .collect();
    assert!(
        !leftovers.is_empty(),
        "SIGKILL left nothing to clean (made: {made:?}); the test proves nothing"
    );

    eprintln!("left by SIGKILL: {leftovers:?}");
    let out = Command::new(TARE).arg("cleanup").output().unwrap();
    tare_testbed::assert_success(&out);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("removed"), "{text}");

    eprintln!("tare cleanup: {text}");
    let after = machine_state();
    let diff: Vec<String> = after
        .iter()
        .filter(|l| !before.contains(l))
        .cloned()
        .collect();
    let gone: Vec<String> = before
        .iter()
        .filter(|l| !after.contains(l))
        .cloned()
        .collect();
    assert!(
        diff.is_empty(),
        "left after cleanup: {diff:?}\n(cleanup said: {text})"
    );
    assert!(
        gone.is_empty(),
        "cleanup removed things tare did not make: {gone:?}"
    );
    assert!(
        user.all_exist(),
        "a user's container, netns or nft table did not survive"
    );
}

fn get_ok(addr: std::net::SocketAddr, ns: Option<&std::path::Path>, n: usize) -> usize {
    let ns = ns.map(|p| p.to_path_buf());
    std::thread::spawn(move || {
        if let Some(ns) = ns {
            tare_engine::netns::enter(&ns).unwrap();
        }
        let mut ok = 0;
        let start = Instant::now();
        while ok < n && start.elapsed() < Duration::from_secs(5) {
            let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            s.write_all(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                .unwrap();
            let mut r = String::new();
            let _ = s.read_to_string(&mut r);
            if r.starts_with("HTTP/1.1 200") && r.ends_with(&"x".repeat(100)) {
                ok += 1;
            }
        }
        ok
    })
    .join()
    .unwrap()
}

#[test]
fn tare_serve_in_every_supported_placement() {
    let _lock = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let mut placements = vec![PlacementKind::named("native").unwrap()];
    if tare_deploy::lab::available().is_ok() {
        placements.extend([
            PlacementKind::named("lab-veth").unwrap(),
            PlacementKind::named("lab-nat").unwrap(),
            PlacementKind::named("lab-client").unwrap(),
        ]);
    }
    if docker_ok() {
        placements.extend([
            PlacementKind::named("docker-host").unwrap(),
            PlacementKind::named("docker-bridge").unwrap(),
            PlacementKind::named("docker-publish").unwrap(),
        ]);
    }
    for p in placements {
        let before = tare_things(&machine_state());
        let mut target = TargetSpec::of(TargetKind::named("tare-serve").unwrap());
        target.target.binary = Some(TARE.into());
        target.target.body_size = 100;
        let spec = DeploySpec::new(
            format!(
                "c{}{}",
                std::process::id() % 10000,
                p.name().replace('-', "")
            ),
            target,
            p,
        );
        let d = deploy(&spec).unwrap_or_else(|e| panic!("{p}: {e}"));
        let tare_engine::Endpoint::Tcp(addr) = d.endpoint().clone() else {
            panic!("tcp")
        };
        assert_eq!(get_ok(addr, d.client_netns(), 50), 50, "{p}");
        let server = d.facts().server_pid.unwrap();
        assert!(
            d.facts()
                .process
                .server_version
                .as_deref()
                .unwrap_or("")
                .contains("tare"),
            "{:?}",
            d.facts()
        );
        d.stop().unwrap();
        assert!(
            !std::path::Path::new(&format!("/proc/{server}")).exists(),
            "{p}: server still runs"
        );
        let after = tare_things(&machine_state());
        // Only what names this deployment: other suites may run beside this
        // one on a developer's machine (the lab module's tests check links).
        let me = format!("-{}-", std::process::id());
        let left: Vec<&String> = after
            .iter()
            .filter(|l| !before.contains(l) && (l.contains(&spec.run_id) || l.contains(&me)))
            .collect();
        assert!(left.is_empty(), "{p} left {left:?}");
    }
}
