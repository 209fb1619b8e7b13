//! What the profile costs the measurement: the quick experiment's load
//! (`examples/quick.toml`: tare serve, 1 thread, 32 connections, 0.5 s
//! warm-up + 2 s) under the monitor with and without its whole-machine
//! stack sampling (docs/profiles.md), alternating which goes first, several
//! rounds. Prints each round, the ratio of median req/s with the profile
//! to without, and the rounds' paired ratios with a 95% interval. `bench/profile-overhead.sh` runs it.
//!
//! Usage: profile_overhead [ROUNDS] [HZ]

#[path = "common/mod.rs"]
mod common;
#[path = "common/t95.rs"]
mod t95;
use t95::t95;

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
    let mut paired = Vec::new();
    let mut paired_cpu = Vec::new();
    let mut sampler_with = Vec::new();
    let mut sampler_without = Vec::new();
    for round in 0..rounds {
        // Alternate which goes first, so drift does not favour one side.
        let order = if round % 2 == 0 { [hz, 0] } else { [0, hz] };
        let mut pair = [0.0f64; 2];
        let mut cpu = [0.0f64; 2];
        for profile_hz in order {
            let (rps, rec) = trial(profile_hz);
            // The load's own CPU per request (server + generator): the
            // sampling interrupt's time is billed to the task it interrupts,
            // and this moves less than req/s on a shared machine.
            let us = rec
                .per_request
                .as_ref()
                .map_or(f64::NAN, |p| p.server_us + p.generator_us);
            cpu[usize::from(profile_hz == 0)] = us;
            // TARE_BENCH_PROFILES=FILE: each profiled trial's µs per request
            // by component and subsystem, a JSON line (what the rate does
            // to a step's interval: docs/profiles.md, "What it costs").
            if let (Some(path), Some(p)) = (
                std::env::var_os("TARE_BENCH_PROFILES"),
                rec.per_request.as_ref().filter(|_| profile_hz > 0),
            ) {
                use std::io::Write;
                let line = serde_json::json!({
                    "hz": profile_hz,
                    "requests": p.requests,
                    "profile_us": p.profile_us,
                });
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .expect("the profiles' file opens");
                writeln!(f, "{line}").expect("the profiles' file is written");
            }
            match &rec.profile {
                Some(p) => {
                    println!(
                        "round {round}: profiled   {rps:>9.0} req/s  {} samples, {} lost, sampler {:.3}% of a CPU",
                        p.samples,
                        p.lost,
                        rec.sampler.cpu_fraction * 100.0
                    );
                    with.push(rps);
                    sampler_with.push(rec.sampler.cpu_fraction * 100.0);
                    pair[0] = rps;
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
                    sampler_without.push(rec.sampler.cpu_fraction * 100.0);
                    pair[1] = rps;
                }
            }
        }
        paired.push((pair[0] / pair[1]).ln());
        paired_cpu.push((cpu[0] / cpu[1]).ln());
    }
    let (ratio, w, wo) = common::finish(child, &mut with, &mut without);
    println!(
        "median req/s: with the profile at {hz} Hz {w:.0}, without {wo:.0}; ratio {ratio:.4} (cost {:+.2}%)",
        (1.0 - ratio) * 100.0
    );
    // The rounds' own ratios (each pair ran back to back): their geometric
    // mean with a 95% interval (Student's t on the logs), and their median.
    let (mean, lo, hi) = log_interval(&paired);
    let mut logs = paired.clone();
    println!(
        "paired req/s ratio: geometric mean {mean:.4} [{lo:.4}, {hi:.4}] (95%, {} rounds), median {:.4}",
        paired.len(),
        common::median(&mut logs).exp()
    );
    let (cm, clo, chi) = log_interval(&paired_cpu);
    println!(
        "paired CPU per request (server + generator) with/without: {cm:.4} [{clo:.4}, {chi:.4}] (95%)"
    );
    println!(
        "sampler thread: median {:.2}% of a CPU with the profile, {:.2}% without",
        common::median(&mut sampler_with),
        common::median(&mut sampler_without)
    );
    // The profile's budget: throughput with it at least 0.98 of without
    // (docs/profiles.md, "What it costs"), on the paired rounds' mean.
    std::process::exit(if mean >= 0.98 { 0 } else { 1 });
}

/// The geometric mean of ratios given as logs, with its 95% interval
/// (Student's t on the logs).
fn log_interval(logs: &[f64]) -> (f64, f64, f64) {
    let n = logs.len() as f64;
    let mean = logs.iter().sum::<f64>() / n;
    let sd = if logs.len() > 1 {
        (logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    let half = t95(logs.len().saturating_sub(1)) * sd / n.sqrt();
    (mean.exp(), (mean - half).exp(), (mean + half).exp())
}
