//! The redis target deployed natively (TCP and Unix socket), in Docker
//! (bridge over TCP, host network over the Unix socket) and in a lab
//! namespace behind NAT, loaded by tare redis: the commands counted equal
//! the server's `INFO commandstats`, and nothing is left afterwards.

use crate::support;

use std::time::Duration;

use tare_deploy::{deploy, DeploySpec, PlacementKind, TargetKind, TargetSpec, Transport};
use tare_engine::Endpoint;
use tare_redis::session::Session;
use tare_redis::{RedisConfig, Test, Workload};

/// `calls` of `cmd` in `INFO commandstats`.
fn calls(ep: &Endpoint, cmd: &str) -> u64 {
    let mut s = Session::connect(ep, Duration::from_secs(5), None, None, 0).unwrap();
    s.command_calls()
        .unwrap()
        .into_iter()
        .find(|(name, _)| name == cmd)
        .map_or(0, |(_, c)| c.calls)
}

/// Deploys redis in `placement` over `transport`, loads it with SET and
/// GET (-n, so the count is exact), checks the counts and the cleanup.
fn load_and_count(placement: &str, transport: Transport) {
    let run = support::run_id(&format!("rd{}", &placement[..placement.len().min(6)]));
    let before = support::machine_state();
    let mut spec = DeploySpec::new(
        &run,
        TargetSpec::of(TargetKind::named("redis").unwrap()),
        PlacementKind::named(placement).unwrap(),
    );
    spec.transport = transport;
    let d = deploy(&spec).unwrap_or_else(|e| panic!("{placement}: {e}"));
    assert!(d.client_netns().is_none(), "{placement}");
    let ep = d.endpoint().clone();
    let want = if transport == Transport::Unix {
        "unix"
    } else {
        "tcp"
    };
    assert_eq!(ep.transport(), want, "{placement}");
    let mut cfg = RedisConfig::new(ep.clone());
    cfg.allow_remote = true;
    cfg.load.connections = 4;
    cfg.load.threads = 2;
    cfg.requests = 3_000;
    cfg.keyspace = Some(1_000);
    cfg.data_size = 50;
    cfg.workloads = vec![Workload::Test(Test::Set), Workload::Test(Test::Get)];
    let (set0, get0) = (calls(&ep, "set"), calls(&ep, "get"));
    let r = tare_redis::run(&cfg).unwrap_or_else(|e| panic!("{placement}: {e}"));
    assert_eq!(r.requests, 3_000, "{placement}: {:?}", r.errors);
    assert_eq!(r.errors.total(), 0, "{placement}");
    let (set1, get1) = (calls(&ep, "set"), calls(&ep, "get"));
    assert_eq!((set1 - set0) + (get1 - get0), 3_000, "{placement}");
    // The connections take turns from different starting points: both ran.
    assert!(set1 > set0 && get1 > get0, "{placement}");
    let facts = d.facts();
    assert_eq!(facts.placement, placement);
    d.stop().unwrap();
    support::assert_nothing_left(&before, &run, placement);
}

#[test]
fn redis_natively_over_tcp_and_unix() {
    load_and_count("native", Transport::Tcp);
    load_and_count("native", Transport::Unix);
}

#[test]
fn redis_in_docker() {
    if !support::docker_available() {
        eprintln!("Docker not reachable here: skipped");
        return;
    }
    load_and_count("docker-bridge", Transport::Tcp);
    load_and_count("docker-host", Transport::Unix);
}

#[test]
fn redis_in_a_lab_namespace_behind_nat() {
    if let Err(why) = tare_deploy::lab::available() {
        eprintln!("lab placements unavailable here ({why}): skipped");
        return;
    }
    load_and_count("lab-nat", Transport::Tcp);
}
