//! [`MonitorRecord`]: what the monitor leaves for one trial — the series (one
//! value per sampling interval), their summaries over the measured window, the
//! CPU each request cost and where, the verdict, and what monitoring cost.
//! It is serialized into `TrialRecord::monitor`; reports read it back with
//! [`MonitorRecord::from_json`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::verdict::Verdict;

/// Version of this record's layout, bumped on any incompatible change.
pub const SCHEMA: u32 = 1;

/// Names treated as the network path's user-space proxies (docker-proxy is
/// the loopback path of `docker run -p`; slirp4netns/rootlesskit/pasta are
/// rootless Docker/Podman's).
const PROXIES: [&str; 4] = ["docker-proxy", "slirp4netns", "rootlesskit", "pasta"];

/// Whether a watched name is a user-space network proxy.
pub fn is_proxy(name: &str) -> bool {
    PROXIES.iter().any(|p| name.starts_with(p))
}

/// ksoftirqd runs softirqs; its time is already inside the machine's softirq
/// time, so it is shown but never added to the network path again.
pub fn is_softirq_thread(name: &str) -> bool {
    name.starts_with("ksoftirqd")
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
    pub sampler: SamplerCost,
    /// Sources that could not be read (no conntrack module, a cgroup file
    /// missing…): the corresponding values are absent or zero.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
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

/// CPU microseconds per completed request, by where they were spent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuPerRequest {
    pub requests: u64,
    pub server_us: f64,
    pub generator_us: f64,
    /// Machine-wide softirq time (packet processing). Under tick accounting
    /// (no CONFIG_IRQ_TIME_ACCOUNTING) these ticks are also billed to the task
    /// they interrupted, so this overlaps server and generator system time.
    pub softirq_us: f64,
    /// User-space proxies (docker-proxy and the like).
    pub proxy_us: f64,
    /// The network path: softirq + proxies.
    pub network_us: f64,
    /// Each watched process pattern.
    pub watched_us: BTreeMap<String, f64>,
    pub sampler_us: f64,
    pub rest_us: f64,
    /// All busy CPU of the machine per request: what one request costs the
    /// machine, wherever it was spent.
    pub machine_us: f64,
}

impl CpuPerRequest {
    /// Disjoint parts of `machine_us` (softirq is not one: it overlaps).
    pub fn parts(&self) -> Vec<(String, f64)> {
        let mut v = vec![
            ("server".to_string(), self.server_us),
            ("generator".to_string(), self.generator_us),
        ];
        v.extend(self.watched_us.iter().map(|(k, x)| (k.clone(), *x)));
        v.push(("sampler".into(), self.sampler_us));
        v.push(("rest of the machine".into(), self.rest_us));
        v
    }

    /// One line for a terminal table cell.
    pub fn short(&self) -> String {
        format!(
            "server {:.1} · generator {:.1} · network {:.1} µs/req",
            self.server_us, self.generator_us, self.network_us
        )
    }
}

/// How a change of factor moved the machine's CPU per request, and where the
/// difference landed ("docker-publish: +9.0 µs/request, 70% of it in docker-proxy").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostShift {
    pub total_us: f64,
    /// (part, µs per request), largest change first.
    pub parts: Vec<(String, f64)>,
}

impl CostShift {
    pub fn between(from: &CpuPerRequest, to: &CpuPerRequest) -> CostShift {
        let a: BTreeMap<String, f64> = from.parts().into_iter().collect();
        let b: BTreeMap<String, f64> = to.parts().into_iter().collect();
        let mut parts: Vec<(String, f64)> = a
            .keys()
            .chain(b.keys())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .map(|k| {
                (
                    k.clone(),
                    b.get(k).unwrap_or(&0.0) - a.get(k).unwrap_or(&0.0),
                )
            })
            .collect();
        parts.sort_by(|x, y| y.1.abs().total_cmp(&x.1.abs()));
        CostShift {
            total_us: to.machine_us - from.machine_us,
            parts,
        }
    }
}

