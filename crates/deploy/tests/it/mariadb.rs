//! The mariadb target deployed natively (TCP and Unix socket, the `ibm`
//! variant once), in Docker (bridge, data on the image layer with
//! O_DIRECT; host network with the data on a volume) and in a lab
//! namespace behind NAT, loaded by tare mysql: `prepare` makes the tables
//! inside the deployment, the transactions committed equal the server's
//! `Com_commit`, and nothing is left afterwards.

use crate::support;

use std::time::Duration;

use tare_deploy::{deploy, DeploySpec, PlacementKind, Storage, TargetKind, TargetSpec, Transport};
use tare_engine::Endpoint;
use tare_mysql::admin::Admin;
use tare_mysql::session::Session;
use tare_mysql::{Login, MysqlConfig, RandType, Workload};

fn login() -> Login {
    Login {
        user: "sbtest".into(),
        password: String::new(),
        db: Some("sbtest".into()),
    }
}

fn commits(ep: &Endpoint, netns: Option<&std::path::Path>) -> u64 {
    let ep = ep.clone();
    let netns = netns.map(|p| p.to_path_buf());
    std::thread::spawn(move || {
        if let Some(ns) = &netns {
            tare_engine::netns::enter(ns).unwrap();
        }
        let mut s = Session::connect(&ep, &login(), Duration::from_secs(10)).unwrap();
        s.global_status().unwrap()["Com_commit"]
    })
    .join()
    .unwrap()
}

/// Deploys mariadb, prepares one small table, runs 100 read-only
/// transactions, checks the count and the cleanup.
fn load_and_count(placement: &str, transport: Transport, variant: &str, storage: Storage) {
    let run = support::run_id(&format!("my{}", &placement[..placement.len().min(6)]));
    let before = support::machine_state();
    let mut target = TargetSpec::of(TargetKind::named("mysql").unwrap());
    target.variant = tare_deploy::Variant::Named(variant.into());
    let mut spec = DeploySpec::new(&run, target, PlacementKind::named(placement).unwrap());
    spec.transport = transport;
    spec.container.storage = storage;
    let d = deploy(&spec).unwrap_or_else(|e| panic!("{placement}: {e}"));
    let what = format!("{placement} {transport:?} {variant} {storage:?}");
    let ep = d.endpoint().clone();
    let netns = d.client_netns().map(|p| p.to_path_buf());
    assert_eq!(d.facts().target, "mariadb", "{what}");
    let admin = Admin {
        endpoint: ep.clone(),
        login: login(),
        tables: 1,
        table_size: 1000,
        threads: 1,
        storage_engine: "innodb".into(),
        schema: tare_mysql::Schema::default(),
        rand: RandType::Special,
        seed: 1,
        timeout: Duration::from_secs(10),
        netns: netns.clone(),
        allow_remote: true,
    };
    assert!(
        admin.prepare_if_missing(&mut std::io::sink()).unwrap(),
        "{what}"
    );
    assert!(
        !admin.prepare_if_missing(&mut std::io::sink()).unwrap(),
        "{what}: made once"
    );
    let mut cfg = MysqlConfig::new(ep.clone());
    cfg.allow_remote = true;
    cfg.table_size = 1000;
    cfg.load.connections = 4;
    cfg.load.threads = 2;
    cfg.load.duration = None;
    cfg.load.netns = netns.clone();
    cfg.events = Some(100);
    cfg.workload = Workload::ReadOnly;
    let c0 = commits(&ep, netns.as_deref());
    let r = tare_mysql::run(&cfg).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!((r.requests, r.errors.total()), (100, 0), "{what}");
    assert_eq!(commits(&ep, netns.as_deref()) - c0, 100, "{what}");
    d.stop().unwrap();
    support::assert_nothing_left(&before, &run, what);
}

#[test]
fn mariadb_natively_over_tcp_and_unix() {
    load_and_count("native", Transport::Tcp, "ibm", Storage::Image);
    load_and_count("native", Transport::Unix, "default", Storage::Image);
}

#[test]
fn mariadb_in_docker_with_data_on_the_image_layer_and_a_volume() {
    if !support::docker_available() {
        eprintln!("Docker not reachable here: skipped");
        return;
    }
    load_and_count("docker-bridge", Transport::Tcp, "ibm", Storage::Image);
    load_and_count("docker-host", Transport::Tcp, "default", Storage::Volume);
}

#[test]
fn mariadb_in_a_lab_namespace_behind_nat() {
    if let Err(why) = tare_deploy::lab::available() {
        eprintln!("lab placements unavailable here ({why}): skipped");
        return;
    }
    load_and_count("lab-nat", Transport::Tcp, "default", Storage::Image);
}
