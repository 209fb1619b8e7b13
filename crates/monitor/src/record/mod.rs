//! [`MonitorRecord`]: what the monitor leaves for one trial — the series (one
//! value per sampling interval), their summaries over the measured window, the
//! CPU each request cost and where, the verdict, and what monitoring cost.
//! It is serialized into `TrialRecord::monitor`; reports read it back with
//! [`MonitorRecord::from_json`].
//!
//! - `per_request`: [`CpuPerRequest`] from a record, and the [`CostShift`]
//!   between two.
//! - `summary`: [`summarize`], a series into its [`Summary`] over a window.
//! - `disturbance`: [`Disturbance`], the noise around a trial and its thresholds.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::verdict::Verdict;

mod disturbance;
mod per_request;
mod summary;

pub(crate) use disturbance::FREQUENCY_NOT_EXPOSED;
pub use disturbance::{Disturbance, FREQUENCY_MOVED_MAX, OTHERS_CORES_MAX, STEAL_FRACTION_MAX};
pub use per_request::{CostShift, CpuPerRequest};
pub(crate) use summary::summarize;

/// Version of this record's layout, bumped on any incompatible change.
pub(crate) const SCHEMA: u32 = 1;

/// Names treated as the network path's user-space proxies (docker-proxy is
/// the loopback path of `docker run -p`; slirp4netns, rootlesskit,
/// rootlessport and pasta are rootless Docker's and Podman's).
const PROXIES: [&str; 6] = [
    "docker-proxy",
    "slirp4netns",
    "rootlesskit",
    "rootlessport",
    "pasta",
    "passt",
];

/// Whether a watched name is a user-space network proxy.
pub(crate) fn is_proxy(name: &str) -> bool {
    PROXIES.iter().any(|p| name.starts_with(p))
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MonitorRecord {
    pub schema: u32,
    /// Requested sampling interval.
    pub interval_ms: u64,
    /// When the first sample was taken.
    pub started_unix_s: f64,
    /// Online CPUs.
    pub cpus: u32,
    /// CPUs the server may use: online CPUs, narrowed by its affinity and its
    /// cgroup quota.
    pub server_cpu_capacity: f64,
    /// CPUs the generator may use (its affinity).
    pub generator_cpus_allowed: u32,
    /// What was measured as "the server" and "the generator", in words.
    pub server: String,
    pub generator: String,
    /// The host it was measured on, when that is not the machine tare ran
    /// on: a target on another host (`[target] host`, docs/remote.md) is
    /// monitored there, and every machine figure (busy, idle, softirq, the
    /// rest, the disturbance) is that host's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    pub series: Series,
    /// Summaries over [`MonitorRecord::window`] (the whole record until
    /// [`MonitorRecord::finish`] narrows it to the load's measured period).
    pub summary: Summary,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_request: Option<CpuPerRequest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// What else happened on the machine during the window (steal, other
    /// processes, frequency changes) and whether it disturbed the trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbance: Option<Disturbance>,
    pub sampler: SamplerCost,
    /// CPU seconds of every process no group follows, by name (kernel
    /// threads by family, `kworker/*`), over the whole record: what "the
    /// rest of the machine" was made of. A name that is a real share of a
    /// request's CPU gets its own part in [`CpuPerRequest`].
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub others_cpu_s: BTreeMap<String, f64>,
    /// Sources that could not be read (no conntrack module, a cgroup file
    /// missing…): the corresponding values are absent or zero.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// What the machine's CPU did over the window, below the process
    /// level: CPU seconds by component and kernel subsystem, and by
    /// function (docs/profiles.md). Absent when no profile could be taken
    /// (the reason is in `notes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::profile::Profile>,
    /// The profile's samples until [`MonitorRecord::finish`] knows the
    /// window (never stored).
    #[serde(skip)]
    pub profile_raw: Option<crate::profile::RawProfile>,
}

/// A period, in Unix seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Window {
    pub start_unix_s: f64,
    pub duration_s: f64,
}

