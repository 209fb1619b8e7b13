//! vm-* placements with the real engines and the real `tare` binary:
//! `tare serve` (this very binary) in vm-bridge, vm-publish and vm-user
//! loaded by `tare http` with an exact request count, postgres in
//! vm-bridge loaded by `tare pg` with an exact transaction count, and a
//! `tare run` SIGKILLed while its guest runs, cleaned up by `tare cleanup`;
//! the tool engine's fio on a guest's virtio-blk disk and on its tmpfs.
//!
//! Tests skip, saying why, only where QEMU or a kernel is missing
//! (scripts/setup.sh installs both); each says whether it ran under KVM or
//! TCG. Guests boot one at a time.

use crate::{guests, support};

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use tare_deploy::{deploy, DeploySpec, PlacementKind, TargetKind, TargetSpec};

const TARE: &str = env!("CARGO_BIN_EXE_tare");

fn tare(args: &[&str]) -> Output {
    Command::new(TARE).args(args).output().unwrap()
}

/// Lines naming what a guest could leave: QEMU processes, tare links
/// (`tr…`), nftables tables and namespaces, tare directories.
fn guest_things() -> Vec<String> {
    let mut v: Vec<String> = tare_testbed::machine::resources()
        .into_iter()
        .filter(|l| l.starts_with("link tr") || l.contains("tare"))
        .collect();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains("qemu-system") && cmd.contains("-name tare-") {
            v.push(format!("qemu {cmd}"));
        }
    }
    for e in std::fs::read_dir(std::env::temp_dir()).unwrap().flatten() {
        let n = e.file_name().to_string_lossy().to_string();
        if n.starts_with("tare-") && e.path().join(".tare-owner").exists() {
            v.push(format!("dir {n}"));
        }
    }
    v.sort();
    v
}

/// What appeared since `before` and is this test's: lines naming `needle`
/// (a run id, a deploying pid) or the lab id of a new tap (the tap, its
/// bridge and table carry it). Other suites may build lab networks meanwhile.
fn new_since(before: &[String], needle: &str) -> Vec<String> {
    let new: Vec<String> = guest_things()
        .into_iter()
        .filter(|l| !before.contains(l))
        .collect();
    guests::theirs(new, needle)
}

/// Asserts that nothing of `needle`'s appeared since `before`
/// ([`new_since`]).
fn assert_nothing_new(before: &[String], needle: &str) {
    let left = new_since(before, needle);
    assert!(left.is_empty(), "left {left:?}");
}

#[test]
fn tare_serve_in_every_vm_placement_answers_tare_http_exactly() {
    let Some(_one) = guests::guest_turn("tare_serve_in_every_vm_placement") else {
        return;
    };
    for name in ["vm-bridge", "vm-publish", "vm-user"] {
        let before = guest_things();
        let mut target = TargetSpec::of(TargetKind::named("tare-serve").unwrap());
        target.target.binary = Some(TARE.into());
        target.target.body_size = 100;
        let spec = DeploySpec::new(
            format!("v{}{}", std::process::id() % 10000, name.replace('-', "")),
            target,
            PlacementKind::named(name).unwrap(),
        );
        let d = deploy(&spec).unwrap_or_else(|e| panic!("{name}: {e}"));
        let guest = d.facts().guest.clone().unwrap();
        eprintln!(
            "{name}: {} guest, server running {:.2} s after QEMU started, at {}",
            guest.accel,
            guest.boot_s,
            d.endpoint()
        );
        let json = std::env::temp_dir().join(format!("tare-vm-http-{}.json", std::process::id()));
        let out = tare(&[
            "http",
            "-t1",
            "-c2",
            "-n",
            "200",
            "--allow-remote",
            "--json",
            json.to_str().unwrap(),
            &d.url(),
        ]);
        let text = std::fs::read_to_string(&json).unwrap_or_default();
        let _ = std::fs::remove_file(&json);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["requests"], 200, "{name}: {v}");
        for kind in ["connect", "read", "write", "timeout", "status"] {
            assert_eq!(v["errors"][kind], 0, "{name}: {kind} errors: {v}");
        }
        assert!(d
            .facts()
            .process
            .server_version
            .as_deref()
            .unwrap_or("")
            .contains("tare"));
        d.stop().unwrap();
        let left = new_since(&before, &spec.run_id);
        assert!(left.is_empty(), "{name} left {left:?}");
    }
}

