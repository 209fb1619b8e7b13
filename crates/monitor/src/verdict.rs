//! The bottleneck verdict of one trial: a pure function of the monitor's
//! record and the load result, so it is tested on fixed records.
//!
//! Checked in this order, the first that holds wins:
//! 1. **generator-bound**: the generator's worker threads used more than 90%
//!    of the CPUs they could run on (docs/monitor.md, "The verdict"), on the machine
//!    each generator ran on (`generator_use.rs`: this machine, or each
//!    remote generator's host, whatever host the target was monitored
//!    on), or, with an
//!    open-loop rate, more than 5% of sends left late while a connection was
//!    free for each (no `unsent` arrivals: the server's slowness would have
//!    exhausted the pool instead). Its numbers then measure the load
//!    generator (tare, or an external tool), not the server: the run
//!    carries a warning.
//! 2. **network-bound**: the network path (softirq + user-space proxies such
//!    as docker-proxy) cost at least as much CPU as the server itself, or the
//!    path lost packets (retransmissions above 1% of requests, conntrack
//!    drops). tare expects seed 000's `-p 8080:80` and seed 001's DNAT runs
//!    to be this case (docs/studies.md, seeds 000 and 001), but that is tare's
//!    reading: neither study measured where the CPU went. In tare's own
//!    quick run the published-port cell was network-bound, with 28 µs of
//!    docker-proxy CPU per request (README.md).
//! 3. **machine-bound**: less than 5% of the machine's CPU time was idle:
//!    everyone shared out all the CPU (usual for generator and server on one
//!    small machine); the CPU split says who had it.
//! 4. **server-bound**: otherwise. The reason says whether the server was
//!    busy (its share of its CPU capacity) or waiting (a closed loop bound
//!    by response time × connections).

use serde::{Deserialize, Serialize};
use tare_record::LoadResult;

use crate::generator_use::{generator_use, GeneratorUse};
use crate::record::{is_proxy, MonitorRecord};

/// "Generator above 90% of its CPU" (docs/monitor.md, "The verdict").
pub(crate) const GENERATOR_SATURATED: f64 = 0.90;
/// "No idle CPU": under 5% of all CPU time idle. Tick sampling at USER_HZ
/// 100 over a 2 s trial on 2 CPUs has 400 ticks; 5% is 20 of them, well
/// above the jitter of the sampler's own wake-ups.
pub(crate) const MACHINE_IDLE_MIN: f64 = 0.05;
/// A network path needs this much CPU (cores) before it can be the
/// bottleneck, so an idle trial is never called network-bound.
pub(crate) const NETWORK_MIN_CORES: f64 = 0.1;
/// Share of open-loop sends that left late (> 1 ms, the engines' threshold)
/// above which the generator is behind its schedule.
pub(crate) const LATE_SENDS: f64 = 0.05;
/// Retransmitted segments per request above which the path is lossy.
pub(crate) const RETRANS_PER_REQUEST: f64 = 0.01;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bound {
    Server,
    Generator,
    Machine,
    Network,
    /// No samples inside the load's measured period.
    Unknown,
}

