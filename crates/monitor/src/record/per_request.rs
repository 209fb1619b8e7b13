//! CPU per request: a record's CPU seconds over its window divided among
//! the completed requests, by where they were spent ([`CpuPerRequest`]), and
//! how that moved between two records ([`CostShift`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{is_proxy, MonitorRecord};

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
    /// The profile's CPU per request: component (as in [`Self::parts`]:
    /// `server`, `generator`, `docker-proxy`, `rest of the machine`...) →
    /// subsystem (`TCP/IP`, `netfilter`, `user space`...) → µs
    /// (docs/profiles.md). Empty without a profile.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub profile_us: BTreeMap<String, BTreeMap<String, f64>>,
    /// The profile's top functions (a kernel function, `[comm]` for a
    /// process's user space) → µs per request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub functions_us: BTreeMap<String, f64>,
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

    /// The profile's µs per request by subsystem, over all components.
    pub fn subsystems_us(&self) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for by in self.profile_us.values() {
            for (s, v) in by {
                *out.entry(s.clone()).or_default() += v;
            }
        }
        out
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
/// difference landed ("placement=A → placement=B: +9.0 µs/request, 70% of it in docker-proxy").
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
        self.write_scaled(f, 1.0, "µs/request")
    }
}

impl CostShift {
    /// The shift in words with its figures divided by `scale` and the
    /// total labelled `label` (`"ms/run"` with a scale of 1000 for a
    /// benchmark program's runs): "+9.0 µs/request, 70% of it in
    /// docker-proxy".
    pub fn describe(&self, scale: f64, label: &str) -> String {
        let mut out = String::new();
        let _ = self.write_scaled(&mut out, scale, label);
        out
    }

    fn write_scaled(
        &self,
        f: &mut impl std::fmt::Write,
        scale: f64,
        label: &str,
    ) -> std::fmt::Result {
        let total = self.total_us / scale;
        write!(f, "{total:+.1} {label}")?;
        // Name the part that moved the same way as the total and most. A
        // share is only meaningful when the total is clearly not zero and
        // that part does not exceed it (parts can move against each other).
        let top = self
            .parts
            .iter()
            .find(|(_, d)| d.signum() == self.total_us.signum() && d.abs() > 0.0);
        if let Some((name, d)) = top {
            let share = d / self.total_us * 100.0;
            if total.abs() >= 0.5 && share <= 100.0 {
                write!(f, ", {share:.0}% of it in {name}")?;
            } else {
                write!(f, " (largest move: {name} {:+.1})", d / scale)?;
            }
        }
        Ok(())
    }
}

/// A process outside every group whose CPU per request is at least this
/// share of the machine's gets its own part instead of hiding in "the rest".
const SPLIT_OUT: f64 = 0.10;

impl MonitorRecord {
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
        let mut watched_us: BTreeMap<String, f64> =
            c.watched.iter().map(|(k, v)| (k.clone(), us(*v))).collect();
        let mut rest_us = us(c.rest);
        let machine_us = us(c.machine_busy);
        // The census covers the whole record; the summary may be narrowed to
        // the load's measured period: take the same share of it.
        let recorded: f64 = self.series.dt_s.iter().sum();
        let share = if recorded > 0.0 {
            (self.summary.duration_s / recorded).clamp(0.0, 1.0)
        } else {
            1.0
        };
        for (name, cpu_s) in &self.others_cpu_s {
            let cost = us(cpu_s * share);
            if cost >= SPLIT_OUT * machine_us && !watched_us.contains_key(name) && cost > 0.0 {
                let taken = cost.min(rest_us);
                watched_us.insert(name.clone(), taken);
                rest_us -= taken;
            }
        }
        CpuPerRequest {
            requests,
            server_us: us(c.server),
            generator_us: us(c.generator),
            softirq_us: us(c.machine_softirq),
            proxy_us: us(proxy),
            network_us: us(c.machine_softirq + proxy),
            watched_us,
            sampler_us: us(c.sampler),
            rest_us,
            machine_us,
            profile_us: self
                .profile
                .as_ref()
                .map(|p| {
                    p.cpu_s
                        .iter()
                        .map(|(c, by)| {
                            (
                                c.clone(),
                                by.iter().map(|(s, v)| (s.clone(), us(*v))).collect(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default(),
            functions_us: self
                .profile
                .as_ref()
                .map(|p| {
                    p.functions_cpu_s
                        .iter()
                        .map(|(f, v)| (f.clone(), us(*v)))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // A run of a benchmark program: the same shift in ms per run.
        let runs = CostShift {
            total_us: 9_000_000.0,
            parts: vec![("fuse-overlayfs".into(), 6_300_000.0)],
        };
        assert_eq!(
            runs.describe(1e3, "ms/run"),
            "+9000.0 ms/run, 70% of it in fuse-overlayfs"
        );
        let small = CostShift {
            total_us: 300.0,
            parts: vec![("kworker".into(), 900.0)],
        };
        assert_eq!(
            small.describe(1e3, "ms/run"),
            "+0.3 ms/run (largest move: kworker +0.9)"
        );
    }
}
