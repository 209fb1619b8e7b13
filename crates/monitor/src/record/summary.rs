//! Summaries of a series over a window: the trial's measured period, with
//! intervals that straddle an edge weighed by their overlap.

use super::{CpuSeconds, Series, Summary};

/// Summaries over `window` = (start, length) in seconds after the first
/// sample, or over everything.
pub(crate) fn summarize(s: &Series, window: Option<(f64, f64)>) -> Summary {
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
    let mhz: Vec<f64> = inside
        .iter()
        .filter_map(|&i| s.cpu_mhz.get(i))
        .copied()
        .collect();
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
        cpu_mhz_min: mhz.iter().copied().reduce(f64::min),
        cpu_mhz_max: mhz.iter().copied().reduce(f64::max),
        // Not a series: the sampler sets it over the whole record.
        cpus_seen: Default::default(),
    }
}
