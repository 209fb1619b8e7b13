//! lab-* placements: the server in a namespace tare builds (no Docker),
//! loaded from the host or, for lab-client, from the client namespace.

use crate::support;

use std::time::Duration;

use tare_deploy::{deploy, DeploySpec, PlacementKind, TargetKind, TargetSpec};

fn lab_placements() -> [PlacementKind; 4] {
    ["lab-veth", "lab-bridge", "lab-nat", "lab-client"].map(|p| PlacementKind::named(p).unwrap())
}

#[test]
fn nginx_in_every_lab_placement() {
    if let Err(why) = tare_deploy::lab::available() {
        // Not root or no ip/nft/tc: the error must say which placement and why.
        let spec = DeploySpec::new(
            support::run_id("labna"),
            TargetSpec::of(TargetKind::named("nginx").unwrap()),
            PlacementKind::named("lab-veth").unwrap(),
        );
        let e = deploy(&spec).unwrap_err().to_string();
        assert!(e.contains("lab-veth"), "{e}");
        eprintln!("lab placements unavailable here ({why}): checked the error only");
        return;
    }
    for placement in lab_placements() {
        let run = support::run_id(&format!("l{}", placement.name().trim_start_matches("lab-")));
        let before = support::machine_state();
        let d = deploy(&DeploySpec::new(
            &run,
            TargetSpec::of(TargetKind::named("nginx").unwrap()),
            placement,
        ))
        .unwrap();
        assert_eq!(
            d.client_netns().is_some(),
            placement == PlacementKind::named("lab-client").unwrap()
        );
        assert_eq!(
            support::http_load(&d, "/index.html", 612, 500, Duration::from_secs(3)),
            500,
            "{placement}"
        );
        assert_eq!(d.facts().placement, placement.to_string());
        d.stop().unwrap();
        let left = support::left_behind(&before, &support::machine_state(), &run);
        assert_eq!(left, Vec::<String>::new(), "{placement}");
    }
}

#[test]
fn postgres_in_a_lab_namespace() {
    if tare_deploy::lab::available().is_err() {
        return;
    }
    let run = support::run_id("lpg");
    let d = deploy(&DeploySpec::new(
        &run,
        TargetSpec::of(TargetKind::named("postgres").unwrap()),
        PlacementKind::named("lab-bridge").unwrap(),
    ))
    .unwrap();
    let tare_engine::Endpoint::Tcp(a) = d.endpoint().clone() else {
        panic!("tcp expected")
    };
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
            "select 1",
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "1",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn netem_without_kernel_support_is_a_clear_error() {
    if tare_deploy::lab::available().is_err() {
        return;
    }
    let mut spec = DeploySpec::new(
        support::run_id("lnetem"),
        TargetSpec::of(TargetKind::named("nginx").unwrap()),
        PlacementKind::named("lab-veth").unwrap(),
    );
    spec.netem = Some(Duration::from_millis(1));
    match tare_deploy::lab::netem_available() {
        Err(_) => {
            let e = deploy(&spec).unwrap_err().to_string();
            assert!(
                e.contains("lab-veth") && e.to_lowercase().contains("netem"),
                "{e}"
            );
        }
        Ok(()) => {
            let d = deploy(&spec).unwrap();
            assert_eq!(
                support::http_load(&d, "/index.html", 612, 20, Duration::from_secs(3)),
                20
            );
        }
    }
}
