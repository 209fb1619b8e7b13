//! What monitoring costs the measurement: the quick experiment's load
//! (`examples/quick.toml`: tare serve, 1 thread, 32 connections, 0.5 s
//! warm-up + 2 s) run with and without the monitor sampling every 100 ms,
//! in alternating order, several rounds. Prints each round and the ratio of
//! median req/s with monitoring to without. `bench/monitor-overhead.sh` runs it.
//!
//! Usage: overhead [ROUNDS] [INTERVAL_MS]

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use tare_monitor::{GeneratorRef, Monitor, MonitorSpec, ServerRef};

fn main() {
    let (child, url) = common::server();
    let rounds: usize = common::arg(1, 5).clamp(1, 50);
    let interval_ms: u64 = common::arg(2, 100);

    let load = || {
        let c = common::quick_load(&url);
        tare_http::run(&c).expect("load runs")
    };
    let mut with = Vec::new();
    let mut without = Vec::new();
    let mut sampler_fraction = Vec::new();
    for round in 0..rounds {
        // Alternate which goes first, so drift does not favour one side.
        for monitored in if round % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        } {
            let rps = if monitored {
                let mut spec =
                    MonitorSpec::new(ServerRef::Pids(vec![child.id()]), GeneratorRef::SelfProcess);
                spec.interval = Duration::from_millis(interval_ms);
                let m = Monitor::start(spec).expect("monitor starts");
                let r = load();
                let rec = m.stop().finish(&r);
                sampler_fraction.push(rec.sampler.cpu_fraction);
                println!(
                    "round {round}: monitored   {:>9.0} req/s  sampler {:.3}% of a CPU, {:.0} µs/sample, verdict {}",
                    r.throughput(),
                    rec.sampler.cpu_fraction * 100.0,
                    rec.sampler.mean_sample_us,
                    rec.verdict.map(|v| v.bound.to_string()).unwrap_or_default()
                );
                with.push(r.throughput());
                continue;
            } else {
                load().throughput()
            };
            println!("round {round}: unmonitored {rps:>9.0} req/s");
            without.push(rps);
        }
    }
    let (ratio, w, wo) = common::finish(child, &mut with, &mut without);
    println!(
        "median req/s: with monitoring {w:.0}, without {wo:.0}; ratio {ratio:.4} (cost {:+.2}%); sampler CPU {:.3}% of one CPU at {interval_ms} ms",
        (1.0 - ratio) * 100.0,
        common::median(&mut sampler_fraction) * 100.0
    );
    // The monitor's budget: at most 2% cost (docs/monitor.md, "What it costs").
    std::process::exit(if ratio >= 0.98 { 0 } else { 1 });
}
