//! The sampling thread: opens every source once, then reads them all every
//! interval and turns consecutive readings into the series.
//!
//! - `sources`: opening the files of the machine, the server, the generator
//!   and the watched processes, finding new members, and one reading of all.
//! - `series`: two consecutive readings into one interval of each series.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tare_engine::cpu::CpuTime;

use crate::cgroup::CgroupFiles;
use crate::conntrack::{ConntrackFiles, ConntrackReading};
use crate::cpufreq::FreqFiles;
use crate::net::{NetFiles, NetReading};
use crate::proc_stat::{MachineCpu, MachineFiles, MemInfo};
use crate::process::census::Census;
use crate::process::Group;
use crate::profile::Profiler;
use crate::record::{self, MonitorRecord, SamplerCost, Series};
use crate::{MonitorError, MonitorSpec};

/// How often process groups look for new members (children forked, a
/// docker-proxy started). Finding them is a directory walk, so it is done
/// less often than sampling; a member found late still counts from its birth.
const REDISCOVER_TREE: Duration = Duration::from_millis(500);
const REDISCOVER_NAMED: Duration = Duration::from_secs(1);

mod series;
mod sources;

use series::{push, HighWater};

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
    /// `None`: the machine exposes no CPU frequency (most VMs).
    freq: Option<FreqFiles>,
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
    /// Mean clock frequency over the CPUs, MHz, where exposed.
    cpu_mhz: Option<f64>,
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
    let first = src.read(CpuTime::thread(), thread_start);
    let cpus = first.cpu.cpus;
    let census = Census::take(&src.known_pids());
    let mut profiler = profiler(&spec, &mut src);
    let _ = ready.send(Ok(()));

    let mut sampling = Sampling {
        src: &mut src,
        profiler: profiler.as_mut(),
        thread_start,
        first_at,
        samples: 1,
        wall: Duration::ZERO,
        max: Duration::ZERO,
    };
    let series = sampling.until_stopped(&spec, &stop, first);
    let (samples, sample_wall, sample_max) = (sampling.samples, sampling.wall, sampling.max);
    let profile_raw = profiler.map(|p| p.stop(src.members()));
    let others_cpu_s = Census::take(&src.known_pids()).since(&census, src.hz);
    let cpu_s = CpuTime::thread().total_s() - thread_start;
    let wall = first_at.elapsed().as_secs_f64();
    let mut summary = record::summarize(&series, None);
    summary.cpus_seen = src.cpus_seen();
    MonitorRecord {
        schema: record::SCHEMA,
        interval_ms: spec.interval.as_millis() as u64,
        started_unix_s,
        cpus,
        server_cpu_capacity: src.server_capacity,
        generator_cpus_allowed: src.generator_allowed,
        server: src.server_desc,
        generator: src.generator_desc,
        host: None,
        series,
        summary,
        window: None,
        per_request: None,
        verdict: None,
        disturbance: None,
        sampler: SamplerCost {
            samples,
            cpu_s,
            mean_sample_us: sample_wall.as_secs_f64() * 1e6 / (samples - 1).max(1) as f64,
            max_sample_us: sample_max.as_secs_f64() * 1e6,
            cpu_fraction: if wall > 0.0 { cpu_s / wall } else { 0.0 },
        },
        others_cpu_s,
        notes: src.notes,
        profile: None,
        profile_raw,
    }
}

/// The stack sampler when the spec asks for one and it starts; why not
/// (or that kernel symbols are hidden) in the sources' notes.
fn profiler(spec: &MonitorSpec, src: &mut Sources) -> Option<Profiler> {
    if spec.profile_hz == 0 {
        return None;
    }
    match Profiler::start(spec.profile_hz) {
        Ok(mut p) => {
            if !p.has_symbols() {
                src.notes.push("profile: kernel symbols hidden (kernel.kptr_restrict): kernel time is \"other kernel\"".into());
            }
            p.note_members(src.members());
            Some(p)
        }
        Err(line) => {
            src.notes.push(line);
            None
        }
    }
}

/// The sampling loop's state: what it reads, and what sampling cost.
struct Sampling<'a> {
    src: &'a mut Sources,
    profiler: Option<&'a mut Profiler>,
    thread_start: f64,
    first_at: Instant,
    samples: u64,
    /// Time spent taking samples, in all and the longest one.
    wall: Duration,
    max: Duration,
}

impl Sampling<'_> {
    /// Reads every source each interval, from the `first` reading until
    /// `stop` says so (one last reading then), into the series.
    fn until_stopped(&mut self, spec: &MonitorSpec, stop: &Receiver<()>, first: Raw) -> Series {
        let mut prev = first;
        let mut series = Series::default();
        // Counters start where the first reading found them: a cgroup's CPU is
        // cumulative since the container started, so a mark starting at zero
        // would bill a kept container's whole past to the first interval.
        let mut hw = HighWater::default();
        let watched = self.src.watched_names();
        hw.seed(&prev, &watched);
        let first_at = self.first_at;
        let mut next = first_at + spec.interval;
        let mut last_tree = first_at;
        let mut last_named = first_at;
        loop {
            let wait = next.saturating_duration_since(Instant::now());
            let stopping = !matches!(stop.recv_timeout(wait), Err(RecvTimeoutError::Timeout));
            let t = Instant::now();
            if t.duration_since(last_tree) >= REDISCOVER_TREE {
                let named = t.duration_since(last_named) >= REDISCOVER_NAMED;
                self.src.rediscover(named);
                if let Some(p) = self.profiler.as_deref_mut() {
                    p.note_members(self.src.members());
                }
                last_tree = t;
                if named {
                    last_named = t;
                }
            }
            let now = self.src.read(CpuTime::thread(), self.thread_start);
            push(
                &mut series,
                &mut hw,
                &prev,
                &now,
                &watched,
                self.src.hz,
                first_at,
            );
            prev = now;
            if let Some(p) = self.profiler.as_deref_mut() {
                p.drain();
            }
            self.samples += 1;
            let took = t.elapsed();
            self.wall += took;
            self.max = self.max.max(took);
            if stopping {
                return series;
            }
            // Skip missed ticks rather than sampling in a burst.
            next += spec.interval;
            while next <= Instant::now() {
                next += spec.interval;
            }
        }
    }
}
