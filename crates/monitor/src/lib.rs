//! Resource monitoring during a trial, and the bottleneck verdict.
//!
//! A sampling thread reads /proc and cgroup files every 100 ms–1 s while the
//! load runs, and leaves a [`MonitorRecord`]: series, their summaries over the
//! load's measured period, the CPU each request cost and where (server,
//! generator, network path, named processes such as docker-proxy, the rest
//! of the machine), the [`Verdict`], and what monitoring itself cost.
//!
//! # Use (the experiment runner, around each trial)
//!
//! ```no_run
//! use tare_monitor::{GeneratorRef, Monitor, MonitorSpec, ServerRef};
//! # fn load() -> tare_record::LoadResult { Default::default() }
//! # let server_pid = 1;
//! // Native: the server's pid (its children are found); a container: its
//! // id (`ServerRef::Container`) or its init pid's cgroup (`ServerRef::CgroupOf`).
//! let spec = MonitorSpec::new(ServerRef::Pids(vec![server_pid]), GeneratorRef::SelfProcess);
//! let monitor = Monitor::start(spec)?;
//! let result = load(); // tare_http::run(...) or tare_pg::run(...)
//! let record = monitor.stop().finish(&result); // clip, CPU per request, verdict
//! println!("{}: {}", record.verdict.as_ref().unwrap().bound, record.per_request.as_ref().unwrap().short());
//! let stored: serde_json::Value = record.to_json(); // -> TrialRecord::monitor
//! # Ok::<(), tare_monitor::MonitorError>(())
//! ```
//!
//! Reports read it back with [`MonitorRecord::from_json`], compare cells with
//! [`CostShift::between`] ("+9.0 µs/request, 70% of it in docker-proxy") and
//! warn with [`run_warning`] when trials were generator-bound.
//!
//! # Modules (one source each)
//! - `procfile`: a file kept open and re-read with `pread` at offset 0 into a
//!   kept buffer: a steady-state sample opens no file.
//! - `proc_stat`: `/proc/stat` (CPU by mode, context switches), `/proc/meminfo`.
//! - [`process`]: `/proc/<pid>/stat` and `/io` for a group of processes
//!   (a process tree, one process, threads by name, processes by name).
//! - `cgroup`: a container's cgroup (v1 and v2): CPU, memory, I/O.
//! - `net`: TCP counters and sockets by state, per network namespace.
//! - `conntrack`: connection-tracking entries and drops.
//! - `cpufreq`: the CPUs' clock frequency, where the machine exposes it.
//! - [`profile`]: every CPU's samples with their kernel stacks
//!   (perf_event_open), named by subsystem and function.
//! - `sampler`: the thread that reads all of the above and builds the series.
//! - `record`: [`MonitorRecord`], summaries, [`CpuPerRequest`], [`CostShift`].
//! - [`verdict`]: [`verdict()`], [`Bound`], [`run_warning`].

// Functions a reader can hold: none over 100 lines (clippy.toml) outside tests.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod cgroup;
mod conntrack;
mod cpufreq;
mod generator_use;
mod net;
mod proc_stat;
pub mod process;
mod procfile;
pub mod profile;
mod record;
mod sampler;
mod verdict;

use std::path::PathBuf;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

pub use profile::Profile;
pub use record::{
    CostShift, CpuPerRequest, Disturbance, MonitorRecord, Series, Summary, FREQUENCY_MOVED_MAX,
    OTHERS_CORES_MAX, STEAL_FRACTION_MAX,
};
pub use verdict::{run_warning, verdict, Bound, Verdict};

/// The server under test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerRef {
    /// Native processes: these pids and all their descendants (nginx's
    /// workers, postgres's backends, counted even after they exit).
    Pids(Vec<u32>),
    /// A cgroup directory (absolute, or relative to the hierarchy roots such
    /// as `docker/<id>`): exact CPU of everything in it.
    Cgroup(PathBuf),
    /// A Docker container by id (full or a unique prefix): its cgroup.
    Container(String),
    /// The cgroup of a process (a container's init pid, as `Facts::server_pid`).
    CgroupOf(u32),
    /// Threads of this process whose names start with a prefix (a server
    /// running inside the generator's process, as in tests).
    Threads(String),
}

/// The load generator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GeneratorRef {
    /// This process (tare runs the load in-process), minus the monitor's
    /// own sampling thread.
    SelfProcess,
    /// Another process (wrk, pgbench): all its threads, not its children.
    Pid(u32),
    /// Threads of this process whose names start with a prefix (`tare-http-`).
    Threads(String),
}