impl std::fmt::Display for CostShift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:+.1} µs/request", self.total_us)?;
        // Name the part that moved the same way as the total and most. A
        // share is only meaningful when the total is clearly not zero and
        // that part does not exceed it (parts can move against each other).
        let top = self
            .parts
            .iter()
            .find(|(_, d)| d.signum() == self.total_us.signum() && d.abs() > 0.0);
        if let Some((name, d)) = top {
            let share = d / self.total_us * 100.0;
            if self.total_us.abs() >= 0.5 && share <= 100.0 {
                write!(f, ", {share:.0}% of it in {name}")?;
            } else {
                write!(f, " (largest move: {name} {d:+.1})")?;
            }
        }
        Ok(())
    }
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
        self.summary = summarize(
            &self.series,
            Some((start_unix_s - self.started_unix_s, duration_s)),
        );
        self.window = Some(w);
        self
    }

    /// CPU per request over the summary's window, for `requests` completed
    /// requests (the load result's count for the same window).
    pub fn per_request(&self, requests: u64) -> CpuPerRequest {
        let c = &self.summary.cpu_s;
        let n = requests.max(1) as f64;
        let us = |s: f64| s * 1e6 / n;
        let proxy: f64 = c
            .watched
            .iter()
            .filter(|(k, _)| is_proxy(k))
            .map(|(_, v)| v)
            .sum();
        CpuPerRequest {
            requests,
            server_us: us(c.server),
            generator_us: us(c.generator),
            softirq_us: us(c.machine_softirq),
            proxy_us: us(proxy),
            network_us: us(c.machine_softirq + proxy),
            watched_us: c.watched.iter().map(|(k, v)| (k.clone(), us(*v))).collect(),
            sampler_us: us(c.sampler),
            rest_us: us(c.rest),
            machine_us: us(c.machine_busy),
        }
    }

    /// What the runner calls after a trial: clip to the load's measured
    /// period, add CPU per request and the verdict.
    pub fn finish(self, load: &tare_record::LoadResult) -> MonitorRecord {
        let mut r = if load.duration_s > 0.0 && load.started_unix_s > 0.0 {
            self.clip(load.started_unix_s, load.duration_s)
        } else {
            self
        };
        r.per_request = Some(r.per_request(load.requests));
        r.verdict = Some(crate::verdict::verdict(&r, load));
        r
    }
}

