//! Docker absent or unreachable: docker placements fail with a message that
//! names them and says native and lab still work; native still works.
//! (It runs in a child process of this test binary, with DOCKER_HOST at a
//! socket that does not exist: the variable is process-wide, and the other
//! tests in this binary use Docker.)

use crate::support;

use std::time::Duration;

use tare_deploy::{deploy, DeploySpec, PlacementKind, TargetKind, TargetSpec};

const NO_SOCKET: &str = "unix:///nonexistent/tare-test/docker.sock";

#[test]
fn unreachable_docker_is_named_and_native_still_works() {
    let name = "no_docker::unreachable_docker_is_named_and_native_still_works";
    if !tare_testbed::alone::in_child(name, &[("DOCKER_HOST", NO_SOCKET)]) {
        return;
    }
    assert_eq!(std::env::var("DOCKER_HOST").as_deref(), Ok(NO_SOCKET));
    for p in [
        PlacementKind::named("docker-host").unwrap(),
        PlacementKind::named("docker-bridge").unwrap(),
        PlacementKind::named("docker-publish").unwrap(),
    ] {
        let spec = DeploySpec::new(
            support::run_id("nd"),
            TargetSpec::of(TargetKind::named("nginx").unwrap()),
            p,
        );
        let e = deploy(&spec).unwrap_err().to_string();
        for name in ["docker-host", "docker-bridge", "docker-publish", "native"] {
            assert!(e.contains(name), "{e}");
        }
    }
    let report = tare_deploy::doctor();
    let docker_rows: Vec<_> = report
        .placements
        .iter()
        .filter(|p| p.placement.starts_with("docker"))
        .collect();
    assert_eq!(docker_rows.len(), 3);
    assert!(docker_rows
        .iter()
        .all(|p| !p.available && p.detail.contains("not reachable")));
    assert!(report
        .placements
        .iter()
        .any(|p| p.placement == "native" && p.available));
    // cleanup notes the engine is unreachable instead of failing.
    let c = {
        let _cleanup = tare_testbed::machine::cleanup_lock();
        tare_deploy::cleanup().unwrap()
    };
    assert!(c.notes.iter().any(|n| n.contains("not reachable")), "{c:?}");

    let d = deploy(&support::spec(&support::run_id("ndnat"), "nginx", "native")).unwrap();
    assert_eq!(
        support::http_load(&d, "/index.html", 612, 100, Duration::from_secs(2)),
        100
    );
}