/// What to monitor and how often.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MonitorSpec {
    /// Sampling interval: 100 ms to 1 s is the intended range (10 ms–10 s accepted).
    pub interval: Duration,
    pub server: ServerRef,
    pub generator: GeneratorRef,
    /// Process name patterns broken out of "the rest of the machine":
    /// exact names, or prefixes ending in `*`.
    pub watch_processes: Vec<String>,
    /// Processes of the deployment besides the server, each tree counted
    /// under its own name (beside the watched patterns) and taken out of
    /// "the rest": nginx-proxy's `tare serve` backend is `("backend", [pid])`.
    pub companions: Vec<(String, Vec<u32>)>,
    /// Whole-machine stack samples per second of CPU, per CPU
    /// (docs/profiles.md); 0: no profile.
    pub profile_hz: u32,
}

/// The processes every run watches: docker-proxy, on the path seed 000 blames
/// for the published port's cost ("client → iptables DNAT → docker-proxy →
/// container": docs/studies.md, seed 000, "The post's attribution"); the
/// container runtime's shim and the softirq threads, tare's own choice (no
/// seed names them), as the other places a container's or the network's CPU
/// can go; conmon is Podman's containerd-shim (the podman-* placements);
/// slirp4netns, rootlessport and pasta carry a rootless Podman container's
/// published port (podman-rootless-*), each in user space, as docker-proxy
/// does Docker's.
pub(crate) const DEFAULT_WATCH: [&str; 7] = [
    "docker-proxy",
    "containerd-shim*",
    "conmon",
    "slirp4netns",
    "rootlessport",
    "pasta",
    "ksoftirqd/*",
];

impl MonitorSpec {
    /// 100 ms sampling, [`DEFAULT_WATCH`] processes.
    pub fn new(server: ServerRef, generator: GeneratorRef) -> MonitorSpec {
        MonitorSpec {
            interval: Duration::from_millis(100),
            server,
            generator,
            watch_processes: DEFAULT_WATCH.iter().map(|s| s.to_string()).collect(),
            companions: Vec::new(),
            profile_hz: profile::DEFAULT_HZ,
        }
    }

    /// Counts a process tree of the deployment under its own name.
    pub fn with_companion(mut self, name: impl Into<String>, pids: Vec<u32>) -> MonitorSpec {
        self.companions.push((name.into(), pids));
        self
    }

    pub fn validate(&self) -> Result<(), MonitorError> {
        if self.interval < Duration::from_millis(10) || self.interval > Duration::from_secs(10) {
            return Err(MonitorError::Invalid(format!(
                "sampling interval {:?}: must be between 10 ms and 10 s",
                self.interval
            )));
        }
        match &self.server {
            ServerRef::Pids(p) if p.is_empty() => {
                return Err(MonitorError::Invalid("server: no pids given".into()));
            }
            ServerRef::Threads(p) if p.is_empty() => {
                return Err(MonitorError::Invalid(
                    "server: empty thread name prefix".into(),
                ));
            }
            _ => {}
        }
        if let Some(bad) = self
            .watch_processes
            .iter()
            .find(|w| w.is_empty() || w.contains('/') && !w.ends_with("/*"))
        {
            return Err(MonitorError::Invalid(format!(
                "watched process name {bad:?}"
            )));
        }
        for (i, (name, pids)) in self.companions.iter().enumerate() {
            let taken = self.watch_processes.contains(name)
                || self.companions[..i].iter().any(|(n, _)| n == name);
            if name.is_empty() || taken || pids.is_empty() {
                return Err(MonitorError::Invalid(format!(
                    "companion {name:?}: needs a unique name and at least one pid"
                )));
            }
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    #[error("monitor: {0}")]
    Invalid(String),
    #[error("monitor: server process {0} not found")]
    NoServer(u32),
    #[error("monitor: {context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

/// A running monitor; [`Monitor::stop`] ends it and returns its record.
/// Dropping it without `stop` ends the thread too.
pub struct Monitor {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<MonitorRecord>>,
}

impl Monitor {
    /// Opens every source and takes the first sample before returning, so
    /// the series covers everything after this call.
    pub fn start(spec: MonitorSpec) -> Result<Monitor, MonitorError> {
        spec.validate()?;
        let (stop_tx, stop_rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("tare-monitor".into())
            .spawn(move || sampler::run(spec, stop_rx, ready_tx))
            .map_err(|source| MonitorError::Io {
                context: "starting the sampling thread".into(),
                source,
            })?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Monitor {
                stop: Some(stop_tx),
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(MonitorError::Invalid(
                    "the sampling thread ended before its first sample".into(),
                ))
            }
        }
    }

    /// Takes a last sample and returns the record (summaries over everything
    /// sampled; [`MonitorRecord::finish`] narrows them to the load).
    pub fn stop(mut self) -> MonitorRecord {
        self.stop.take();
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.stop.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
