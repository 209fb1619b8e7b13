//! How much of its own machine each generator used: the generator-bound
//! check of the verdict (`verdict.rs`, rule 1). A generator's capacity is
//! the CPUs its threads could use **on the machine it ran on**, which is
//! not the monitored machine when the target is on a remote host
//! (docs/remote.md): a local generator's are this machine's, each remote
//! generator's are its host's (`LoadResult::generator_cpus` and
//! `GeneratorPart::generator_cpus`, recorded by the runner where each
//! load ran), and each one's CPU time is its own record's. The monitor
//! record's own counts (its machine's CPUs, the generator's affinity it
//! saw) decide only for records that carry none of that (older records,
//! and generators tare did not run).

use tare_record::LoadResult;

use crate::record::MonitorRecord;

/// One generator's use of the CPUs it could have.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct GeneratorUse {
    /// The remote host it ran on; `None`: this machine.
    pub host: Option<String>,
    pub threads: f64,
    /// CPUs its threads could use: min(threads, CPUs of its machine it
    /// was allowed), at least one.
    pub capacity: f64,
    /// Mean cores it used over the measured period.
    pub cores: f64,
}

impl GeneratorUse {
    pub(crate) fn utilization(&self) -> f64 {
        self.cores / self.capacity
    }
}

/// Every generator of `load`, each against its own machine. Several
/// remote generators: one each (a failed part, having no CPU time, is
/// left out). Otherwise the one generator, whose machine's CPUs the load
/// records, or failing that the monitor record has.
pub(crate) fn generator_use(rec: &MonitorRecord, load: &LoadResult) -> Vec<GeneratorUse> {
    let d = load.duration_s;
    let parts: Vec<GeneratorUse> = load
        .generators
        .iter()
        .filter(|g| g.error.is_none() && d > 0.0)
        .map(|g| {
            let threads = g.threads.max(1) as f64;
            let allowed = if g.generator_cpus > 0 {
                g.generator_cpus as f64
            } else {
                threads
            };
            GeneratorUse {
                host: Some(g.host.clone()),
                threads,
                capacity: threads.min(allowed).max(1.0),
                cores: g.generator_cpu_s / d,
            }
        })
        .collect();
    if !parts.is_empty() {
        return parts;
    }
    let s = &rec.summary;
    // The engine's own count (RUSAGE_THREAD of its workers) is exact; the
    // monitor's is the fallback for generators tare did not run.
    let cores = if load.generator_cpu_s > 0.0 && d > 0.0 {
        load.generator_cpu_s / d
    } else if s.duration_s > 0.0 {
        s.cpu_s.generator / s.duration_s
    } else {
        0.0
    };
    let cpus = rec.cpus.max(1) as f64;
    let (allowed, machine) = if load.generator_cpus > 0 {
        // Recorded where the load ran: its machine's, whatever was monitored.
        let n = load.generator_cpus as f64;
        (n, n)
    } else if rec.generator_cpus_allowed > 0 {
        (rec.generator_cpus_allowed as f64, cpus)
    } else {
        (cpus, cpus)
    };
    let threads = if load.threads > 0 {
        load.threads as f64
    } else {
        allowed
    };
    vec![GeneratorUse {
        host: None,
        threads,
        capacity: threads.min(allowed).min(machine).max(1.0),
        cores,
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use tare_record::GeneratorPart;

    fn rec(cpus: u32, generator_allowed: u32) -> MonitorRecord {
        MonitorRecord {
            cpus,
            generator_cpus_allowed: generator_allowed,
            ..Default::default()
        }
    }

    fn part(host: &str, threads: u64, cpus: u32, cpu_s: f64) -> GeneratorPart {
        GeneratorPart {
            host: host.into(),
            threads,
            generator_cpus: cpus,
            generator_cpu_s: cpu_s,
            ..Default::default()
        }
    }

    #[test]
    fn a_local_generator_is_measured_against_this_machines_cpus_not_the_target_hosts() {
        // The target's host has 8 CPUs; this machine, where 4 threads ran
        // on 2 CPUs, used 1.9 cores of them.
        let load = LoadResult {
            threads: 4,
            duration_s: 2.0,
            generator_cpu_s: 3.8,
            generator_cpus: 2,
            ..Default::default()
        };
        let u = generator_use(&rec(8, 8), &load);
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].host, None);
        assert_eq!(u[0].capacity, 2.0);
        assert!((u[0].utilization() - 0.95).abs() < 1e-9, "{u:?}");
    }

    #[test]
    fn remote_generators_are_each_measured_against_their_own_host() {
        // Recorded on a 1-CPU machine; generators on a 4-CPU host (idle)
        // and a 2-CPU one (saturated).
        let load = LoadResult {
            threads: 6,
            duration_s: 2.0,
            generator_cpu_s: 5.0,
            generator_cpus: 6,
            generators: vec![part("big", 4, 4, 1.2), part("small", 2, 2, 3.8)],
            ..Default::default()
        };
        let u = generator_use(&rec(1, 1), &load);
        assert_eq!(u.len(), 2);
        assert_eq!((u[0].host.as_deref(), u[0].capacity), (Some("big"), 4.0));
        assert!((u[0].utilization() - 0.15).abs() < 1e-9, "{u:?}");
        assert_eq!((u[1].host.as_deref(), u[1].capacity), (Some("small"), 2.0));
        assert!((u[1].utilization() - 0.95).abs() < 1e-9, "{u:?}");
    }

    #[test]
    fn a_failed_part_is_no_generator_and_an_older_part_counts_its_threads() {
        let mut gone = part("gone", 2, 2, 0.0);
        gone.error = Some("the host dropped".into());
        let load = LoadResult {
            duration_s: 1.0,
            generators: vec![part("old", 2, 0, 1.0), gone],
            ..Default::default()
        };
        let u = generator_use(&rec(4, 4), &load);
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].capacity, 2.0);
    }

    #[test]
    fn a_record_without_the_generators_cpus_falls_back_to_the_monitors() {
        let load = LoadResult {
            threads: 4,
            duration_s: 2.0,
            generator_cpu_s: 2.0,
            ..Default::default()
        };
        assert_eq!(generator_use(&rec(2, 1), &load)[0].capacity, 1.0);
        assert_eq!(generator_use(&rec(2, 0), &load)[0].capacity, 2.0);
    }
}
