//! The sampling thread: opens every source once, then reads them all every
//! interval and turns consecutive readings into the series.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tare_engine::cpu::CpuTime;

use crate::cgroup::{self, CgroupFiles, Layout};
use crate::conntrack::{ConntrackFiles, ConntrackReading};
use crate::net::{self, NetFiles, NetReading};
use crate::proc_stat::{self, MachineCpu, MachineFiles, MemInfo};
use crate::process::{self, Group, Rule};
use crate::record::{self, MonitorRecord, SamplerCost, Series};
use crate::{GeneratorRef, MonitorError, MonitorSpec, ServerRef};

/// How often process groups look for new members (children forked, a
/// docker-proxy started). Finding them is a directory walk, so it is done
/// less often than sampling; a member found late still counts from its birth.
const REDISCOVER_TREE: Duration = Duration::from_millis(500);
const REDISCOVER_NAMED: Duration = Duration::from_secs(1);

enum ServerSource {
    Procs(Group),
    Cgroup { files: CgroupFiles, procs: Group },
}

struct Sources {
    machine: MachineFiles,
    server: ServerSource,
    generator: Group,
    /// The generator is this process: subtract the sampler's own CPU.
    generator_is_self: bool,
    watched: Vec<(String, Group)>,
    net_host: Option<NetFiles>,
    net_server: Option<NetFiles>,
    conntrack: Option<ConntrackFiles>,
    hz: f64,
    page: u64,
    notes: Vec<String>,
    server_desc: String,
    generator_desc: String,
    server_capacity: f64,
    generator_allowed: u32,
}

/// One reading of everything; cumulative values are since the monitor started.
#[derive(Clone, Default)]
struct Raw {
    at: Option<Instant>,
    cpu: MachineCpu,
    mem: MemInfo,
    server_user_s: f64,
    server_system_s: f64,
    server_rss: u64,
    server_write: u64,
    server_cgroup_mem: Option<u64>,
    generator_s: f64,
    sampler_s: f64,
    watched_s: Vec<f64>,
    net: NetReading,
    net_server: Option<NetReading>,
    conntrack: Option<ConntrackReading>,
}

fn io_err(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> MonitorError {
    let context = context.into();
    move |source| MonitorError::Io { context, source }
}

/// Count of CPUs in a `Cpus_allowed_list` such as `0-3,6`.
fn count_cpus(list: &str) -> u32 {
    list.trim()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|r| match r.split_once('-') {
            Some((a, b)) => {
                b.parse::<u32>()
                    .unwrap_or(0)
                    .saturating_sub(a.parse().unwrap_or(0))
                    + 1
            }
            None => 1,
        })
        .sum()
}

fn cpus_allowed(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(count_cpus)
}

