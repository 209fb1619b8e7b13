//! Real placements through tare's own deployer: nginx published with `-p`
//! (reached on loopback, so through docker-proxy) and on the host network.
//! The docker-proxy process's CPU must show in the first and not the second,
//! and the container's CPU must come from its cgroup.

use std::time::Duration;

use tare_deploy::{deploy, DeploySpec, PlacementKind, TargetKind, TargetSpec};
use tare_monitor::{GeneratorRef, Monitor, MonitorRecord, MonitorSpec, ServerRef};

fn docker_available() -> bool {
    tare_deploy::docker::engine_version().is_ok()
}

fn run_id(tag: &str) -> String {
    format!("m{}{tag}", std::process::id() % 100_000)
}

/// Deploys nginx in `placement`, loads it for 1.5 s under the monitor, and
/// returns the finished record; the deployment is removed on every path
/// (its Drop stops and removes the container).
fn cell(placement: PlacementKind) -> MonitorRecord {
    let spec = DeploySpec::new(
        run_id(placement.name().trim_start_matches("docker-")),
        TargetSpec::of(TargetKind::named("nginx").unwrap()),
        placement,
    );
    let d = deploy(&spec).unwrap();
    let pid = d
        .facts()
        .server_pid
        .expect("the deployer reports the container's init pid") as u32;
    let monitor = Monitor::start(MonitorSpec::new(
        ServerRef::CgroupOf(pid),
        GeneratorRef::SelfProcess,
    ))
    .unwrap();
    let c = crate::support::deployment_load(&d, Duration::from_millis(1500));
    let result = tare_http::run(&c).unwrap();
    assert_eq!(result.errors.total(), 0, "{:?}", result.errors);
    let record = monitor.stop().finish(&result);
    d.stop().unwrap();
    record
}

fn proxy_cpu(r: &MonitorRecord) -> f64 {
    r.summary
        .cpu_s
        .watched
        .get("docker-proxy")
        .copied()
        .unwrap_or(0.0)
}

#[test]
fn docker_proxy_cpu_shows_in_docker_publish_and_not_in_docker_host() {
    if !docker_available() {
        eprintln!("Docker not reachable: skipped");
        return;
    }
    let others_before = tare_monitor::process::named("docker-proxy");
    // The host-network cell first: the publish cell's docker-proxy exits a
    // moment after its container stops, and was once caught (2 ticks of CPU)
    // by a host cell that ran right after it.
    let host = cell(PlacementKind::named("docker-host").unwrap());
    let publish = cell(PlacementKind::named("docker-publish").unwrap());
    let others_after = tare_monitor::process::named("docker-proxy");
    let (p, h) = (
        publish.per_request.clone().unwrap(),
        host.per_request.clone().unwrap(),
    );
    eprintln!(
        "docker-publish: {} | proxy {:.1} µs/req | {}",
        p.short(),
        p.proxy_us,
        publish.verdict.as_ref().unwrap().reason
    );
    eprintln!(
        "docker-host:    {} | proxy {:.1} µs/req | {}",
        h.short(),
        h.proxy_us,
        host.verdict.as_ref().unwrap().reason
    );
    eprintln!(
        "where it ran: publish {:?}; host {:?}",
        publish.summary.cpus_seen, host.summary.cpus_seen
    );
    eprintln!(
        "docker-host -> docker-publish: {}",
        tare_monitor::CostShift::between(&h, &p)
    );

    assert!(publish.server.contains("cgroup"), "{}", publish.server);
    assert!(
        proxy_cpu(&publish) > 0.05,
        "docker-proxy CPU in docker-publish: {:?}",
        publish.summary.cpu_s
    );
    assert!(p.proxy_us > 1.0, "{p:?}");
    if others_before.is_empty() && others_after.is_empty() {
        // Nobody else's published port exists: no docker-proxy runs at all.
        assert_eq!(proxy_cpu(&host), 0.0, "{:?}", host.summary.cpu_s);
    } else {
        // Someone else's containers are up: theirs may carry some traffic.
        assert!(
            proxy_cpu(&host) < 0.1 * proxy_cpu(&publish),
            "{:?}",
            host.summary.cpu_s
        );
    }
    // The container's CPU came from its cgroup in both cells.
    assert!(publish.summary.cpu_s.server > 0.05 && host.summary.cpu_s.server > 0.05);
}
