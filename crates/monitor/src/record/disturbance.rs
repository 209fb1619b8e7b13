//! [`Disturbance`]: what else happened on the machine while a trial was
//! measured — CPU the hypervisor stole, CPU other processes took, the clock
//! frequency moving — and whether any of it was large enough to call the
//! trial disturbed (docs/monitor.md, "Noise"). A disturbed trial
//! is flagged, never dropped here: reports keep it unless the user asks.
//!
//! The three thresholds share one yardstick: the report calls a cell noisy
//! when its interval is wider than ±5% of its median (`NOISY_SPREAD` in
//! tare-analysis, docs/report.md "Noise and warnings"). Each threshold is a
//! disturbance that can plausibly move one trial's throughput by a sizeable
//! part of that on the 2-CPU machines the reference measurements were taken
//! on (docs/studies.md, "Reference measurements").

use serde::{Deserialize, Serialize};

use super::MonitorRecord;

/// Steal above 2% of the machine's CPU time. The CPU stolen from a busy
/// trial is taken from the server or the generator; 2% of the machine is
/// 0.04 cores on 2 CPUs, already 40% of the ±5% noise budget, and 8 ticks of
/// a 2 s trial on 2 CPUs at USER_HZ 100 (400 ticks), clear of the ±1 tick
/// rounding of `/proc/stat`.
pub const STEAL_FRACTION_MAX: f64 = 0.02;

/// Processes outside every group above 10% of one core, mean over the
/// window. On 2 CPUs that is 5% of the machine: the whole noise budget if it
/// came out of the server's share. It is 20 ticks over a 2 s trial, and
/// about 15 times the monitor's own sampler (0.55–0.7% of one CPU,
/// docs/monitor.md "What it costs"), which is not counted here anyway.
pub const OTHERS_CORES_MAX: f64 = 0.10;

/// The mean CPU clock moved by more than 5% within the window ((max − min)
/// / max). A CPU-bound server's throughput scales with its clock, so a 5%
/// move is the noise budget itself.
pub const FREQUENCY_MOVED_MAX: f64 = 0.05;

/// The note a record carries when the machine exposes no CPU frequency.
pub(crate) const FREQUENCY_NOT_EXPOSED: &str =
    "CPU frequency not exposed (no /sys/devices/system/cpu/cpu*/cpufreq): frequency changes cannot be seen";

/// Processes that are not in the monitor's groups but work for the trial
/// rather than against it, so their CPU is part of what is measured, not
/// noise: the container runtime and its storage driver (fuse-overlayfs
/// serving a container's files is the trial's own cost: docs/studies.md,
/// "fuse-overlayfs (2026-11-25)"), user-space network proxies, and kernel
/// threads (named `family/*` by the census: softirq, writeback of the access
/// log, the journal), which carry the work of whoever runs. A trailing `*`
/// is a prefix.
const HELPERS: [&str; 13] = [
    "dockerd",
    "containerd",
    "containerd-shim*",
    "runc*",
    "docker-proxy",
    "fuse-overlayfs",
    "slirp4netns",
    "rootlesskit",
    "rootlessport",
    "pasta",
    "passt*",
    "conmon",
    "podman",
];

fn is_helper(name: &str) -> bool {
    name.contains('/')
        || HELPERS.iter().any(|h| match h.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == *h,
        })
}

/// How many of the largest outside processes a reason names.
const TOP: usize = 3;
/// An outside process below this many cores is not named.
const TOP_MIN_CORES: f64 = 0.01;

/// The noise around one trial's measured window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Disturbance {
    /// Steal time as a share of all the machine's CPU time in the window.
    pub steal_fraction: f64,
    /// CPU of the processes outside the server, the generator, the sampler,
    /// the watched processes and their helpers, in cores (mean over the
    /// record; the census is read at its start and end).
    pub others_cores: f64,
    /// The largest of them as `[name, cores]`, largest first, at most three.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub others_top: Vec<(String, f64)>,
    /// How far the mean CPU clock moved in the window, (max − min) / max;
    /// `None`: the machine does not expose its frequency.
    pub frequency_moved: Option<f64>,
    /// Why the trial counts as disturbed, one phrase each
    /// (`steal 6.1% of CPU`); empty when it does not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
}