#[test]
fn postgres_in_vm_bridge_answers_tare_pg_exactly() {
    let Some(_one) = guests::guest_turn("postgres_in_vm_bridge") else {
        return;
    };
    let before = guest_things();
    let spec = DeploySpec::new(
        format!("v{}pg", std::process::id() % 10000),
        TargetSpec::of(TargetKind::named("postgres").unwrap()),
        PlacementKind::named("vm-bridge").unwrap(),
    );
    let d = deploy(&spec).unwrap_or_else(|e| panic!("{e}"));
    let tare_engine::Endpoint::Tcp(a) = d.endpoint().clone() else {
        panic!("tcp expected")
    };
    // seed 001's transaction: `select 1`.
    let sql = std::env::temp_dir().join(format!("tare-vm-select1-{}.sql", std::process::id()));
    std::fs::write(&sql, "select 1;\n").unwrap();
    let out = tare(&[
        "pg",
        "-h",
        &a.ip().to_string(),
        "-p",
        &a.port().to_string(),
        "-U",
        "postgres",
        "-d",
        "postgres",
        "-c",
        "2",
        "-j",
        "1",
        "-t",
        "50",
        "-M",
        "prepared",
        "-f",
        sql.to_str().unwrap(),
        "--allow-remote",
        "--json",
        "-",
    ]);
    let _ = std::fs::remove_file(&sql);
    tare_testbed::assert_success(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json = &stdout[stdout.find('{').unwrap_or(0)..];
    let v: serde_json::Value =
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    // 2 clients x 50 transactions, every one completed.
    assert_eq!(v["requests"], 100, "{v}");
    d.stop().unwrap();
    assert_nothing_new(&before, &spec.run_id);
}

/// A `tare run` killed with SIGKILL while its guest serves leaves QEMU, the
/// tap, the bridge and the directory; `tare cleanup` removes them all.
#[test]
fn a_sigkilled_run_leaves_a_guest_that_tare_cleanup_removes() {
    let Some(_one) = guests::guest_turn("a_sigkilled_run_leaves_a_guest") else {
        return;
    };
    let _cleanup = tare_testbed::machine::cleanup_lock();
    let before = guest_things();
    let (dir, mut child) = start_run(
        "vmkill",
        "name = \"vmkill\"\n[target]\nkind = \"nginx\"\n[factors]\nplacement = [\"vm-publish\"]\n\
         [load]\nthreads = 1\nconnections = 2\nduration = \"60s\"\nwarmup = \"0s\"\n[trials]\ncount = 1\n",
    );
    // Wait until the guest runs and its network exists.
    let me = format!("-{}-", child.id());
    let start = Instant::now();
    loop {
        let new = new_since(&before, &me);
        if new.iter().any(|l| l.starts_with("qemu")) && new.iter().any(|l| l.starts_with("nft")) {
            break;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("tare run ended before its guest started ({status})");
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no guest after 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: plain syscall on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    let left = new_since(&before, &me);
    eprintln!("left by SIGKILL: {left:?}");
    assert!(left.iter().any(|l| l.starts_with("qemu")), "{left:?}");
    let out = tare(&["cleanup"]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    eprintln!("tare cleanup: {text}");
    // QEMU may take a moment to die after SIGTERM.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut after = new_since(&before, &me);
    while !after.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        after = new_since(&before, &me);
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(after.is_empty(), "left after cleanup: {after:?}\n({text})");
}

/// nginx-proxy in vm-bridge: nginx and its `tare serve` backend (this
/// binary) in one guest, the backend on the guest's loopback, loaded by
/// `tare http` with an exact count of the backend's bodies; the vCPU
/// threads pinned one to a CPU (`vm_pin = "vcpu"`), which the facts say;
/// and a Unix socket cell refused at once, saying why.
#[test]
fn nginx_proxy_runs_in_one_guest_with_pinned_vcpus() {
    let Some(_one) = guests::guest_turn("nginx_proxy_runs_in_one_guest") else {
        return;
    };
    let before = guest_things();
    const BODY: usize = 777;
    let mut target = TargetSpec::of(TargetKind::named("nginx-proxy").unwrap());
    target.target.body_size = BODY;
    target
        .target
        .companion
        .as_mut()
        .expect("nginx-proxy has a backend")
        .binary = Some(TARE.into());
    let mut spec = DeploySpec::new(
        format!("v{}px", std::process::id() % 10000),
        target.clone(),
        PlacementKind::named("vm-bridge").unwrap(),
    );
    spec.vm.cpus = Some(2);
    spec.vm.pin = tare_deploy::VmPin::Vcpu;
    let d = deploy(&spec).unwrap_or_else(|e| panic!("{e}"));
    let f = d.facts().clone();
    let g = f.guest.clone().unwrap();
    eprintln!(
        "nginx-proxy: {} guest listening {:.2} s after QEMU started, vCPUs on {:?}",
        g.accel, g.boot_s, g.vcpu_cpus
    );
    assert!(g.companion, "{g:?}");
    assert_eq!(g.pin, "vcpu");
    let allowed = tare_engine::cpu::CpuList::allowed().unwrap();
    let want: Vec<String> = (0..2)
        .map(|i| allowed.cpus()[i % allowed.cpus().len()].to_string())
        .collect();
    assert_eq!(g.vcpu_cpus, want);
    // The backend is described from inside the guest and has no host
    // process: its CPU is QEMU's, counted as the server's.
    let b = f.backend.clone().expect("backend facts");
    assert_eq!(b.pid, None, "{b:?}");
    assert_eq!(b.process.cpus_visible, Some(2), "{b:?}");
    assert!(b.endpoint.starts_with("127.0.0.1:"), "{b:?}");
    if !std::path::Path::new("/dev/vhost-net").exists() {
        assert!(d.watch().companions.is_empty(), "{:?}", d.watch());
    }
    let out = tare(&[
        "http",
        "-t1",
        "-c2",
        "-n",
        "200",
        "--allow-remote",
        "--json",
        "-",
        &d.url(),
    ]);
    tare_testbed::assert_success(&out);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["requests"], 200, "{r}");
    assert_eq!(r["status_codes"]["200"], 200, "{r}");
    assert!(
        r["bytes_read"].as_u64().unwrap() >= 200 * BODY as u64,
        "{r}"
    );
    d.stop().unwrap();
    assert_nothing_new(&before, &spec.run_id);

    let mut unix = DeploySpec::new(
        format!("v{}pu", std::process::id() % 10000),
        target,
        PlacementKind::named("vm-bridge").unwrap(),
    );
    unix.transport = tare_deploy::Transport::Unix;
    let e = deploy(&unix).map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("cannot cross"), "{e}");
    assert_nothing_new(&before, &unix.run_id);
}

/// A guest that never becomes ready inside a `tare run` (512m is the
/// default; 96m is too little for the kernel to unpack tare serve's
/// initramfs, so it panics, or under TCG is still unpacking when the wait
/// ends): its trial ends with an error quoting the kernel's last console
/// lines, and the native cell beside it keeps its result.
#[test]
fn a_guest_that_never_gets_ready_fails_its_cell_and_keeps_the_others() {
    let Some(_one) = guests::guest_turn("a_guest_that_never_gets_ready") else {
        return;
    };
    let before = guest_things();
    let (dir, mut child) = start_run(
        "vmbad",
        "name = \"vmbad\"\n[target]\nkind = \"tare-serve\"\n\
         [[cells]]\nplacement = \"native\"\n\
         [[cells]]\nplacement = \"vm-bridge\"\nvm_memory = \"96m\"\n\
         [load]\nthreads = 1\nconnections = 2\nduration = \"300ms\"\nwarmup = \"0s\"\n\
         [trials]\ncount = 1\ncooldown = \"0s\"\n",
    );
    let me = format!("-{}-", child.id());
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(240) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("tare run did not end within 240 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = child.wait().unwrap();
    let text = std::fs::read_to_string(dir.join("output.txt")).unwrap_or_default();
    assert!(status.success(), "{text}");
    let mut records: Vec<serde_json::Value> = Vec::new();
    for e in walk(&dir.join("out")) {
        if e.file_name().is_some_and(|n| n == "trials.jsonl") {
            for l in std::fs::read_to_string(&e).unwrap().lines() {
                records.push(serde_json::from_str(l).unwrap());
            }
        }
    }
    let native = records
        .iter()
        .find(|r| r["factors"]["placement"] == "native")
        .unwrap_or_else(|| panic!("no native trial: {records:?}\n{text}"));
    assert!(native["error"].is_null(), "{native}");
    assert!(
        native["result"]["requests"].as_u64().unwrap_or(0) > 0,
        "{native}"
    );
    let vm = records
        .iter()
        .find(|r| r["factors"]["placement"] == "vm-bridge")
        .unwrap_or_else(|| panic!("no vm trial: {records:?}\n{text}"));
    let e = vm["error"].as_str().unwrap_or_else(|| panic!("{vm}"));
    eprintln!("the vm cell's error: {e}");
    assert!(e.contains("did not start its server"), "{e}");
    // The kernel's last words, whatever they are: under TCG on a loaded
    // machine the guest may still be unpacking its initramfs when the
    // wait ends, before it panics (a CI run's last line was a PCI message).
    let words = e.split("last console lines:").nth(1).unwrap_or_default();
    assert!(words.trim().len() > 10, "{e}");
    let _ = std::fs::remove_dir_all(&dir);
    assert_nothing_new(&before, &me);
}

/// `tare run` of an experiment `text`, from a fresh scratch directory
/// (`exp.toml`, the run in `out`, its output in `output.txt`).
fn start_run(tag: &str, text: &str) -> (std::path::PathBuf, std::process::Child) {
    let dir = std::env::temp_dir().join(format!("tare-test-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("exp.toml"), text).unwrap();
    let output = std::fs::File::create(dir.join("output.txt")).unwrap();
    let child = Command::new(TARE)
        .arg("run")
        .arg(dir.join("exp.toml"))
        .arg("--out")
        .arg(dir.join("out"))
        .stdout(output.try_clone().unwrap())
        .stderr(output)
        .spawn()
        .unwrap();
    (dir, child)
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A `tare run` child that is stopped however the test ends: SIGTERM (tare
/// tears its guests, taps and disk files down), then SIGKILL and
/// `tare cleanup` if it does not end within a minute; its scratch
/// directory is removed.
struct RunGuard {
    dir: std::path::PathBuf,
    child: std::process::Child,
}

impl RunGuard {
    /// Waits up to `limit` for the run to end; its exit status.
    fn wait(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        None
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // SAFETY: plain syscall on our own child.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
            if self.wait(Duration::from_secs(60)).is_none() {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let _cleanup = tare_testbed::machine::cleanup_lock();
                let _ = tare(&["cleanup"]);
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The tool engine in a guest with its data on the guest's virtio-blk disk
/// (`storage = "volume"`) and on a tmpfs in the guest: fio's real JSON
/// parsed into records, O_DIRECT on the disk's ext4, the facts naming the
/// disk (virtio-blk, cache=none) and the guest's filesystems; nothing left
/// (QEMU, tap, bridge, the disk file in the deployment directory).
#[test]
fn fio_in_a_guest_runs_direct_on_its_virtio_disk() {
    let Some(_one) = guests::guest_turn("fio_in_a_guest_runs_direct_on_its_virtio_disk") else {
        return;
    };
    let before = guest_things();
    let (dir, child) = start_run(
        "vmdisk",
        "name = \"vmdisk\"\n[target]\nkind = \"tool\"\n\
         [[cells]]\nconfig = \"fio-randread\"\nplacement = \"vm-bridge\"\nstorage = \"volume\"\n\
         [[cells]]\nconfig = \"fio-randread\"\nplacement = \"vm-bridge\"\nstorage = \"tmpfs\"\n\
         [load]\nduration = \"1s\"\n[load.tool]\nsize = \"8m\"\nlimit = \"2m\"\n\
         [trials]\ncount = 1\ncooldown = \"0s\"\n",
    );
    let me = format!("-{}-", child.id());
    let mut run = RunGuard { dir, child };
    let status = run.wait(Duration::from_secs(600));
    let text = std::fs::read_to_string(run.dir.join("output.txt")).unwrap_or_default();
    assert!(status.is_some_and(|s| s.success()), "{status:?}: {text}");
    let out = run.dir.join("out");
    let trials = std::fs::read_to_string(out.join("trials.jsonl")).unwrap();
    let facts: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("facts.json")).unwrap()).unwrap();
    let mut seen = 0;
    for line in trials.lines() {
        let t: serde_json::Value = serde_json::from_str(line).unwrap();
        let cell = t["cell"].as_str().unwrap();
        let r = &t["result"];
        assert!(r.is_object(), "{cell}: {}", t["error"]);
        support::validate(r);
        assert_eq!(r["primary"], "read_iops", "{cell}");
        let iops = r["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "read_iops")
            .and_then(|m| m["value"].as_f64());
        assert!(iops.is_some_and(|v| v > 0.0), "{cell}: {r}");
        assert!(r["tool"]["version"].as_str().unwrap().starts_with("fio-"));
        let f = &facts[cell];
        let guest = &f["guest"];
        // Acceleration detected, never assumed: TCG says what it is.
        match guest["accel"].as_str() {
            Some("kvm") => {}
            Some("tcg") => assert_eq!(guest["note"], tare_deploy::vm::TCG_LABEL),
            other => panic!("{cell}: accel {other:?}"),
        }
        eprintln!(
            "{cell}: {} guest, fio on {} (direct {}), facts: content_fs {}, content_disk {}",
            guest["accel"],
            r["tool"]["data_fs"],
            r["tool"]["direct"],
            f["content_fs"],
            guest["disk"]
        );
        if cell.contains("storage=volume") {
            assert_eq!(r["tool"]["data_fs"], "ext4", "{cell}");
            assert_eq!(r["tool"]["direct"], true, "{cell}: {r}");
            assert_eq!(f["storage"], "volume");
            assert_eq!(f["content_fs"], "ext4");
            let disk = &guest["disk"];
            assert_eq!(disk["interface"], "virtio-blk", "{f}");
            assert_eq!(disk["cache"], "none", "{f}");
            assert_eq!(disk["format"], "raw", "{f}");
            assert_eq!(disk["fs"], "ext4", "{f}");
            assert!(!disk["host_fs"].as_str().unwrap_or("").is_empty(), "{f}");
        } else {
            assert_eq!(r["tool"]["data_fs"], "tmpfs", "{cell}");
            assert_eq!(f["storage"], "tmpfs");
            assert_eq!(f["content_fs"], "tmpfs");
            assert!(guest.get("disk").is_none(), "{f}");
        }
        seen += 1;
    }
    assert_eq!(seen, 2, "{trials}");
    assert!(text.contains("ran on ext4, direct I/O"), "{text}");
    // Nothing of the run left: QEMU, taps, bridges, deployment directories
    // (the disk files were in them).
    assert_nothing_new(&before, &me);
    assert!(
        !walk(&out).iter().any(|p| p.ends_with("data.raw")),
        "a disk file in the run directory"
    );
}
