//! What one profile sample costs, measured in CPU time rather than req/s
//! (which other load on a shared machine moves by more than the profile
//! does): one thread sends 64 bytes around a loopback TCP connection and
//! back (both ends its own, so every round trip runs the network stack
//! the quick experiment's load runs, without waiting on a scheduler), and
//! times its own CPU (`CLOCK_THREAD_CPUTIME_ID`, which includes the
//! sampling interrupts that land on it) per round trip, in windows of
//! 0.4 s alternating the monitor with and without the profile (ABBA).
//! Other processes can take the CPU away; they cannot change how much CPU
//! a round trip takes, except through the caches.
//!
//! Prints, per rate, the ratio of CPU per round trip with the profile to
//! without (the geometric mean of the pairs, 95% interval), the cost of
//! one sample in µs derived from it, and the sampler thread's CPU.
//! `bench/profile-overhead.sh cost` runs it (docs/profiles.md, "What it
//! costs").
//!
//! Usage: profile_cost [PAIRS] [HZ...]

#[path = "common/t95.rs"]
mod t95;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};
use t95::t95;

use tare_monitor::{GeneratorRef, Monitor, MonitorSpec, ServerRef};

fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

struct Window {
    cpu_per_trip_s: f64,
    sampler_fraction: f64,
}

/// One window of round trips under a monitor profiling at `hz` (0: none).
fn window(a: &mut TcpStream, b: &mut TcpStream, hz: u32) -> Window {
    let mut spec = MonitorSpec::new(
        ServerRef::Pids(vec![std::process::id()]),
        GeneratorRef::SelfProcess,
    );
    spec.profile_hz = hz;
    let m = Monitor::start(spec).expect("monitor starts");
    let mut buf = [0u8; 64];
    let msg = [7u8; 64];
    let until = Instant::now() + Duration::from_millis(400);
    let cpu0 = thread_cpu_s();
    let mut trips = 0u64;
    while Instant::now() < until {
        for _ in 0..64 {
            a.write_all(&msg).unwrap();
            b.read_exact(&mut buf).unwrap();
            b.write_all(&buf).unwrap();
            a.read_exact(&mut buf).unwrap();
        }
        trips += 64;
    }
    let cpu = thread_cpu_s() - cpu0;
    let rec = m.stop();
    Window {
        cpu_per_trip_s: cpu / trips as f64,
        sampler_fraction: rec.sampler.cpu_fraction,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let pairs: usize = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20)
        .clamp(2, 500);
    let mut rates: Vec<u32> = args.iter().skip(2).filter_map(|a| a.parse().ok()).collect();
    if rates.is_empty() {
        rates = vec![4999, tare_monitor::profile::DEFAULT_HZ, 199];
    }
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (mut b, _) = l.accept().unwrap();
    a.set_nodelay(true).unwrap();
    b.set_nodelay(true).unwrap();
    // Warm up: the first windows load kallsyms and fault the code in.
    window(&mut a, &mut b, rates[0]);
    window(&mut a, &mut b, 0);
    for hz in rates {
        let mut logs = Vec::new();
        let (mut s_with, mut s_without) = (Vec::new(), Vec::new());
        let mut base = Vec::new();
        for i in 0..pairs {
            let order = if i % 2 == 0 { [hz, 0] } else { [0, hz] };
            let mut w = [0.0f64; 2];
            for r in order {
                let x = window(&mut a, &mut b, r);
                w[usize::from(r == 0)] = x.cpu_per_trip_s;
                if r == 0 {
                    s_without.push(x.sampler_fraction * 100.0);
                } else {
                    s_with.push(x.sampler_fraction * 100.0);
                }
            }
            base.push(w[1]);
            logs.push((w[0] / w[1]).ln());
        }
        let n = logs.len() as f64;
        let mean = logs.iter().sum::<f64>() / n;
        let sd = (logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        let half = t95(logs.len() - 1) * sd / n.sqrt();
        let (r, lo, hi) = (mean.exp(), (mean - half).exp(), (mean + half).exp());
        // Extra CPU per CPU-second = hz × one sample's cost.
        let per_sample_us = |x: f64| (x - 1.0) / hz as f64 * 1e6;
        base.sort_by(f64::total_cmp);
        s_with.sort_by(f64::total_cmp);
        s_without.sort_by(f64::total_cmp);
        println!(
            "{hz:>5} Hz: CPU per round trip with/without {r:.4} [{lo:.4}, {hi:.4}] (95%, {pairs} pairs; {:.2} µs without): one sample {:.2} µs [{:.2}, {:.2}]; sampler thread {:.2}% of a CPU with, {:.2}% without (medians)",
            base[base.len() / 2] * 1e6,
            per_sample_us(r),
            per_sample_us(lo),
            per_sample_us(hi),
            s_with[s_with.len() / 2],
            s_without[s_without.len() / 2],
        );
    }
}