impl Disturbance {
    /// The reasons stored in a monitor record's JSON (`TrialRecord::monitor`),
    /// `None` when it has none: the trial was clean or is too old to say.
    pub fn reasons_in(monitor: &serde_json::Value) -> Option<Vec<String>> {
        let reasons: Vec<String> = monitor
            .get("disturbance")?
            .get("reasons")?
            .as_array()?
            .iter()
            .filter_map(|r| r.as_str().map(String::from))
            .collect();
        (!reasons.is_empty()).then_some(reasons)
    }
}

impl MonitorRecord {
    /// The disturbance over the summary's window (see the module doc for
    /// the thresholds).
    pub fn disturbance(&self) -> Disturbance {
        let c = &self.summary.cpu_s;
        let all = c.machine_busy + c.machine_idle + c.machine_iowait;
        let steal_fraction = if all > 0.0 {
            c.machine_steal / all
        } else {
            0.0
        };

        let recorded: f64 = self.series.dt_s.iter().sum();
        let mut others: Vec<(String, f64)> = if recorded > 0.0 {
            self.others_cpu_s
                .iter()
                .filter(|(name, _)| !is_helper(name))
                .map(|(name, cpu_s)| (name.clone(), cpu_s / recorded))
                .collect()
        } else {
            Vec::new()
        };
        let others_cores: f64 = others.iter().map(|(_, c)| c).sum();
        others.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        others.retain(|(_, c)| *c >= TOP_MIN_CORES);
        others.truncate(TOP);

        let s = &self.summary;
        let frequency_moved = match (s.cpu_mhz_min, s.cpu_mhz_max) {
            (Some(lo), Some(hi)) if hi > 0.0 => Some((hi - lo) / hi),
            _ => None,
        };

        let mut reasons = Vec::new();
        if steal_fraction > STEAL_FRACTION_MAX {
            reasons.push(format!("steal {:.1}% of CPU", steal_fraction * 100.0));
        }
        if others_cores > OTHERS_CORES_MAX {
            let named: Vec<String> = others.iter().map(|(n, c)| format!("{n} {c:.2}")).collect();
            let mut r = format!("other processes {others_cores:.2} cores");
            if !named.is_empty() {
                r += &format!(" ({})", named.join(", "));
            }
            reasons.push(r);
        }
        if let (Some(moved), Some(lo), Some(hi)) = (frequency_moved, s.cpu_mhz_min, s.cpu_mhz_max) {
            if moved > FREQUENCY_MOVED_MAX {
                reasons.push(format!(
                    "CPU frequency moved {:.0}% ({lo:.0}-{hi:.0} MHz)",
                    moved * 100.0
                ));
            }
        }
        Disturbance {
            steal_fraction,
            others_cores,
            others_top: others,
            frequency_moved,
            reasons,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{summarize, Series};

    /// Four 0.5 s intervals on 2 CPUs: 1.5 cores busy, `steal` cores stolen,
    /// the rest idle.
    fn record(steal: f64, mhz: &[f64]) -> MonitorRecord {
        let n = 4;
        let series = Series {
            t_s: vec![0.5, 1.0, 1.5, 2.0],
            dt_s: vec![0.5; n],
            machine_user: vec![1.0; n],
            machine_system: vec![0.5 - steal; n],
            machine_steal: vec![steal; n],
            machine_idle: vec![0.5; n],
            cpu_mhz: mhz.to_vec(),
            ..Default::default()
        };
        MonitorRecord {
            cpus: 2,
            summary: summarize(&series, None),
            series,
            ..Default::default()
        }
    }

    #[test]
    fn steal_above_the_threshold_disturbs_and_below_does_not() {
        // 0.12 of 2 cores = 6% of the machine's CPU.
        let d = record(0.12, &[]).disturbance();
        assert!((d.steal_fraction - 0.06).abs() < 1e-9, "{d:?}");
        assert_eq!(d.reasons, ["steal 6.0% of CPU"]);
        // 0.02 of 2 cores = 1%: under 2%.
        let d = record(0.02, &[]).disturbance();
        assert!((d.steal_fraction - 0.01).abs() < 1e-9, "{d:?}");
        assert!(d.reasons.is_empty(), "{d:?}");
    }

    #[test]
    fn a_busy_outside_process_disturbs_and_helpers_do_not() {
        let mut r = record(0.0, &[]);
        // Over the record's 2 s: cc1plus 0.6 s = 0.30 cores, cron 0.018 s
        // = 0.009 cores: counted, too small to be named.
        r.others_cpu_s.insert("cc1plus".into(), 0.6);
        r.others_cpu_s.insert("cron".into(), 0.018);
        // Helpers: the trial's own work, however large.
        r.others_cpu_s.insert("fuse-overlayfs".into(), 1.5);
        r.others_cpu_s.insert("kworker/*".into(), 0.4);
        r.others_cpu_s.insert("containerd-shim".into(), 0.4);
        let d = r.disturbance();
        assert!((d.others_cores - 0.309).abs() < 1e-9, "{d:?}");
        assert_eq!(d.others_top, [("cc1plus".to_string(), 0.3)]);
        assert_eq!(d.reasons, ["other processes 0.31 cores (cc1plus 0.30)"]);

        // 0.15 s over 2 s = 0.075 cores: under 10% of a core.
        let mut r = record(0.0, &[]);
        r.others_cpu_s.insert("cc1plus".into(), 0.15);
        r.others_cpu_s.insert("fuse-overlayfs".into(), 1.5);
        let d = r.disturbance();
        assert!((d.others_cores - 0.075).abs() < 1e-9, "{d:?}");
        assert!(d.reasons.is_empty(), "{d:?}");
    }

    #[test]
    fn frequency_is_not_exposed_or_moves() {
        let d = record(0.0, &[]).disturbance();
        assert_eq!(d.frequency_moved, None, "never invented");
        assert!(d.reasons.is_empty());
        let d = record(0.0, &[2400.0, 2400.0, 2160.0, 2400.0]).disturbance();
        assert!((d.frequency_moved.unwrap() - 0.10).abs() < 1e-9, "{d:?}");
        assert_eq!(d.reasons, ["CPU frequency moved 10% (2160-2400 MHz)"]);
        let d = record(0.0, &[2400.0, 2350.0, 2400.0, 2380.0]).disturbance();
        assert!(d.reasons.is_empty(), "{d:?}");
    }

    #[test]
    fn every_reason_at_once_and_read_back_from_json() {
        let mut r = record(0.12, &[3000.0, 2000.0, 3000.0, 3000.0]);
        r.others_cpu_s.insert("rustc".into(), 0.8);
        r.others_cpu_s.insert("cc1plus".into(), 0.3);
        r.disturbance = Some(r.disturbance());
        let reasons = Disturbance::reasons_in(&r.to_json()).unwrap();
        assert_eq!(
            reasons,
            [
                "steal 6.0% of CPU",
                "other processes 0.55 cores (rustc 0.40, cc1plus 0.15)",
                "CPU frequency moved 33% (2000-3000 MHz)",
            ]
        );
        let clean = record(0.0, &[]);
        let mut clean2 = clean.clone();
        clean2.disturbance = Some(clean.disturbance());
        assert_eq!(Disturbance::reasons_in(&clean2.to_json()), None);
        assert_eq!(Disturbance::reasons_in(&clean.to_json()), None);
    }
}