impl Bound {
    pub fn name(self) -> &'static str {
        match self {
            Bound::Server => "server-bound",
            Bound::Generator => "generator-bound",
            Bound::Machine => "machine-bound",
            Bound::Network => "network-bound",
            Bound::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The numbers the verdict was decided on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// Generator CPU / (duration × CPUs its threads could use).
    pub generator_utilization: f64,
    /// Server CPU / (duration × its CPU capacity).
    pub server_utilization: f64,
    pub machine_idle_fraction: f64,
    /// Mean cores of the server, of softirq, of proxies.
    pub server_cores: f64,
    pub softirq_cores: f64,
    pub proxy_cores: f64,
    pub retrans_per_request: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub bound: Bound,
    /// One sentence with the numbers behind it.
    pub reason: String,
    pub evidence: Evidence,
}

pub fn verdict(rec: &MonitorRecord, load: &LoadResult) -> Verdict {
    let s = &rec.summary;
    let d = s.duration_s;
    if s.intervals == 0 || d <= 0.0 {
        return Verdict {
            bound: Bound::Unknown,
            reason: "no monitor samples inside the measured period".into(),
            evidence: Evidence::default(),
        };
    }
    let cpus = rec.cpus.max(1) as f64;
    // Each generator against its own machine's CPUs (generator_use.rs):
    // the busiest one decides.
    let uses = generator_use(rec, load);
    let busiest = uses
        .iter()
        .max_by(|a, b| a.utilization().total_cmp(&b.utilization()))
        .cloned()
        .unwrap_or(GeneratorUse {
            host: None,
            threads: 1.0,
            capacity: 1.0,
            cores: 0.0,
        });
    let capacity = if rec.server_cpu_capacity > 0.0 {
        rec.server_cpu_capacity
    } else {
        cpus
    };
    let proxy_s: f64 = s
        .cpu_s
        .watched
        .iter()
        .filter(|(k, _)| is_proxy(k))
        .map(|(_, v)| v)
        .sum();
    let ev = Evidence {
        generator_utilization: busiest.utilization(),
        server_utilization: s.cpu_s.server / (d * capacity),
        machine_idle_fraction: s.machine_idle_fraction,
        server_cores: s.cpu_s.server / d,
        softirq_cores: s.cpu_s.machine_softirq / d,
        proxy_cores: proxy_s / d,
        retrans_per_request: s.retrans_segs / load.requests.max(1) as f64,
    };
    let late = load
        .schedule
        .as_ref()
        .filter(|sch| sch.target_rate.is_some() && sch.unsent == 0)
        .map(|sch| sch.late_sends as f64 / (load.requests + load.in_flight).max(1) as f64)
        .unwrap_or(0.0);
    let facts = Facts {
        network_cores: ev.softirq_cores + ev.proxy_cores,
        generator_cores: uses.iter().map(|u| u.cores).sum(),
        ev: &ev,
        busiest,
        capacity,
        late,
        retrans_segs: s.retrans_segs,
        conntrack_drops: s.conntrack_drops.unwrap_or(0),
        rest_cores: s.cpu_s.rest / d,
    };
    let (bound, reason) = generator_bound(&facts)
        .map(|r| (Bound::Generator, r))
        .or_else(|| network_bound(&facts).map(|r| (Bound::Network, r)))
        .or_else(|| machine_bound(&facts).map(|r| (Bound::Machine, r)))
        .unwrap_or_else(|| (Bound::Server, server_bound(&facts)));
    Verdict {
        bound,
        reason,
        evidence: ev,
    }
}

/// What the checks read: the evidence, and what the reasons name beside it.
struct Facts<'a> {
    ev: &'a Evidence,
    /// The generator with the highest utilization.
    busiest: GeneratorUse,
    generator_cores: f64,
    network_cores: f64,
    /// The server's CPU capacity (cores).
    capacity: f64,
    /// Share of open-loop sends that left late with a connection free.
    late: f64,
    retrans_segs: f64,
    conntrack_drops: u64,
    rest_cores: f64,
}

fn pct(x: f64) -> f64 {
    x * 100.0
}

/// Check 1 (see the module's doc): why the trial was generator-bound, if it was.
fn generator_bound(f: &Facts) -> Option<String> {
    if f.late > LATE_SENDS {
        return Some(format!(
            "the generator fell behind its schedule: {:.0}% of sends left late with connections free",
            pct(f.late)
        ));
    }
    (f.ev.generator_utilization > GENERATOR_SATURATED).then(|| {
        format!(
            "the generator{} used {:.0}% of the {} CPU(s) its {} thread(s) could use",
            (f.busiest.host.as_deref())
                .map(|h| format!(" on host {h}"))
                .unwrap_or_default(),
            pct(f.ev.generator_utilization),
            f.busiest.capacity,
            f.busiest.threads
        )
    })
}

/// Check 2: why the trial was network-bound (the path's CPU, or lost
/// packets), if it was.
fn network_bound(f: &Facts) -> Option<String> {
    let ev = f.ev;
    if f.network_cores >= NETWORK_MIN_CORES && f.network_cores >= ev.server_cores {
        return Some(format!(
            "the network path used {:.2} cores (softirq {:.2}, proxies {:.2}), the server {:.2}",
            f.network_cores, ev.softirq_cores, ev.proxy_cores, ev.server_cores
        ));
    }
    (ev.retrans_per_request > RETRANS_PER_REQUEST || f.conntrack_drops > 0).then(|| {
        format!(
            "the path lost packets: {:.0} retransmissions ({:.1}% of requests), {} conntrack drops",
            f.retrans_segs,
            pct(ev.retrans_per_request),
            f.conntrack_drops
        )
    })
}

/// Check 3: why the trial was machine-bound, if it was.
fn machine_bound(f: &Facts) -> Option<String> {
    let ev = f.ev;
    (ev.machine_idle_fraction < MACHINE_IDLE_MIN).then(|| {
        format!(
            "no idle CPU ({:.1}% idle): server {:.2} cores, generator {:.2}, network path {:.2}, rest {:.2}",
            pct(ev.machine_idle_fraction),
            ev.server_cores,
            f.generator_cores,
            f.network_cores,
            f.rest_cores
        )
    })
}

