//! Rootful Podman placements: nginx in podman-host, podman-bridge and
//! podman-publish (tare serve, which needs the tare binary, is in
//! crates/cli/tests/it/podman.rs), loaded by tare's HTTP engine with an
//! exact request count, stopped, nothing left (containers, volumes,
//! networks); the same binary as the host's, from the image tare builds,
//! imported into Podman's store; a killed run's container removed by
//! `tare cleanup`. Without Podman (or root) the error names what is missing.

use crate::support;

use std::process::Command;

use tare_deploy::{deploy, DeploySpec, PlacementKind, Storage, TargetKind, TargetSpec, Transport};
use tare_engine::Endpoint;

const PLACEMENTS: [&str; 3] = ["podman-host", "podman-bridge", "podman-publish"];

fn placement(name: &str) -> PlacementKind {
    PlacementKind::named(name).unwrap()
}

/// True (after checking the message a user gets) when this machine cannot
/// run rootful Podman.
fn skip_without_podman() -> bool {
    let Some((reason, e)) = support::unavailable("podman-host", "nopod") else {
        return false;
    };
    assert!(e.contains("podman-host") && e.contains(&reason), "{e}");
    assert!(!e.contains('\n'), "{e}");
    eprintln!("rootful Podman not available here ({reason}): checked the error only");
    true
}

fn deploy_load_stop(target: &str, placement_name: &str, transport: Transport, storage: Storage) {
    // Unique per call (tests run in parallel and compare by run id).
    let short = placement_name.trim_start_matches("podman-");
    let run = support::run_id(&format!(
        "pm{}{}{}{}",
        &target[..2],
        &short[..3],
        &transport.to_string()[..1],
        &storage.to_string()[..1]
    ));
    let before = support::machine_state();
    let mut t = TargetSpec::of(TargetKind::named(target).unwrap());
    t.target.body_size = 2048;
    let mut spec = DeploySpec::new(&run, t, placement(placement_name));
    spec.transport = transport;
    spec.container.storage = storage;
    let d = deploy(&spec).unwrap_or_else(|e| panic!("{target} in {placement_name}: {e}"));
    match (placement_name, d.endpoint()) {
        (_, Endpoint::Unix(_)) => assert_eq!(transport, Transport::Unix),
        ("podman-bridge", Endpoint::Tcp(a)) => assert!(!a.ip().is_loopback(), "{a}"),
        (_, Endpoint::Tcp(a)) => assert!(a.ip().is_loopback(), "{a}"),
    }
    let r = support::assert_serves_exactly(&d, 1500, placement_name);
    assert_eq!(r.in_flight, 0, "{placement_name}");
    let f = d.facts().clone();
    assert_eq!(f.placement, placement_name);
    let image = f.image.clone().unwrap_or_default();
    assert!(image.starts_with("tare/"), "{f:?}");
    // The identical binary: the host's, by path and hash.
    let host =
        tare_deploy::target_binary(&TargetSpec::of(TargetKind::named(target).unwrap())).unwrap();
    assert_eq!(f.process.binary_path, host.display().to_string());
    assert_eq!(f.storage, storage.to_string());
    // A container's own cgroup, with tare's labels and the run id.
    let labels = Command::new("podman")
        .args(["ps", "--filter", &format!("label=tare.run={run}"), "-q"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&labels.stdout).trim().is_empty());
    d.stop().unwrap();
    support::assert_nothing_left(&before, &run, format!("{target} in {placement_name}"));
    let left = Command::new("podman")
        .args([
            "ps",
            "-a",
            "--filter",
            &format!("label=tare.run={run}"),
            "-q",
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&left.stdout).trim(), "");
}

#[test]
fn nginx_in_every_podman_placement() {
    if skip_without_podman() {
        return;
    }
    for p in PLACEMENTS {
        deploy_load_stop("nginx", p, Transport::Tcp, Storage::Image);
    }
}

#[test]
fn nginx_from_a_volume_and_a_host_path_in_podman() {
    if skip_without_podman() {
        return;
    }
    deploy_load_stop("nginx", "podman-host", Transport::Tcp, Storage::HostPath);
    deploy_load_stop("nginx", "podman-publish", Transport::Tcp, Storage::Volume);
}

#[test]
fn nginx_over_a_unix_socket_in_podman() {
    if skip_without_podman() {
        return;
    }
    deploy_load_stop("nginx", "podman-bridge", Transport::Unix, Storage::Image);
}

#[test]
fn limits_and_seccomp_are_measured_facts() {
    if skip_without_podman() {
        return;
    }
    let run = support::run_id("pmlim");
    let before = support::machine_state();
    let mut spec = DeploySpec::new(
        &run,
        TargetSpec::of(TargetKind::named("nginx").unwrap()),
        placement("podman-host"),
    );
    spec.container.seccomp_unconfined = true;
    spec.container.memory = Some(512 << 20);
    spec.container.cpus = Some(1.5);
    let d = deploy(&spec).unwrap();
    let f = d.facts().clone();
    assert_eq!(f.process.seccomp.as_deref(), Some("disabled"), "{f:?}");
    assert_eq!(f.process.memory_limit, Some(512 << 20), "{f:?}");
    assert_eq!(f.process.cpu_limit, Some(1.5), "{f:?}");
    d.stop().unwrap();
    support::assert_nothing_left(&before, &run, "");
}

/// A run killed with SIGKILL leaves its container; `tare cleanup` removes
/// it (its owner is gone) and leaves a live run's container alone.
#[test]
fn cleanup_removes_a_dead_runs_container_and_keeps_a_live_one() {
    if skip_without_podman() {
        return;
    }
    let _cleanup = tare_testbed::machine::cleanup_lock();
    let run = support::run_id("pmcln");
    let d = deploy(&DeploySpec::new(
        &run,
        TargetSpec::of(TargetKind::named("nginx").unwrap()),
        placement("podman-bridge"),
    ))
    .unwrap();
    let image = d.facts().image.clone().unwrap();
    let binary =
        tare_deploy::target_binary(&TargetSpec::of(TargetKind::named("nginx").unwrap())).unwrap();
    // What a SIGKILLed tare leaves: a container labelled with its run and
    // an owner that no longer runs (created, as a kill between create and
    // start leaves it; a started one is removed the same way, with force).
    let dead = format!("tare-{run}-dead");
    let _guard = RemovedOnDrop(dead.clone());
    let out = Command::new("podman")
        .args([
            "create",
            "--label",
            "tare=1",
            "--label",
            &format!("tare.run={run}"),
            "--label",
            "tare.owner=999999999:1",
            "--name",
            &dead,
            &image,
        ])
        .arg(&binary)
        .arg("-v")
        .output()
        .unwrap();
    tare_testbed::assert_success(&out);
    let report = tare_deploy::cleanup().unwrap();
    assert!(
        report.removed.iter().any(|r| r.contains(&dead)),
        "{report:?}"
    );
    assert!(report.live.iter().any(|r| r.contains(&run)), "{report:?}");
    let exists = Command::new("podman")
        .args(["container", "exists", &dead])
        .status()
        .unwrap();
    assert!(!exists.success(), "{dead} survived cleanup");
    // The live run still serves.
    assert_eq!(support::load_exactly(&d, 200).requests, 200);
    d.stop().unwrap();
}

/// Removes a container the test made itself, failed test or not.
struct RemovedOnDrop(String);

impl Drop for RemovedOnDrop {
    fn drop(&mut self) {
        let _ = Command::new("podman")
            .args(["rm", "--force", "--ignore", &self.0])
            .output();
    }
}
