//! Summaries of a series over a window: the trial's measured period, with
//! intervals that straddle an edge weighed by their overlap.

use super::{CpuSeconds, Series, Summary};

/// The intervals of a series inside a window, each with the share of it
/// that overlaps the window.
struct Window<'a> {
    s: &'a Series,
    weights: Vec<f64>,
    inside: Vec<usize>,
}

impl<'a> Window<'a> {
    /// `window` = (start, length) in seconds after the first sample, or
    /// everything.
    fn new(s: &'a Series, window: Option<(f64, f64)>) -> Self {
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
        let weights: Vec<f64> = (0..s.len()).map(weight).collect();
        let inside: Vec<usize> = (0..s.len()).filter(|&i| weights[i] > 0.0).collect();
        Window { s, weights, inside }
    }

    /// A rate column's total over the window.
    fn sum(&self, col: &[f64]) -> f64 {
        (self.inside.iter())
            .map(|&i| col.get(i).unwrap_or(&0.0) * self.s.dt_s[i] * self.weights[i])
            .sum()
    }

    /// A level column's highest value in the window.
    fn max_u(&self, col: &[u64]) -> u64 {
        (self.inside.iter())
            .filter_map(|&i| col.get(i))
            .copied()
            .max()
            .unwrap_or(0)
    }

    /// A count column's total over the window.
    fn count_u(&self, col: &[u64]) -> u64 {
        (self.inside.iter())
            .map(|&i| (*col.get(i).unwrap_or(&0) as f64 * self.weights[i]).round() as u64)
            .sum()
    }

    /// How much a level column grew over the window.
    fn level_growth(&self, col: &[u64]) -> i64 {
        match (self.inside.first(), self.inside.last()) {
            // The level just before the window: the previous interval's end.
            (Some(&a), Some(&b)) => {
                let before = if a > 0 { col.get(a - 1) } else { col.get(a) };
                *col.get(b).unwrap_or(&0) as i64 - *before.unwrap_or(&0) as i64
            }
            _ => 0,
        }
    }

    /// The seconds of the series inside the window.
    fn duration(&self) -> f64 {
        (self.inside.iter())
            .map(|&i| self.s.dt_s[i] * self.weights[i])
            .sum()
    }

    /// The CPU columns' seconds over the window.
    fn cpu(&self) -> CpuSeconds {
        let s = self.s;
        let sum = |col: &[f64]| self.sum(col);
        CpuSeconds {
            machine_user: sum(&s.machine_user),
            machine_system: sum(&s.machine_system),
            machine_softirq: sum(&s.machine_softirq),
            machine_irq: sum(&s.machine_irq),
            machine_iowait: sum(&s.machine_iowait),
            machine_idle: sum(&s.machine_idle),
            machine_steal: sum(&s.machine_steal),
            machine_busy: sum(&s.machine_user)
                + sum(&s.machine_system)
                + sum(&s.machine_softirq)
                + sum(&s.machine_irq)
                + sum(&s.machine_steal),
            server: sum(&s.server_user) + sum(&s.server_system),
            server_user: sum(&s.server_user),
            server_system: sum(&s.server_system),
            generator: sum(&s.generator),
            sampler: sum(&s.sampler),
            rest: sum(&s.rest),
            watched: s.watched.iter().map(|(k, v)| (k.clone(), sum(v))).collect(),
        }
    }
}

/// Summaries over `window` = (start, length) in seconds after the first
/// sample, or over everything.
pub(crate) fn summarize(s: &Series, window: Option<(f64, f64)>) -> Summary {
    let w = Window::new(s, window);
    let duration = w.duration();
    let cpu = w.cpu();
    let busy = cpu.machine_busy;
    let idle = cpu.machine_idle + cpu.machine_iowait;
    let server_cores: Vec<f64> = (w.inside.iter())
        .map(|&i| s.server_user.get(i).unwrap_or(&0.0) + s.server_system.get(i).unwrap_or(&0.0))
        .collect();
    let mhz: Vec<f64> = (w.inside.iter())
        .filter_map(|&i| s.cpu_mhz.get(i))
        .copied()
        .collect();
    Summary {
        duration_s: duration,
        intervals: w.inside.len(),
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
        context_switches: w.sum(&s.context_switches_per_s),
        server_rss_max_bytes: w.max_u(&s.server_rss_bytes),
        server_cgroup_memory_max_bytes: (!s.server_cgroup_memory_bytes.is_empty())
            .then(|| w.max_u(&s.server_cgroup_memory_bytes)),
        server_write_bytes: w.sum(&s.server_write_bytes_per_s),
        page_cache_growth_bytes: w.level_growth(&s.page_cache_bytes),
        tcp_estab_max: w.max_u(&s.tcp_estab),
        tcp_timewait_max: w.max_u(&s.tcp_timewait),
        tcp_opens: w.sum(&s.tcp_opens_per_s),
        retrans_segs: w.sum(&s.retrans_per_s),
        listen_overflows: w.count_u(&s.listen_overflows),
        listen_drops: w.count_u(&s.listen_drops),
        conntrack_entries_max: (!s.conntrack_entries.is_empty())
            .then(|| w.max_u(&s.conntrack_entries)),
        conntrack_drops: (!s.conntrack_drops.is_empty()).then(|| w.count_u(&s.conntrack_drops)),
        cpu_mhz_min: mhz.iter().copied().reduce(f64::min),
        cpu_mhz_max: mhz.iter().copied().reduce(f64::max),
        // Not a series: the sampler sets it over the whole record.
        cpus_seen: Default::default(),
    }
}