/// One value per interval. CPU columns are in cores (CPU-seconds per second of
/// the interval); `*_per_s` are rates; the others are levels at the
/// interval's end or counts within it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// End of each interval, seconds after `started_unix_s`.
    pub t_s: Vec<f64>,
    /// Length of each interval in seconds.
    pub dt_s: Vec<f64>,
    pub machine_user: Vec<f64>,
    pub machine_system: Vec<f64>,
    pub machine_softirq: Vec<f64>,
    pub machine_irq: Vec<f64>,
    pub machine_iowait: Vec<f64>,
    pub machine_idle: Vec<f64>,
    pub machine_steal: Vec<f64>,
    pub server_user: Vec<f64>,
    pub server_system: Vec<f64>,
    pub generator: Vec<f64>,
    /// The monitor's own sampling thread.
    pub sampler: Vec<f64>,
    /// Busy CPU of everything else: busy − server − generator − sampler −
    /// watched processes (never below zero).
    pub rest: Vec<f64>,
    /// Watched processes by pattern (`docker-proxy`, `containerd-shim*`, …).
    pub watched: BTreeMap<String, Vec<f64>>,
    pub context_switches_per_s: Vec<f64>,
    pub server_rss_bytes: Vec<u64>,
    /// The server's cgroup memory (containers), page cache included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_cgroup_memory_bytes: Vec<u64>,
    pub server_write_bytes_per_s: Vec<f64>,
    pub page_cache_bytes: Vec<u64>,
    pub dirty_bytes: Vec<u64>,
    pub tcp_estab: Vec<u64>,
    pub tcp_timewait: Vec<u64>,
    pub tcp_inuse: Vec<u64>,
    pub tcp_orphan: Vec<u64>,
    pub tcp_opens_per_s: Vec<f64>,
    pub retrans_per_s: Vec<f64>,
    pub listen_overflows: Vec<u64>,
    pub listen_drops: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conntrack_entries: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conntrack_drops: Vec<u64>,
    /// Mean clock frequency over the CPUs at each interval's end, MHz;
    /// empty when the machine exposes none (most VMs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_mhz: Vec<f64>,
}

impl Series {
    pub fn len(&self) -> usize {
        self.t_s.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_s.is_empty()
    }
}

/// CPU-seconds over the window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuSeconds {
    pub machine_user: f64,
    pub machine_system: f64,
    pub machine_softirq: f64,
    pub machine_irq: f64,
    pub machine_iowait: f64,
    pub machine_idle: f64,
    pub machine_steal: f64,
    /// Everything but idle and iowait.
    pub machine_busy: f64,
    pub server: f64,
    pub server_user: f64,
    pub server_system: f64,
    pub generator: f64,
    pub sampler: f64,
    pub rest: f64,
    pub watched: BTreeMap<String, f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub duration_s: f64,
    pub intervals: usize,
    pub cpu_s: CpuSeconds,
    /// Idle (with iowait) share of all CPU time: 0 means no CPU was left.
    pub machine_idle_fraction: f64,
    /// Mean and peak CPU of the server and the generator, in cores.
    pub server_cores_mean: f64,
    pub server_cores_max: f64,
    pub generator_cores_mean: f64,
    pub context_switches: f64,
    pub server_rss_max_bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cgroup_memory_max_bytes: Option<u64>,
    /// Bytes the server's processes sent to storage (`/proc/<pid>/io`
    /// write_bytes): the access log's cost shows here.
    pub server_write_bytes: f64,
    /// Growth of the machine's page cache over the window (can be negative).
    pub page_cache_growth_bytes: i64,
    pub tcp_estab_max: u64,
    pub tcp_timewait_max: u64,
    pub tcp_opens: f64,
    pub retrans_segs: f64,
    pub listen_overflows: u64,
    pub listen_drops: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conntrack_entries_max: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conntrack_drops: Option<u64>,
    /// Lowest and highest mean CPU frequency sampled in the window, MHz;
    /// absent when the machine exposes none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_mhz_min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_mhz_max: Option<f64>,
    /// Where each group ran: `server`, `generator` and each watched group
    /// → CPU → share of the group's CPU time seen there (`process::CpusSeen`:
    /// sampled from `/proc/<pid>/stat`'s `processor`, weighed by the ticks
    /// used). Over the whole record, not narrowed to the window; a group
    /// that used no CPU is absent.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cpus_seen: BTreeMap<String, BTreeMap<u32, f64>>,
}