impl Sources {
    fn open(spec: &MonitorSpec) -> Result<Sources, MonitorError> {
        let hz = proc_stat::ticks_per_second();
        let started = process::boot_ticks_now(hz);
        let me = std::process::id();
        let mut machine = MachineFiles::open().map_err(io_err("opening /proc/stat"))?;
        let cpus = machine
            .cpu()
            .map_err(io_err("reading /proc/stat"))?
            .cpus
            .max(1);
        let mut notes = Vec::new();

        let (server, server_desc, first_pid) = match &spec.server {
            ServerRef::Pids(pids) => {
                if let Some(p) = pids
                    .iter()
                    .find(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
                {
                    return Err(MonitorError::NoServer(*p));
                }
                let g = Group::new(Rule::Tree(pids.clone()), started, &[me])
                    .map_err(io_err("reading the server's processes"))?;
                let desc = format!("pids {pids:?} and their descendants");
                (ServerSource::Procs(g), desc, pids.first().copied())
            }
            ServerRef::Threads(prefix) => {
                let g = Group::new(
                    Rule::Threads {
                        pid: me,
                        prefix: prefix.clone(),
                    },
                    started,
                    &[],
                )
                .map_err(io_err("reading this process's threads"))?;
                (
                    ServerSource::Procs(g),
                    format!("threads {prefix}* of this process"),
                    None,
                )
            }
            r => {
                let layout = match r {
                    ServerRef::Cgroup(p) => cgroup::of_path(p),
                    ServerRef::Container(id) => cgroup::of_container(id),
                    ServerRef::CgroupOf(pid) => cgroup::of_pid(*pid),
                    _ => unreachable!("handled above"),
                }
                .map_err(io_err("finding the server's cgroup"))?;
                let files = CgroupFiles::open(&layout, hz).map_err(io_err(layout.describe()))?;
                let procs = Group::new(Rule::Listed(layout.procs()), started, &[])
                    .map_err(io_err(layout.describe()))?;
                let first = procs.pids().next();
                if let Layout::V1 { .. } = layout {
                    notes.push("cgroup v1: the server's disk writes come from its processes' /proc/<pid>/io (v1 charges buffered writeback to the root cgroup)".into());
                }
                (
                    ServerSource::Cgroup { files, procs },
                    layout.describe(),
                    first,
                )
            }
        };

        let (generator, generator_desc, generator_is_self, gen_pid) = match &spec.generator {
            GeneratorRef::SelfProcess => (
                Rule::Process(me),
                "this process (without the monitor's thread)".to_string(),
                true,
                me,
            ),
            GeneratorRef::Pid(p) => (Rule::Process(*p), format!("process {p}"), false, *p),
            GeneratorRef::Threads(prefix) => (
                Rule::Threads {
                    pid: me,
                    prefix: prefix.clone(),
                },
                format!("threads {prefix}* of this process"),
                false,
                me,
            ),
        };
        let generator = Group::new(generator, started, &[])
            .map_err(io_err("reading the generator's process"))?;

        let mut exclude: Vec<u32> = vec![me, gen_pid];
        let (ServerSource::Procs(g) | ServerSource::Cgroup { procs: g, .. }) = &server;
        exclude.extend(g.pids());
        let mut watched = Vec::new();
        for (pattern, pids) in spec
            .watch_processes
            .iter()
            .zip(process::named_all(&spec.watch_processes))
        {
            let mut g = Group::empty(Rule::Named(pattern.clone()), started)
                .map_err(io_err("scanning /proc"))?;
            g.adopt(&pids, &exclude);
            watched.push((pattern.clone(), g));
        }

        let net_host = NetFiles::open(std::path::Path::new("/proc/self/net")).ok();
        if net_host.is_none() {
            notes.push("/proc/net/snmp is unreadable: no TCP counters".into());
        }
        let net_server = first_pid
            .filter(|p| net::netns_of(*p).is_some() && net::netns_of(*p) != net::netns_of(me))
            .and_then(|p| NetFiles::open(&std::path::PathBuf::from(format!("/proc/{p}/net"))).ok());
        let conntrack = ConntrackFiles::open();
        if conntrack.is_none() {
            notes.push("nf_conntrack is not loaded: no conntrack counts".into());
        }
        let mut server_capacity = cpus as f64;
        if let Some(p) = first_pid {
            if let Some(a) = cpus_allowed(p) {
                server_capacity = server_capacity.min(a.max(1) as f64);
            }
            if let Some(q) = cgroup::quota_cores(p) {
                server_capacity = server_capacity.min(q);
            }
        }
        Ok(Sources {
            machine,
            server,
            generator,
            generator_is_self,
            watched,
            net_host,
            net_server,
            conntrack,
            hz,
            page: proc_stat::page_size(),
            notes,
            server_desc,
            generator_desc,
            server_capacity,
            generator_allowed: cpus_allowed(gen_pid).unwrap_or(cpus),
        })
    }

    fn rediscover(&mut self, named: bool) {
        let me = std::process::id();
        let mut exclude = vec![me];
        match &mut self.server {
            ServerSource::Procs(g) | ServerSource::Cgroup { procs: g, .. } => {
                if !matches!(g.rule(), Rule::Threads { .. }) {
                    let _ = g.discover(&[me]);
                }
                exclude.extend(g.pids());
            }
        }
        if let Rule::Threads { .. } = self.generator.rule() {
            let _ = self.generator.discover(&[]);
        }
        if named {
            let patterns: Vec<&str> = self.watched.iter().map(|(p, _)| p.as_str()).collect();
            let found = process::named_all(&patterns);
            for ((_, g), pids) in self.watched.iter_mut().zip(found) {
                g.adopt(&pids, &exclude);
            }
        }
    }

    fn read(&mut self, sampler: CpuTime, sampler_at_start: f64) -> Raw {
        let ticks = |t: u64| t as f64 / self.hz;
        let mut raw = Raw {
            at: Some(Instant::now()),
            cpu: self.machine.cpu().unwrap_or_default(),
            mem: self.machine.memory().unwrap_or_default(),
            sampler_s: sampler.total_s() - sampler_at_start,
            ..Default::default()
        };
        match &mut self.server {
            ServerSource::Procs(g) => {
                let l = g.read();
                raw.server_user_s = ticks(l.user_ticks);
                raw.server_system_s = ticks(l.system_ticks);
                raw.server_rss = l.rss_pages * self.page;
                raw.server_write = l.write_bytes;
            }
            ServerSource::Cgroup { files, procs } => {
                let c = files.read().unwrap_or_default();
                raw.server_user_s = c.user_us as f64 / 1e6;
                raw.server_system_s = c.system_us as f64 / 1e6;
                raw.server_cgroup_mem = Some(c.memory_bytes);
                let l = procs.read();
                raw.server_rss = l.rss_pages * self.page;
                raw.server_write = l.write_bytes;
            }
        }
        let g = self.generator.read();
        raw.generator_s = ticks(g.user_ticks + g.system_ticks);
        if self.generator_is_self {
            raw.generator_s = (raw.generator_s - raw.sampler_s).max(0.0);
        }
        raw.watched_s = self
            .watched
            .iter_mut()
            .map(|(_, g)| {
                let l = g.read();
                ticks(l.user_ticks + l.system_ticks)
            })
            .collect();
        raw.net = self
            .net_host
            .as_mut()
            .and_then(|f| f.read().ok())
            .unwrap_or_default();
        raw.net_server = self.net_server.as_mut().and_then(|f| f.read().ok());
        raw.conntrack = self.conntrack.as_mut().and_then(|f| f.read().ok());
        raw
    }
}

/// Turns consecutive cumulative values into non-negative increments; a
/// value that dips (a process exited before its parent reaped it) and comes
/// back is not counted twice.
#[derive(Default)]
struct HighWater(Vec<f64>);

impl HighWater {
    /// Starts every mark at the first reading's value (see `push`'s indexes).
    fn seed(&mut self, first: &Raw, patterns: &[String]) {
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

fn push(
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
    if let (Some(a), Some(b)) = (&prev.conntrack, &now.conntrack) {
        series.conntrack_entries.push(b.entries);
        series
            .conntrack_drops
            .push((b.drops + b.insert_failed).saturating_sub(a.drops + a.insert_failed));
    }
}

pub(crate) fn run(
    spec: MonitorSpec,
    stop: Receiver<()>,
    ready: Sender<Result<(), MonitorError>>,
) -> MonitorRecord {
    let thread_start = CpuTime::thread().total_s();
    let mut src = match Sources::open(&spec) {
        Ok(s) => s,
        Err(e) => {
            let _ = ready.send(Err(e));
            return MonitorRecord::default();
        }
    };
    let started_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let first_at = Instant::now();
    let mut prev = src.read(CpuTime::thread(), thread_start);
    let cpus = prev.cpu.cpus;
    let _ = ready.send(Ok(()));

    let mut series = Series::default();
    // Counters start where the first reading found them: a cgroup's CPU is
    // cumulative since the container started, so a mark starting at zero
    // would bill a kept container's whole past to the first interval.
    let mut hw = HighWater::default();
    hw.seed(&prev, &spec.watch_processes);
    let mut samples = 1u64;
    let mut sample_wall = Duration::ZERO;
    let mut sample_max = Duration::ZERO;
    let mut next = first_at + spec.interval;
    let mut last_tree = first_at;
    let mut last_named = first_at;
    loop {
        let wait = next.saturating_duration_since(Instant::now());
        let stopping = !matches!(stop.recv_timeout(wait), Err(RecvTimeoutError::Timeout));
        let t = Instant::now();
        if t.duration_since(last_tree) >= REDISCOVER_TREE {
            let named = t.duration_since(last_named) >= REDISCOVER_NAMED;
            src.rediscover(named);
            last_tree = t;
            if named {
                last_named = t;
            }
        }
        let now = src.read(CpuTime::thread(), thread_start);
        push(
            &mut series,
            &mut hw,
            &prev,
            &now,
            &spec.watch_processes,
            src.hz,
            first_at,
        );
        prev = now;
        samples += 1;
        let took = t.elapsed();
        sample_wall += took;
        sample_max = sample_max.max(took);
        if stopping {
            break;
        }
        // Skip missed ticks rather than sampling in a burst.
        next += spec.interval;
        while next <= Instant::now() {
            next += spec.interval;
        }
    }
    let cpu_s = CpuTime::thread().total_s() - thread_start;
    let wall = first_at.elapsed().as_secs_f64();
    let summary = record::summarize(&series, None);
    MonitorRecord {
        schema: record::SCHEMA,
        interval_ms: spec.interval.as_millis() as u64,
        started_unix_s,
        cpus,
        server_cpu_capacity: src.server_capacity,
        generator_cpus_allowed: src.generator_allowed,
        server: src.server_desc,
        generator: src.generator_desc,
        series,
        summary,
        window: None,
        per_request: None,
        verdict: None,
        sampler: SamplerCost {
            samples,
            cpu_s,
            mean_sample_us: sample_wall.as_secs_f64() * 1e6 / (samples - 1).max(1) as f64,
            max_sample_us: sample_max.as_secs_f64() * 1e6,
            cpu_fraction: if wall > 0.0 { cpu_s / wall } else { 0.0 },
        },
        notes: src.notes,
    }
}

#[cfg(test)]
mod tests {
    use super::count_cpus;

    #[test]
    fn counts_cpu_lists() {
        assert_eq!(count_cpus("0-3,6\n"), 5);
        assert_eq!(count_cpus("1"), 1);
        assert_eq!(count_cpus("0-1"), 2);
    }
}
