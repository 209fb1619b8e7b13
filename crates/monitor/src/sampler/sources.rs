//! The sources of one monitor: opened once (the machine's files, the
//! server's process group or cgroup, the generator, watched processes,
//! network namespaces, conntrack), searched again for new members now and
//! then, and read together into one [`Raw`] reading.

use std::collections::BTreeMap;
use std::time::Instant;

use tare_engine::cpu::CpuTime;

use crate::cgroup::{self, CgroupFiles, Layout};
use crate::conntrack::ConntrackFiles;
use crate::cpufreq::FreqFiles;
use crate::net::{self, NetFiles};
use crate::proc_stat::{self, MachineFiles};
use crate::process::{self, CpusSeen, Group, Rule};
use crate::{GeneratorRef, MonitorError, MonitorSpec, ServerRef};

use super::{Raw, ServerSource, Sources};

fn io_err(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> MonitorError {
    let context = context.into();
    move |source| MonitorError::Io { context, source }
}

fn cpus_allowed(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|l| tare_engine::cpu::cpu_list_len(l) as u32)
}

/// The generator's processes: what they are, their description, whether
/// it is this process, and the pid its CPU affinity is read from.
struct GeneratorSource {
    group: Group,
    desc: String,
    is_self: bool,
    pid: u32,
}

impl Sources {
    pub(super) fn open(spec: &MonitorSpec) -> Result<Sources, MonitorError> {
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
        let (server, server_desc, first_pid) = open_server(&spec.server, started, hz, &mut notes)?;
        let generator = open_generator(&spec.generator, started)?;
        let watched = open_watched(spec, started, &server, generator.pid)?;

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
        let freq = FreqFiles::open();
        if freq.is_none() {
            notes.push(crate::record::FREQUENCY_NOT_EXPOSED.into());
        }
        Ok(Sources {
            machine,
            server,
            generator: generator.group,
            generator_is_self: generator.is_self,
            watched,
            net_host,
            net_server,
            conntrack,
            freq,
            hz,
            page: proc_stat::page_size(),
            notes,
            server_desc,
            generator_desc: generator.desc,
            server_capacity: server_capacity(cpus, first_pid),
            generator_allowed: cpus_allowed(generator.pid).unwrap_or(cpus),
        })
    }

    pub(super) fn rediscover(&mut self, named: bool) {
        let me = std::process::id();
        let mut exclude = vec![me];
        match &mut self.server {
            ServerSource::Procs(g) | ServerSource::Cgroup { procs: g, .. } => {
                // Threads of this process: looked for again too, since a
                // thread names itself once it runs (std's `Builder::name`),
                // so a server started just before the monitor may not have
                // its name yet (a clean clone's CI measured a server of
                // 100k requests at 0 CPU). Its pid is this one's: no exclusion.
                if matches!(g.rule(), Rule::Threads { .. }) {
                    let _ = g.discover(&[]);
                } else {
                    let _ = g.discover(&[me]);
                }
                exclude.extend(g.pids());
            }
        }
        if let Rule::Threads { .. } = self.generator.rule() {
            let _ = self.generator.discover(&[]);
        }
        // Companions first: their new children are not a pattern's.
        for (_, g) in self.watched.iter_mut() {
            if let Rule::Tree(_) = g.rule() {
                let _ = g.discover(&exclude);
                exclude.extend(g.pids());
            }
        }
        for g in self.groups_mut() {
            g.find_threads();
        }
        if named {
            let patterns: Vec<&str> = self
                .watched
                .iter()
                .filter(|(_, g)| matches!(g.rule(), Rule::Named(_)))
                .map(|(p, _)| p.as_str())
                .collect();
            let found = process::named_all(&patterns);
            let named = self
                .watched
                .iter_mut()
                .filter(|(_, g)| matches!(g.rule(), Rule::Named(_)));
            for ((_, g), pids) in named.zip(found) {
                g.adopt(&pids, &exclude);
            }
        }
    }

    /// Every group: the server's processes, the generator, the watched.
    fn groups_mut(&mut self) -> impl Iterator<Item = &mut Group> {
        let (ServerSource::Procs(server) | ServerSource::Cgroup { procs: server, .. }) =
            &mut self.server;
        [server, &mut self.generator]
            .into_iter()
            .chain(self.watched.iter_mut().map(|(_, g)| g))
    }

    /// Every process a group follows, and this one (the generator or the
    /// test beside it): what is not "the rest of the machine".
    pub(super) fn known_pids(&self) -> std::collections::HashSet<u32> {
        let mut known = std::collections::HashSet::from([std::process::id()]);
        match &self.server {
            ServerSource::Procs(g) | ServerSource::Cgroup { procs: g, .. } => {
                known.extend(g.pids())
            }
        }
        known.extend(self.generator.pids());
        for (_, g) in &self.watched {
            known.extend(g.pids());
        }
        known
    }

