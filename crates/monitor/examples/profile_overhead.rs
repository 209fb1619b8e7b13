//! What the profile costs the measurement: the quick experiment's load
//! (`examples/quick.toml`: tare serve, 1 thread, 32 connections, 0.5 s
//! warm-up + 2 s) under the monitor with and without its whole-machine
//! stack sampling (docs/profiles.md), alternating which goes first, several
//! rounds. Prints each round and the ratio of median req/s with the
//! profile to without. `bench/profile-overhead.sh` runs it.
//!
//! Usage: profile_overhead [ROUNDS] [HZ]

#[path = "common/mod.rs"]
mod common;

use tare_monitor::{GeneratorRef, Monitor, MonitorSpec, ServerRef};

fn main() {
    let (child, url) = common::server();
    let rounds: usize = common::arg(1, 7).clamp(1, 50);
    let hz: u32 = common::arg(2, tare_monitor::profile::DEFAULT_HZ).clamp(1, 10_000);

    let trial = |profile_hz: u32| {
        let c = common::quick_load(&url);
        let mut spec =
            MonitorSpec::new(ServerRef::Pids(vec![child.id()]), GeneratorRef::SelfProcess);
        spec.profile_hz = profile_hz;
        let m = Monitor::start(spec).expect("monitor starts");
        let r = tare_http::run(&c).expect("load runs");
        (r.throughput(), m.stop().finish(&r))
    };
    let mut with = Vec::new();
    let mut without = Vec::new();
    for round in 0..rounds {
        // Alternate which goes first, so drift does not favour one side.
        let order = if round % 2 == 0 { [hz, 0] } else { [0, hz] };
        for profile_hz in order {
            let (rps, rec) = trial(profile_hz);
            match &rec.profile {
                Some(p) => {
                    println!(
                        "round {round}: profiled   {rps:>9.0} req/s  {} samples, {} lost, sampler {:.3}% of a CPU",
                        p.samples,
                        p.lost,
                        rec.sampler.cpu_fraction * 100.0
                    );
                    with.push(rps);
                }
                None if profile_hz > 0 => {
                    eprintln!("no profile: {:?}", rec.notes);
                    std::process::exit(2);
                }
                None => {
                    println!(
                        "round {round}: unprofiled {rps:>9.0} req/s  sampler {:.3}% of a CPU",
                        rec.sampler.cpu_fraction * 100.0
                    );
                    without.push(rps);
                }
            }
        }
    }
    let (ratio, w, wo) = common::finish(child, &mut with, &mut without);
    println!(
        "median req/s: with the profile at {hz} Hz {w:.0}, without {wo:.0}; ratio {ratio:.4} (cost {:+.2}%)",
        (1.0 - ratio) * 100.0
    );
    // The profile's budget: throughput with it at least 0.98 of without
    // (docs/profiles.md, "What it costs").
    std::process::exit(if ratio >= 0.98 { 0 } else { 1 });
}