/// Summaries over `window` = (start, length) in seconds after the first
/// sample, or over everything.
pub fn summarize(s: &Series, window: Option<(f64, f64)>) -> Summary {
    let n = s.len();
    let weight = |i: usize| -> f64 {
        let (end, dt) = (s.t_s[i], s.dt_s[i]);
        match window {
            None => 1.0,
            Some((w0, wlen)) if dt > 0.0 => {
                let lo = (end - dt).max(w0);
                let hi = end.min(w0 + wlen);
                ((hi - lo) / dt).clamp(0.0, 1.0)
            }
            Some(_) => 0.0,
        }
    };
    let weights: Vec<f64> = (0..n).map(weight).collect();
    let inside: Vec<usize> = (0..n).filter(|&i| weights[i] > 0.0).collect();
    let sum = |col: &[f64]| -> f64 {
        inside
            .iter()
            .map(|&i| col.get(i).unwrap_or(&0.0) * s.dt_s[i] * weights[i])
            .sum()
    };
    let max_u = |col: &[u64]| {
        inside
            .iter()
            .filter_map(|&i| col.get(i))
            .copied()
            .max()
            .unwrap_or(0)
    };
    let count_u = |col: &[u64]| -> u64 {
        inside
            .iter()
            .map(|&i| (*col.get(i).unwrap_or(&0) as f64 * weights[i]).round() as u64)
            .sum()
    };
    let duration: f64 = inside.iter().map(|&i| s.dt_s[i] * weights[i]).sum();

    let busy = sum(&s.machine_user)
        + sum(&s.machine_system)
        + sum(&s.machine_softirq)
        + sum(&s.machine_irq)
        + sum(&s.machine_steal);
    let idle = sum(&s.machine_idle) + sum(&s.machine_iowait);
    let cpu = CpuSeconds {
        machine_user: sum(&s.machine_user),
        machine_system: sum(&s.machine_system),
        machine_softirq: sum(&s.machine_softirq),
        machine_irq: sum(&s.machine_irq),
        machine_iowait: sum(&s.machine_iowait),
        machine_idle: sum(&s.machine_idle),
        machine_steal: sum(&s.machine_steal),
        machine_busy: busy,
        server: sum(&s.server_user) + sum(&s.server_system),
        server_user: sum(&s.server_user),
        server_system: sum(&s.server_system),
        generator: sum(&s.generator),
        sampler: sum(&s.sampler),
        rest: sum(&s.rest),
        watched: s.watched.iter().map(|(k, v)| (k.clone(), sum(v))).collect(),
    };
    let server_cores: Vec<f64> = inside
        .iter()
        .map(|&i| s.server_user.get(i).unwrap_or(&0.0) + s.server_system.get(i).unwrap_or(&0.0))
        .collect();
    let level_growth = |col: &[u64]| -> i64 {
        match (inside.first(), inside.last()) {
            // The level just before the window: the previous interval's end.
            (Some(&a), Some(&b)) => {
                let before = if a > 0 { col.get(a - 1) } else { col.get(a) };
                *col.get(b).unwrap_or(&0) as i64 - *before.unwrap_or(&0) as i64
            }
            _ => 0,
        }
    };
    Summary {
        duration_s: duration,
        intervals: inside.len(),
        machine_idle_fraction: if busy + idle > 0.0 {
            idle / (busy + idle)
        } else {
            0.0
        },
        server_cores_mean: if duration > 0.0 {
            cpu.server / duration
        } else {
            0.0
        },
        server_cores_max: server_cores.iter().copied().fold(0.0, f64::max),
        generator_cores_mean: if duration > 0.0 {
            cpu.generator / duration
        } else {
            0.0
        },
        cpu_s: cpu,
        context_switches: sum(&s.context_switches_per_s),
        server_rss_max_bytes: max_u(&s.server_rss_bytes),
        server_cgroup_memory_max_bytes: (!s.server_cgroup_memory_bytes.is_empty())
            .then(|| max_u(&s.server_cgroup_memory_bytes)),
        server_write_bytes: sum(&s.server_write_bytes_per_s),
        page_cache_growth_bytes: level_growth(&s.page_cache_bytes),
        tcp_estab_max: max_u(&s.tcp_estab),
        tcp_timewait_max: max_u(&s.tcp_timewait),
        tcp_opens: sum(&s.tcp_opens_per_s),
        retrans_segs: sum(&s.retrans_per_s),
        listen_overflows: count_u(&s.listen_overflows),
        listen_drops: count_u(&s.listen_drops),
        conntrack_entries_max: (!s.conntrack_entries.is_empty())
            .then(|| max_u(&s.conntrack_entries)),
        conntrack_drops: (!s.conntrack_drops.is_empty()).then(|| count_u(&s.conntrack_drops)),
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
    fn cost_shift_names_where_the_cost_went() {
        let base = CpuPerRequest {
            server_us: 20.0,
            generator_us: 15.0,
            rest_us: 1.0,
            machine_us: 36.0,
            ..Default::default()
        };
        let mut publish = base.clone();
        publish.watched_us.insert("docker-proxy".into(), 6.3);
        publish.rest_us = 1.9;
        publish.server_us = 21.8;
        publish.machine_us = 45.0;
        let shift = CostShift::between(&base, &publish);
        assert_eq!(shift.parts[0].0, "docker-proxy");
        assert_eq!(
            shift.to_string(),
            "+9.0 µs/request, 70% of it in docker-proxy"
        );
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
