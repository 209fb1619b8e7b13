//! vm-* placements: the server in a QEMU guest booted from the host's
//! kernel and an initramfs tare builds, loaded with exact counts, and
//! nothing left behind (no QEMU, no tap, no bridge, no nft table).
//!
//! Under TCG (this project's machine: its /dev/kvm is a nested PVM that no
//! packaged kernel boots on) every boot costs seconds, so the tests boot
//! few guests, one at a time. They skip, saying why, only where QEMU or a
//! kernel is missing (scripts/setup.sh installs both).

use crate::support;

use std::sync::Mutex;
use std::time::Duration;

use tare_deploy::{deploy, DeploySpec, PlacementKind, TargetKind, TargetSpec};

/// One guest at a time: two TCG guests on two cores boot slowly, and the
/// leftover checks compare the machine before and after.
static ONE_GUEST: Mutex<()> = Mutex::new(());

/// Whether guests can run here; prints why not.
fn vm_ready(test: &str) -> bool {
    match PlacementKind::named("vm-bridge").unwrap().available() {
        Ok(how) => {
            eprintln!("{test}: guests run here: {how}");
            true
        }
        Err(why) => {
            eprintln!("{test}: skipped, no guests here: {why}");
            false
        }
    }
}

/// QEMU processes whose command line names `needle`.
fn qemu_processes(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.starts_with("/usr/bin/qemu-system") && cmd.contains(needle) {
            found.push(cmd);
        }
    }
    found
}

/// What appeared since `before` and is this run's: lines carrying `run`
/// (tables, directories), a new tap (`tr<id>tp`: only guests make taps) and
/// whatever carries its lab id (its bridge), and QEMU processes of `run`.
/// Other suites may build lab networks meanwhile.
fn leftovers(before: &[String], run: &str) -> Vec<String> {
    let new: Vec<String> = support::machine_state()
        .into_iter()
        .filter(|l| !before.contains(l))
        .collect();
    let labs: Vec<String> = new
        .iter()
        .filter_map(|l| {
            l.strip_prefix("link tr")?
                .strip_suffix("tp")
                .map(String::from)
        })
        .collect();
    let mut left: Vec<String> = new
        .into_iter()
        .filter(|l| l.contains(run) || labs.iter().any(|id| l.contains(id.as_str())))
        .collect();
    left.extend(qemu_processes(&format!("-name tare-{run}")));
    left
}

#[test]
fn nginx_in_vm_bridge_and_vm_publish() {
    if !vm_ready("nginx_in_vm_bridge_and_vm_publish") {
        return;
    }
    let _one = ONE_GUEST.lock().unwrap_or_else(|e| e.into_inner());
    for name in ["vm-bridge", "vm-publish"] {
        let placement = PlacementKind::named(name).unwrap();
        let run = support::run_id(&name.replace('-', ""));
        let before = support::machine_state();
        let d = deploy(&DeploySpec::new(
            &run,
            TargetSpec::of(TargetKind::named("nginx").unwrap()),
            placement,
        ))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let guest = d.facts().guest.clone().expect("a guest's facts");
        eprintln!(
            "{name}: accel {} ({}), boot to server {:.2} s, endpoint {}",
            guest.accel,
            guest.accel_reason,
            guest.boot_s,
            d.endpoint()
        );
        if guest.accel == "tcg" {
            assert_eq!(guest.note.as_deref(), Some(tare_deploy::vm::TCG_LABEL));
        }
        assert_eq!(
            support::http_load(&d, "/index.html", 612, 300, Duration::from_secs(20)),
            300,
            "{name}"
        );
        let f = d.facts();
        assert_eq!(f.placement, name);
        // The same binary as the host's, and the guest's own view of itself.
        let host_nginx =
            tare_deploy::target_binary(&TargetSpec::of(TargetKind::named("nginx").unwrap()))
                .unwrap();
        assert_eq!(f.process.binary_path, host_nginx.display().to_string());
        assert_eq!(f.process.cpus_visible, Some(guest.cpus as usize));
        assert!(f.content_fs.is_some(), "{f:?}");
        d.stop().unwrap();
        let left = leftovers(&before, &run);
        assert_eq!(left, Vec::<String>::new(), "{name}");
    }
}

#[test]
fn postgres_in_vm_publish_answers_psql() {
    if !vm_ready("postgres_in_vm_publish_answers_psql") {
        return;
    }
    let _one = ONE_GUEST.lock().unwrap_or_else(|e| e.into_inner());
    let run = support::run_id("vmpg");
    let before = support::machine_state();
    let d = deploy(&DeploySpec::new(
        &run,
        TargetSpec::of(TargetKind::named("postgres").unwrap()),
        PlacementKind::named("vm-publish").unwrap(),
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let tare_engine::Endpoint::Tcp(a) = d.endpoint().clone() else {
        panic!("tcp expected")
    };
    // 20 queries in one session: every one answered.
    let out = std::process::Command::new("psql")
        .args([
            "-h",
            &a.ip().to_string(),
            "-p",
            &a.port().to_string(),
            "-U",
            "postgres",
            "-d",
            "postgres",
            "-Atc",
            "select count(*) from generate_series(1, 20)",
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "20",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    d.stop().unwrap();
    assert_eq!(leftovers(&before, &run), Vec::<String>::new());
}

/// A guest whose server exits at once: the deploy fails naming the last
/// console lines, within the boot limit, and leaves nothing.
#[test]
fn a_guest_whose_server_exits_fails_with_its_console_lines() {
    if !vm_ready("a_guest_whose_server_exits_fails_with_its_console_lines") {
        return;
    }
    let _one = ONE_GUEST.lock().unwrap_or_else(|e| e.into_inner());
    let run = support::run_id("vmbad");
    let before = support::machine_state();
    let mut target = TargetSpec::of(TargetKind::named("nginx").unwrap());
    // A "server" that exits with status 1 whatever it is asked.
    target.target.binary = Some("/bin/false".into());
    let started = std::time::Instant::now();
    let e = deploy(&DeploySpec::new(
        &run,
        target,
        PlacementKind::named("vm-bridge").unwrap(),
    ))
    .unwrap_err()
    .to_string();
    eprintln!("failed after {:.1} s: {e}", started.elapsed().as_secs_f64());
    // Either the boot wait or the health check saw it; both quote the console.
    assert!(
        e.contains("last console lines") || e.contains("server log"),
        "{e}"
    );
    assert!(e.contains("tare-vm: server exited with status 1"), "{e}");
    assert_eq!(leftovers(&before, &run), Vec::<String>::new());
}

#[test]
fn vm_options_apply_to_vm_placements_only() {
    let mut spec = DeploySpec::new(
        support::run_id("vmopt"),
        TargetSpec::of(TargetKind::named("nginx").unwrap()),
        PlacementKind::named("native").unwrap(),
    );
    spec.vm.cpus = Some(1);
    let e = deploy(&spec).unwrap_err().to_string();
    assert!(e.contains("vm_cpus") && e.contains("vm-bridge"), "{e}");
}