/// What monitoring itself cost: the sampling thread's CPU (RUSAGE_THREAD).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SamplerCost {
    pub samples: u64,
    pub cpu_s: f64,
    /// Mean and worst wall time of one sample, in microseconds.
    pub mean_sample_us: f64,
    pub max_sample_us: f64,
    /// `cpu_s` as a share of one CPU over the monitored time.
    pub cpu_fraction: f64,
}

impl MonitorRecord {
    /// Reads a record back from `TrialRecord::monitor`.
    pub fn from_json(v: &serde_json::Value) -> Result<MonitorRecord, serde_json::Error> {
        serde_json::from_value(v.clone())
    }

    /// The value to store in `TrialRecord::monitor`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// Narrows the summaries to a period (the load's measured period: its
    /// warm-up and the gaps before and after are left out). Intervals that
    /// straddle an edge count in proportion to their overlap. The series
    /// stay whole, so timelines still show the warm-up.
    pub fn clip(mut self, start_unix_s: f64, duration_s: f64) -> MonitorRecord {
        let w = Window {
            start_unix_s,
            duration_s,
        };
        let cpus_seen = std::mem::take(&mut self.summary.cpus_seen);
        self.summary = summarize(
            &self.series,
            Some((start_unix_s - self.started_unix_s, duration_s)),
        );
        // Sampled over the whole record only (see `Summary::cpus_seen`).
        self.summary.cpus_seen = cpus_seen;
        self.window = Some(w);
        self
    }

