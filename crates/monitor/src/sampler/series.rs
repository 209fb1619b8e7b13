//! Two consecutive readings into one interval of every series: increments
//! of cumulative counters (never negative, see [`HighWater`]) as rates or
//! shares of a CPU, and levels as read.

use std::time::Instant;

use crate::net::NetReading;
use crate::record::Series;

use super::Raw;

/// Turns consecutive cumulative values into non-negative increments; a
/// value that dips (a process exited before its parent reaped it) and comes
/// back is not counted twice.
#[derive(Default)]
pub(super) struct HighWater(Vec<f64>);

impl HighWater {
    /// Starts every mark at the first reading's value (see `push`'s indexes).
    pub(super) fn seed(&mut self, first: &Raw, patterns: &[String]) {
        self.step(0, first.server_user_s);
        self.step(1, first.server_system_s);
        self.step(2, first.generator_s);
        self.step(3, first.sampler_s);
        self.step(4, first.server_write as f64);
        for i in 0..patterns.len() {
            self.step(10 + i, first.watched_s.get(i).copied().unwrap_or(0.0));
        }
    }

    fn step(&mut self, i: usize, v: f64) -> f64 {
        if self.0.len() <= i {
            self.0.resize(i + 1, 0.0);
        }
        let d = (v - self.0[i]).max(0.0);
        self.0[i] = self.0[i].max(v);
        d
    }
}

pub(super) fn push(
    series: &mut Series,
    hw: &mut HighWater,
    prev: &Raw,
    now: &Raw,
    patterns: &[String],
    hz: f64,
    first: Instant,
) {
    let (Some(t0), Some(t1)) = (prev.at, now.at) else {
        return;
    };
    let dt = (t1 - t0).as_secs_f64();
    if dt <= 0.0 {
        return;
    }
    let m = now.cpu.modes.since(&prev.cpu.modes);
    let cores = |ticks: u64| ticks as f64 / hz / dt;
    series.t_s.push((t1 - first).as_secs_f64());
    series.dt_s.push(dt);
    series.machine_user.push(cores(m.user + m.nice));
    series.machine_system.push(cores(m.system));
    series.machine_softirq.push(cores(m.softirq));
    series.machine_irq.push(cores(m.irq));
    series.machine_iowait.push(cores(m.iowait));
    series.machine_idle.push(cores(m.idle));
    series.machine_steal.push(cores(m.steal));
    let su = hw.step(0, now.server_user_s) / dt;
    let ss = hw.step(1, now.server_system_s) / dt;
    let gen = hw.step(2, now.generator_s) / dt;
    let smp = hw.step(3, now.sampler_s) / dt;
    series.server_user.push(su);
    series.server_system.push(ss);
    series.generator.push(gen);
    series.sampler.push(smp);
    let mut watched_sum = 0.0;
    for (i, p) in patterns.iter().enumerate() {
        let w = hw.step(10 + i, now.watched_s.get(i).copied().unwrap_or(0.0)) / dt;
        watched_sum += w;
        match series.watched.get_mut(p) {
            Some(col) => col.push(w),
            None => {
                series.watched.insert(p.clone(), vec![w]);
            }
        }
    }
    let busy = cores(m.busy());
    series
        .rest
        .push((busy - su - ss - gen - smp - watched_sum).max(0.0));
    series
        .context_switches_per_s
        .push(now.cpu.ctxt.saturating_sub(prev.cpu.ctxt) as f64 / dt);
    series.server_rss_bytes.push(now.server_rss);
    if let Some(mem) = now.server_cgroup_mem {
        series.server_cgroup_memory_bytes.push(mem);
    }
    series
        .server_write_bytes_per_s
        .push(hw.step(4, now.server_write as f64) / dt);
    series.page_cache_bytes.push(now.mem.cached);
    series.dirty_bytes.push(now.mem.dirty);
    let both = |f: fn(&NetReading) -> u64, r: &Raw| f(&r.net) + r.net_server.as_ref().map_or(0, f);
    let delta = |f: fn(&NetReading) -> u64| both(f, now).saturating_sub(both(f, prev));
    series.tcp_estab.push(both(|n| n.estab, now));
    series.tcp_timewait.push(both(|n| n.timewait, now));
    series.tcp_inuse.push(both(|n| n.inuse, now));
    series.tcp_orphan.push(both(|n| n.orphan, now));
    series.tcp_opens_per_s.push(delta(|n| n.opens) as f64 / dt);
    series
        .retrans_per_s
        .push(delta(|n| n.retrans_segs) as f64 / dt);
    series.listen_overflows.push(delta(|n| n.listen_overflows));
    series.listen_drops.push(delta(|n| n.listen_drops));
    if let Some(mhz) = now.cpu_mhz {
        series.cpu_mhz.push(mhz);
    }
    if let (Some(a), Some(b)) = (&prev.conntrack, &now.conntrack) {
        series.conntrack_entries.push(b.entries);
        series
            .conntrack_drops
            .push((b.drops + b.insert_failed).saturating_sub(a.drops + a.insert_failed));
    }
}