/// Check 4, what remains: the server was busy, or it was waiting.
fn server_bound(f: &Facts) -> String {
    let ev = f.ev;
    if ev.server_utilization >= 0.5 {
        format!(
            "the server used {:.0}% of its {:.1} CPU(s); the generator {:.0}% of its",
            pct(ev.server_utilization),
            f.capacity,
            pct(ev.generator_utilization)
        )
    } else {
        format!(
            "nothing saturated (server {:.0}% of its CPU, {:.0}% idle): throughput is bound by the server's response time × connections",
            pct(ev.server_utilization),
            pct(ev.machine_idle_fraction)
        )
    }
}

/// The run-level warning when trials were generator-bound.
pub fn run_warning(verdicts: &[Verdict]) -> Option<String> {
    let n = verdicts
        .iter()
        .filter(|v| v.bound == Bound::Generator)
        .count();
    (n > 0).then(|| {
        format!(
            "{n} of {} trials were generator-bound: their numbers measure the load generator, not the server (add generator threads or CPUs, or load from another machine)",
            verdicts.len()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{summarize, Series};

    /// A 2 s record on 2 CPUs, all columns in cores.
    fn record(server: f64, generator: f64, softirq: f64, proxy: f64, idle: f64) -> MonitorRecord {
        let n = 4;
        let busy = 2.0 - idle;
        let mut s = Series {
            t_s: vec![0.5, 1.0, 1.5, 2.0],
            dt_s: vec![0.5; n],
            machine_user: vec![busy - softirq; n],
            machine_system: vec![0.0; n],
            machine_softirq: vec![softirq; n],
            machine_irq: vec![0.0; n],
            machine_iowait: vec![0.0; n],
            machine_idle: vec![idle; n],
            machine_steal: vec![0.0; n],
            server_user: vec![server; n],
            server_system: vec![0.0; n],
            generator: vec![generator; n],
            sampler: vec![0.0; n],
            rest: vec![0.0; n],
            ..Default::default()
        };
        s.watched.insert("docker-proxy".into(), vec![proxy; n]);
        MonitorRecord {
            cpus: 2,
            server_cpu_capacity: 2.0,
            generator_cpus_allowed: 2,
            summary: summarize(&s, None),
            series: s,
            ..Default::default()
        }
    }

    fn load(threads: u64, generator_cpu_s: f64) -> LoadResult {
        LoadResult {
            threads,
            duration_s: 2.0,
            requests: 50_000,
            generator_cpu_s,
            ..Default::default()
        }
    }

    #[test]
    fn one_saturated_generator_thread_is_generator_bound() {
        let v = verdict(&record(0.6, 0.97, 0.1, 0.0, 0.4), &load(1, 1.94));
        assert_eq!(v.bound, Bound::Generator, "{v:?}");
        assert!(v.reason.contains("97%"), "{}", v.reason);
        assert!(run_warning(&[v])
            .unwrap()
            .contains("measure the load generator"));
    }

    #[test]
    fn the_same_cpu_over_two_threads_is_not() {
        let v = verdict(&record(0.6, 0.97, 0.1, 0.0, 0.4), &load(2, 1.94));
        assert_ne!(v.bound, Bound::Generator, "{v:?}");
        assert_eq!(run_warning(&[v]), None);
    }

    #[test]
    fn an_open_loop_generator_behind_its_schedule_is_generator_bound() {
        let mut l = load(2, 0.4);
        l.schedule = Some(tare_record::ScheduleReport {
            target_rate: Some(30_000.0),
            late_sends: 10_000,
            ..Default::default()
        });
        let v = verdict(&record(0.6, 0.2, 0.1, 0.0, 0.4), &l);
        assert_eq!(v.bound, Bound::Generator, "{v:?}");
        assert!(v.reason.contains("schedule"), "{}", v.reason);
        // Late because no connection was free: the server's doing, not the generator's.
        l.schedule.as_mut().unwrap().unsent = 500;
        assert_ne!(
            verdict(&record(0.6, 0.2, 0.1, 0.0, 0.4), &l).bound,
            Bound::Generator
        );
    }

    #[test]
    fn docker_proxy_costing_more_than_the_server_is_network_bound() {
        let v = verdict(&record(0.5, 0.4, 0.2, 0.8, 0.05), &load(2, 0.8));
        assert_eq!(v.bound, Bound::Network, "{v:?}");
        assert!((v.evidence.proxy_cores - 0.8).abs() < 1e-9);
    }

    #[test]
    fn no_idle_cpu_is_machine_bound() {
        let v = verdict(&record(1.1, 0.8, 0.1, 0.0, 0.02), &load(2, 1.6));
        assert_eq!(v.bound, Bound::Machine, "{v:?}");
    }

    #[test]
    fn a_busy_server_with_spare_cpu_is_server_bound() {
        let v = verdict(&record(1.0, 0.3, 0.05, 0.0, 0.6), &load(2, 0.6));
        assert_eq!(v.bound, Bound::Server, "{v:?}");
        assert!(v.reason.contains("50%"), "{}", v.reason);
    }

    #[test]
    fn lossy_path_is_network_bound() {
        let mut r = record(0.5, 0.3, 0.05, 0.0, 0.9);
        r.summary.retrans_segs = 5_000.0;
        assert_eq!(verdict(&r, &load(2, 0.6)).bound, Bound::Network);
    }

    #[test]
    fn no_samples_is_unknown() {
        let r = MonitorRecord::default();
        assert_eq!(verdict(&r, &load(1, 1.0)).bound, Bound::Unknown);
    }

    /// A load whose generators ran elsewhere than the monitored machine:
    /// `threads` threads, `cpus` of their machine's CPUs, `cores` used.
    fn placed_load(threads: u64, cpus: u32, cores: f64) -> LoadResult {
        LoadResult {
            generator_cpus: cpus,
            ..load(threads, cores * 2.0)
        }
    }

    fn remote_part(host: &str, threads: u64, cpus: u32, cores: f64) -> tare_record::GeneratorPart {
        tare_record::GeneratorPart {
            host: host.into(),
            threads,
            generator_cpus: cpus,
            generator_cpu_s: cores * 2.0,
            ..Default::default()
        }
    }

    #[test]
    fn a_remote_target_with_a_local_generator_is_judged_on_this_machines_cpus() {
        // Monitored on an 8-CPU target host (its generator column empty);
        // the generator's 4 threads ran here on 2 CPUs and used 1.9 cores.
        let mut r = record(0.6, 0.0, 0.1, 0.0, 6.0);
        r.cpus = 8;
        r.generator_cpus_allowed = 8;
        r.host = Some("srv".into());
        let v = verdict(&r, &placed_load(4, 2, 1.9));
        assert_eq!(v.bound, Bound::Generator, "{v:?}");
        assert!(v.reason.contains("95% of the 2 CPU(s)"), "{}", v.reason);
        // The same generator on 8 CPUs here: a quarter of them.
        let v = verdict(&r, &placed_load(4, 8, 1.9));
        assert_ne!(v.bound, Bound::Generator, "{v:?}");
    }

    #[test]
    fn a_local_target_with_remote_generators_is_judged_on_their_hosts_cpus() {
        // Monitored here on 2 CPUs; one generator with 4 threads on an
        // 8-CPU host used 1.9 cores: under half of what it could.
        let r = record(0.6, 0.0, 0.1, 0.0, 0.4);
        let mut l = placed_load(4, 8, 1.9);
        l.generators = vec![remote_part("gen", 4, 8, 1.9)];
        let v = verdict(&r, &l);
        assert_ne!(v.bound, Bound::Generator, "{v:?}");
        assert!((v.evidence.generator_utilization - 1.9 / 4.0).abs() < 1e-9);
        // On a 2-CPU host the same 1.9 cores saturate it.
        l.generators = vec![remote_part("gen", 4, 2, 1.9)];
        let v = verdict(&r, &l);
        assert_eq!(v.bound, Bound::Generator, "{v:?}");
        assert!(v.reason.contains("on host gen"), "{}", v.reason);
    }

    #[test]
    fn remote_target_and_generators_on_hosts_of_different_sizes() {
        // Monitored on a 2-CPU target host; generators on a 4-CPU host and
        // a 1-CPU one.
        let mut r = record(0.6, 0.0, 0.1, 0.0, 0.4);
        r.host = Some("srv".into());
        let mut l = placed_load(6, 5, 3.0);
        // Each at half of its own CPUs: 3 cores in all, more than the
        // target host has, and still not generator-bound.
        l.generators = vec![
            remote_part("big", 4, 4, 2.0),
            remote_part("small", 2, 1, 0.5),
        ];
        let v = verdict(&r, &l);
        assert_ne!(v.bound, Bound::Generator, "{v:?}");
        // The small host saturated: generator-bound, and it says which.
        l.generators[1] = remote_part("small", 2, 1, 0.97);
        let v = verdict(&r, &l);
        assert_eq!(v.bound, Bound::Generator, "{v:?}");
        assert!(
            v.reason.contains("on host small used 97% of the 1 CPU(s)"),
            "{}",
            v.reason
        );
    }
}
