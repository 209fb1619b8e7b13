//! vm-* placements: the server in a QEMU guest booted from the host's
//! kernel and an initramfs tare builds, loaded with exact counts, and
//! nothing left behind (no QEMU, no tap, no bridge, no nft table).
//!
//! Under TCG (this project's machine: its /dev/kvm is a nested PVM that no
//! packaged kernel boots on) every boot costs seconds, so the tests boot
//! few guests, one at a time. They skip, saying why, only where QEMU or a
//! kernel is missing (scripts/setup.sh installs both).

use crate::{guests, support};

use std::time::Duration;

use tare_deploy::{deploy, DeploySpec, PlacementKind, TargetKind, TargetSpec};

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
    let mut left = guests::theirs(new, run);
    left.extend(qemu_processes(&format!("-name tare-{run}")));
    left
}

#[test]
fn nginx_in_vm_bridge_and_vm_publish() {
    let Some(_one) = guests::guest_turn("nginx_in_vm_bridge_and_vm_publish") else {
        return;
    };
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
    let Some(_one) = guests::guest_turn("postgres_in_vm_publish_answers_psql") else {
        return;
    };
    let run = support::run_id("vmpg");
    let before = support::machine_state();
    let d =
        deploy(&support::spec(&run, "postgres", "vm-publish")).unwrap_or_else(|e| panic!("{e}"));
    // 20 queries in one session: every one answered.
    let (answer, err) = guests::psql(&d, "select count(*) from generate_series(1, 20)");
    assert_eq!(answer, "20", "{err}");
    d.stop().unwrap();
    assert_eq!(leftovers(&before, &run), Vec::<String>::new());
}

/// A guest whose server exits at once: the deploy fails naming the last
/// console lines, within the boot limit, and leaves nothing.
#[test]
fn a_guest_whose_server_exits_fails_with_its_console_lines() {
    let Some(_one) = guests::guest_turn("a_guest_whose_server_exits_fails_with_its_console_lines")
    else {
        return;
    };
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
    let mut spec = support::spec(&support::run_id("vmopt"), "nginx", "native");
    spec.vm.cpus = Some(1);
    let e = deploy(&spec).unwrap_err().to_string();
    assert!(e.contains("vm_cpus") && e.contains("vm-bridge"), "{e}");
}