    /// Where each group ran (`Summary::cpus_seen`): `server`, `generator`,
    /// then the watched groups by name; a group never seen using CPU is left
    /// out. A process of several threads is seen thread by thread.
    pub(super) fn cpus_seen(&self) -> BTreeMap<String, BTreeMap<u32, f64>> {
        let (ServerSource::Procs(server) | ServerSource::Cgroup { procs: server, .. }) =
            &self.server;
        let groups = [("server", server), ("generator", &self.generator)]
            .into_iter()
            .chain(self.watched.iter().map(|(n, g)| (n.as_str(), g)));
        let mut out: BTreeMap<String, CpusSeen> = BTreeMap::new();
        for (name, g) in groups {
            out.entry(name.to_string())
                .or_default()
                .merge(g.cpus_seen());
        }
        out.into_iter()
            .filter(|(_, s)| !s.is_empty())
            .map(|(n, s)| (n, s.shares()))
            .collect()
    }

    /// Every group's members, by the component the CPU table names:
    /// `server`, `generator`, then each watched group (the profile's
    /// components, `profile::RawProfile::build`).
    pub(super) fn members(&self) -> Vec<(String, u32, Option<u32>)> {
        let (ServerSource::Procs(server) | ServerSource::Cgroup { procs: server, .. }) =
            &self.server;
        let groups = [("server", server), ("generator", &self.generator)]
            .into_iter()
            .chain(self.watched.iter().map(|(n, g)| (n.as_str(), g)));
        let mut out = Vec::new();
        for (name, g) in groups {
            out.extend(g.member_ids().map(|(p, t)| (name.to_string(), p, t)));
        }
        out
    }

    /// The names of the watched groups in reading order: the patterns, then
    /// the companions.
    pub(super) fn watched_names(&self) -> Vec<String> {
        self.watched.iter().map(|(n, _)| n.clone()).collect()
    }

    pub(super) fn read(&mut self, sampler: CpuTime, sampler_at_start: f64) -> Raw {
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
        raw.cpu_mhz = self.freq.as_mut().and_then(FreqFiles::mean_mhz);
        raw
    }
}

/// The server's processes (pids and their descendants, threads of this
/// process, or a cgroup), their description, and the first pid, whose
/// network namespace and CPU limits stand for the server's.
fn open_server(
    server: &ServerRef,
    started: u64,
    hz: f64,
    notes: &mut Vec<String>,
) -> Result<(ServerSource, String, Option<u32>), MonitorError> {
    let me = std::process::id();
    Ok(match server {
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
    })
}

/// The load generator's processes: this process, another one, or
/// threads of this one.
fn open_generator(generator: &GeneratorRef, started: u64) -> Result<GeneratorSource, MonitorError> {
    let me = std::process::id();
    let (rule, desc, is_self, pid) = match generator {
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
    let group =
        Group::new(rule, started, &[]).map_err(io_err("reading the generator's process"))?;
    Ok(GeneratorSource {
        group,
        desc,
        is_self,
        pid,
    })
}

/// The watched processes (by name) and the companions (by pid), none of
/// them counted twice: not this process, the generator or the server.
fn open_watched(
    spec: &MonitorSpec,
    started: u64,
    server: &ServerSource,
    gen_pid: u32,
) -> Result<Vec<(String, Group)>, MonitorError> {
    let mut exclude: Vec<u32> = vec![std::process::id(), gen_pid];
    let (ServerSource::Procs(g) | ServerSource::Cgroup { procs: g, .. }) = server;
    exclude.extend(g.pids());
    let mut companions = Vec::new();
    for (name, pids) in &spec.companions {
        let g = Group::new(Rule::Tree(pids.clone()), started, &exclude)
            .map_err(io_err(format!("reading the {name}'s processes")))?;
        exclude.extend(g.pids());
        companions.push((name.clone(), g));
    }
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
    // After the patterns: `watched_names` lists them in this order.
    watched.extend(companions);
    Ok(watched)
}

/// The cores the server may use: the machine's, fewer when its
/// affinity or its cgroup's quota allows fewer.
fn server_capacity(cpus: u32, first_pid: Option<u32>) -> f64 {
    let mut server_capacity = cpus as f64;
    if let Some(p) = first_pid {
        if let Some(a) = cpus_allowed(p) {
            server_capacity = server_capacity.min(a.max(1) as f64);
        }
        if let Some(q) = cgroup::quota_cores(p) {
            server_capacity = server_capacity.min(q);
        }
    }
    server_capacity
}
