//! Ground truth for the profile (docs/profiles.md): nginx in the namespace
//! lab behind a bridge, then behind the bridge and nftables NAT. Only the
//! NAT cell's packets are translated, so the NAT subsystem (packets
//! rewritten: `nf_nat_manip_pkt`, `l4proto_manip_pkt`...) must show in
//! its server's and generator's profile and not in the bridge cell's. The
//! nat table's hooks run in both on a Docker host (its nat table is in the
//! host's namespace, and br_netfilter passes bridged frames through it):
//! they are netfilter's, and not asserted. Softirq work for someone else's
//! packets (another test's published port) can land on our processes, so
//! the bridge cell may hold a trace of NAT, never a real share.
//! Every profiled server's µs per request must be the CPU the CPU table
//! also counted, within sampling noise.

use std::time::Duration;

use tare_deploy::{deploy, DeploySpec, PlacementKind, TargetKind, TargetSpec};
use tare_monitor::{GeneratorRef, Monitor, MonitorRecord, MonitorSpec, ServerRef};

const HZ: u32 = 4999;

fn run_id(tag: &str) -> String {
    format!("mp{}{tag}", std::process::id() % 100_000)
}

/// nginx in `placement`, loaded for 2 s from the lab's client side under
/// the monitor; the deployment is removed on every path (its Drop).
fn cell(placement: &str) -> MonitorRecord {
    let spec = DeploySpec::new(
        run_id(&placement.replace('-', "")),
        TargetSpec::of(TargetKind::named("nginx").unwrap()),
        PlacementKind::named(placement).unwrap(),
    );
    let d = deploy(&spec).unwrap_or_else(|e| panic!("{placement}: {e}"));
    let pid = d.facts().server_pid.expect("the server's pid") as u32;
    let mut spec = MonitorSpec::new(
        ServerRef::Pids(vec![pid]),
        GeneratorRef::Threads("tare-http-".into()),
    );
    // Ten times the default rate: a few µs of NAT per request must be
    // tens of samples, not a handful.
    spec.profile_hz = HZ;
    let monitor = Monitor::start(spec).unwrap();
    let target = tare_http::Target {
        url: d.url(),
        authority: "tare".into(),
        path: "/index.html".into(),
        endpoint: d.endpoint().clone(),
    };
    let mut c = tare_http::HttpConfig::new(target);
    c.load.threads = 1;
    c.load.connections = 16;
    c.load.duration = Some(Duration::from_secs(2));
    c.load.warmup = Duration::from_millis(200);
    c.load.netns = d.client_netns().map(|p| p.to_path_buf());
    let result = tare_http::run(&c).unwrap();
    assert_eq!(result.errors.total(), 0, "{placement}: {:?}", result.errors);
    let record = monitor.stop().finish(&result);
    d.stop().unwrap();
    record
}

#[test]
fn nat_shows_in_the_nat_cell_and_not_in_the_bridge_cell() {
    if let Err(e) = tare_deploy::lab::available() {
        eprintln!("lab unavailable ({e}): skipped");
        return;
    }
    let bridge = cell("lab-bridge");
    let nat = cell("lab-nat");
    for (name, r) in [("lab-bridge", &bridge), ("lab-nat", &nat)] {
        let Some(profile) = &r.profile else {
            // Where perf_event_open is refused the record says why, once.
            let why = r.notes.iter().find(|n| n.starts_with("no profile"));
            eprintln!("{name}: {why:?}: skipped");
            assert!(
                why.is_some(),
                "{name}: no profile and no note: {:?}",
                r.notes
            );
            return;
        };
        let p = r.per_request.as_ref().unwrap();
        eprintln!(
            "{name}: {} samples, {} lost; by subsystem (µs/req): {:?}",
            profile.samples,
            profile.lost,
            p.subsystems_us()
        );
        for (component, by) in &p.profile_us {
            let nf: Vec<String> = ["netfilter", "conntrack", "NAT"]
                .iter()
                .filter_map(|s| by.get(*s).map(|v| format!("{s} {v:.2}")))
                .collect();
            eprintln!("  {component}: {}", nf.join(", "));
        }
        eprintln!("  cpu table: {}", p.short());
        assert!(profile.samples > 100, "{name}: {profile:?}");
        // The server's sampled CPU is the CPU its counters gave, within
        // sampling's noise: 2 s at 499 Hz is ~750 samples a busy CPU.
        let sampled: f64 = p.profile_us.get("server").map_or(0.0, |m| m.values().sum());
        assert!(
            sampled > 0.5 * p.server_us && sampled < 1.5 * p.server_us,
            "{name}: server sampled {sampled:.1} µs/req, counted {:.1}",
            p.server_us
        );
    }
    let (in_nat, in_bridge) = (trial_nat_us(&nat), trial_nat_us(&bridge));
    eprintln!(
        "NAT in the server and generator, µs/req: lab-nat {in_nat:.2}, lab-bridge {in_bridge:.2}"
    );
    assert!(
        in_nat > 0.0,
        "no NAT samples in lab-nat's server or generator"
    );
    assert!(
        in_bridge < 0.25 * in_nat,
        "NAT in lab-bridge {in_bridge:.2} µs/req against {in_nat:.2} in lab-nat"
    );
}

/// NAT's µs per request in the trial's own processes.
fn trial_nat_us(r: &MonitorRecord) -> f64 {
    let p = r.per_request.as_ref().unwrap();
    ["server", "generator"]
        .iter()
        .filter_map(|c| p.profile_us.get(*c)?.get("NAT"))
        .sum()
}