    /// What the runner calls after a trial: clip to the load's measured
    /// period, add CPU per request, the verdict and the disturbance.
    pub fn finish(self, load: &tare_record::LoadResult) -> MonitorRecord {
        let mut r = if load.duration_s > 0.0 && load.started_unix_s > 0.0 {
            self.clip(load.started_unix_s, load.duration_s)
        } else {
            self
        };
        if let Some(raw) = r.profile_raw.take() {
            let window = r.window.map(|w| (w.start_unix_s, w.duration_s));
            r.profile = Some(raw.build(window));
        }
        r.per_request = Some(r.per_request(load.requests));
        r.verdict = Some(crate::verdict::verdict(&r, load));
        r.disturbance = Some(r.disturbance());
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four 0.5 s intervals: the server at 1 core, docker-proxy at 0.5.
    fn series() -> Series {
        let n = 4;
        let mut s = Series {
            t_s: vec![0.5, 1.0, 1.5, 2.0],
            dt_s: vec![0.5; n],
            machine_user: vec![1.0; n],
            machine_system: vec![0.8; n],
            machine_softirq: vec![0.2; n],
            machine_irq: vec![0.0; n],
            machine_iowait: vec![0.0; n],
            machine_idle: vec![0.0; n],
            machine_steal: vec![0.0; n],
            server_user: vec![0.6; n],
            server_system: vec![0.4; n],
            generator: vec![0.4; n],
            sampler: vec![0.001; n],
            rest: vec![0.099; n],
            page_cache_bytes: vec![100, 200, 300, 400],
            listen_overflows: vec![0, 2, 0, 0],
            ..Default::default()
        };
        s.watched.insert("docker-proxy".into(), vec![0.5; n]);
        s
    }

    #[test]
    fn per_request_splits_the_machine_cost() {
        let r = MonitorRecord {
            summary: summarize(&series(), None),
            ..Default::default()
        };
        assert!((r.summary.cpu_s.machine_busy - 4.0).abs() < 1e-9);
        let p = r.per_request(100_000);
        // 2 s × 1 core / 100k requests = 20 µs.
        assert!((p.server_us - 20.0).abs() < 1e-6, "{p:?}");
        assert!((p.proxy_us - 10.0).abs() < 1e-6);
        assert!((p.network_us - 14.0).abs() < 1e-6);
        assert!((p.machine_us - 40.0).abs() < 1e-6);
        let parts: f64 = p.parts().iter().map(|(_, v)| v).sum();
        assert!(
            (parts - p.machine_us).abs() < 1e-6,
            "{parts} vs {}",
            p.machine_us
        );
    }

    /// A process outside every group that takes a real
    /// share of a request's CPU (fuse-overlayfs serving a container's files)
    /// is its own part, not "the rest of the machine".
    #[test]
    fn a_costly_process_is_split_out_of_the_rest() {
        let mut s = series();
        s.rest = vec![0.5; 4];
        let mut r = MonitorRecord {
            summary: summarize(&s, None),
            series: s,
            ..Default::default()
        };
        r.others_cpu_s.insert("fuse-overlayfs".into(), 0.6);
        r.others_cpu_s.insert("cron".into(), 0.01);
        let p = r.per_request(100_000);
        // rest 2 s × 0.5 = 1 s = 10 µs; fuse-overlayfs 0.6 s = 6 µs, over
        // 10% of the machine's 40 µs; cron's 0.1 µs stays in the rest.
        assert!((p.watched_us["fuse-overlayfs"] - 6.0).abs() < 1e-6, "{p:?}");
        assert!(!p.watched_us.contains_key("cron"));
        assert!((p.rest_us - 4.0).abs() < 1e-6, "{p:?}");
        // Narrowed to half the record, it takes half.
        let half = r.clone().clip(r.started_unix_s + 0.5, 1.0);
        let p = half.per_request(50_000);
        assert!((p.watched_us["fuse-overlayfs"] - 6.0).abs() < 1e-6, "{p:?}");
    }

    #[test]
    fn clipping_weighs_straddling_intervals() {
        let r = MonitorRecord {
            started_unix_s: 1000.0,
            series: series(),
            ..Default::default()
        };
        // Window 0.75..1.75 s: half of the 2nd and 4th intervals, all of the 3rd.
        let r = r.clip(1000.75, 1.0);
        assert!((r.summary.duration_s - 1.0).abs() < 1e-9, "{:?}", r.summary);
        assert!((r.summary.cpu_s.server - 1.0).abs() < 1e-9);
        assert_eq!(r.summary.listen_overflows, 1);
        // Page cache: from the end of the 1st interval to the end of the 4th.
        assert_eq!(r.summary.page_cache_growth_bytes, 300);
        assert_eq!(r.series.len(), 4, "series are kept whole");
    }

    #[test]
    fn clipping_keeps_where_the_groups_ran_and_old_records_read() {
        let mut r = MonitorRecord {
            started_unix_s: 1000.0,
            series: series(),
            ..Default::default()
        };
        r.summary
            .cpus_seen
            .insert("docker-proxy".into(), BTreeMap::from([(0, 0.7), (1, 0.3)]));
        let clipped = r.clone().clip(1000.75, 1.0);
        assert_eq!(clipped.summary.cpus_seen, r.summary.cpus_seen);
        let mut old = r.to_json();
        old["summary"].as_object_mut().unwrap().remove("cpus_seen");
        let back = MonitorRecord::from_json(&old).unwrap();
        assert!(back.summary.cpus_seen.is_empty());
        let back = MonitorRecord::from_json(&r.to_json()).unwrap();
        assert_eq!(back.summary.cpus_seen, r.summary.cpus_seen);
    }

    #[test]
    fn json_round_trip() {
        let r = MonitorRecord {
            schema: SCHEMA,
            series: series(),
            summary: summarize(&series(), None),
            ..Default::default()
        };
        let back = MonitorRecord::from_json(&r.to_json()).unwrap();
        assert_eq!(back, r);
    }
}
