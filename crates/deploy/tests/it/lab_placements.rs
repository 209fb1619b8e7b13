//! lab-* placements: the server in a namespace tare builds (no Docker),
//! loaded from the host or, for lab-client, from the client namespace.

use crate::{guests, support};

use std::time::Duration;

use tare_deploy::{deploy, DeploySpec, PlacementKind, TargetKind, TargetSpec};

fn lab_placements() -> [PlacementKind; 4] {
    ["lab-veth", "lab-bridge", "lab-nat", "lab-client"].map(|p| PlacementKind::named(p).unwrap())
}

#[test]
fn nginx_in_every_lab_placement() {
    if let Err(why) = tare_deploy::lab::available() {
        // Not root or no ip/nft/tc: the error must say which placement and why.
        let spec = support::spec(&support::run_id("labna"), "nginx", "lab-veth");
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
    let d = deploy(&support::spec(&run, "postgres", "lab-bridge")).unwrap();
    let (answer, err) = guests::psql(&d, "select 1");
    assert_eq!(answer, "1", "{err}");
}

#[test]
fn netem_without_kernel_support_is_a_clear_error() {
    if tare_deploy::lab::available().is_err() {
        return;
    }
    let mut spec = support::spec(&support::run_id("lnetem"), "nginx", "lab-veth");
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
