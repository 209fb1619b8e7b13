//! The measured window every engine runs, written once: an engine crate
//! brings its protocol (how a worker connects, what it sends, how it
//! parses, what counts as an error) and this module does the rest.
//!
//! - [`measure`]: the run's side. The seed, the clock, the progress board,
//!   the connections shared out among the worker threads, each thread
//!   entering the run's network namespace and connecting its share, the
//!   start gate ([`crate::workers::run_gated`]) and the one common start,
//!   the progress line, and the workers' failures turned into the run's
//!   error.
//! - [`Window`]: a worker's side. When loading starts, when measuring
//!   starts (after the ramp and the warm-up), when it ends, the recorder
//!   sized for it, and the open-loop schedule with its per-thread seed.
//! - [`Share`]: what each worker hands back the same way (recorder, end,
//!   unsent arrivals, CPU time), merged and made the run's [`record`].
//! - [`check_loopback`]: load goes to a loopback address or a Unix socket
//!   unless the run allows remote targets.

use std::io;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use tare_record::{Latency, LoadResult};

use crate::cpu::CpuTime;
use crate::load::Load;
use crate::progress::{Board, Counters, Line};
use crate::schedule::{Arrivals, Schedule};
use crate::workers::{self, WorkerFailed};
use crate::{Clock, Endpoint, Engine, Recorder};

/// The expected length of a count-bounded run, to size a recorder's
/// timeline up front (it grows past this when needed).
const COUNT_BOUNDED_NS: u64 = 10_000_000_000;

/// Mixed into the run's seed, with the worker's first connection, for its
/// open-loop schedule: each thread's Poisson gaps differ, and none repeats
/// the connections' own generators.
const SCHEDULE_SEED: u64 = 0xA076_1D64_78BD_642F;

/// The run's seed as given, or one from the wall clock.
pub fn seed_or_now(seed: Option<u64>) -> u64 {
    seed.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
    })
}

/// `endpoint` may receive load: a loopback address or a Unix socket, or
/// anything once `allow_remote` is given. `Err`: the sentence to report.
pub fn check_loopback(endpoint: &Endpoint, allow_remote: bool) -> Result<(), String> {
    if allow_remote || endpoint.is_local() {
        return Ok(());
    }
    Err(format!(
        "{endpoint} is not a loopback address or Unix socket; tare sends load elsewhere only with --allow-remote"
    ))
}

/// The connections of worker `i` of `threads` among `connections`: the
/// first `connections % threads` workers get one more (pgbench's split).
pub fn connections_of(connections: usize, threads: usize, i: usize) -> Range<usize> {
    let share = |i: usize| connections / threads + usize::from(i < connections % threads);
    let first = (0..i).map(share).sum::<usize>();
    first..first + share(i)
}

/// One worker's measured window, from the common start.
#[derive(Clone, Debug)]
pub struct Window {
    /// The common start: the ramp begins here.
    pub origin: u64,
    /// Measuring begins here, after the ramp and the warm-up.
    pub measure_from: u64,
    /// Measuring ends here; `None`: the run is bounded by a count.
    pub deadline: Option<u64>,
    /// How long the ramp lasts, ns.
    pub ramp_ns: u64,
    expected_ns: u64,
    rate: Option<f64>,
    arrivals: Arrivals,
}

impl Window {
    /// The window of a run of `load` whose workers start at `start`.
    pub fn new(load: &Load, start: u64) -> Self {
        let measure_from = start + (load.ramp + load.warmup).as_nanos() as u64;
        Window {
            origin: start,
            measure_from,
            deadline: load.duration.map(|d| measure_from + d.as_nanos() as u64),
            ramp_ns: load.ramp.as_nanos() as u64,
            expected_ns: load
                .duration
                .map_or(COUNT_BOUNDED_NS, |d| d.as_nanos() as u64),
            rate: load.rate,
            arrivals: load.arrivals,
        }
    }

    /// Whether a completion at `t` is measured (not ramp nor warm-up).
    #[inline]
    pub fn measuring(&self, t: u64) -> bool {
        t >= self.measure_from
    }

    /// Whether `now` is still inside the ramp.
    #[inline]
    pub fn ramping(&self, now: u64) -> bool {
        now < self.origin + self.ramp_ns
    }

    /// Whether the measured period is over at `now`.
    #[inline]
    pub fn over(&self, now: u64) -> bool {
        self.deadline.is_some_and(|d| now >= d)
    }

    /// The earliest of `next`, the deadline and `timer`: how long a wait
    /// may last.
    pub fn wake_at(&self, next: u64, timer: Option<u64>) -> u64 {
        let mut until = next;
        if let Some(d) = self.deadline {
            until = until.min(d);
        }
        if let Some(t) = timer {
            until = until.min(t);
        }
        until
    }

    /// When the worker's measurement ended, having stopped at `now`: never
    /// after the deadline.
    pub fn end_ns(&self, now: u64) -> u64 {
        self.deadline.map_or(now, |d| now.min(d))
    }

    /// A recorder for the window (`connect_timing`: connection set-up and
    /// first byte timed too); an open loop also records latency from the
    /// actual sends.
    pub fn recorder(&self, connect_timing: bool) -> Recorder {
        let mut rec = Recorder::new(self.measure_from, self.expected_ns, connect_timing);
        if self.rate.is_some() {
            rec.uncorrected = Some(Latency::new());
        }
        rec
    }

    /// Open loop: this worker's share of the rate as a schedule, seeded
    /// from the run's `seed` and the worker's `first` connection.
    /// Also lets the thread's timed waits end on time (and so when
    /// `pausing`: a worker that pauses to coalesce its wake-ups).
    pub fn schedule(
        &self,
        seed: u64,
        first: usize,
        threads: usize,
        pausing: bool,
    ) -> Option<Schedule> {
        if self.rate.is_some() || pausing {
            // Timed sends and pauses should end on time, not 50 µs late.
            crate::schedule::tighten_timer_slack();
        }
        let rate = self.rate?;
        Some(Schedule::new(
            rate / threads as f64,
            self.arrivals,
            self.ramp_ns,
            self.origin,
            seed ^ SCHEDULE_SEED ^ first as u64,
        ))
    }

    /// Open loop: the arrivals nothing took before the end (`left`: what a
    /// count-bounded worker may still send).
    pub fn unsent(&self, schedule: &mut Option<Schedule>, end_ns: u64, left: Option<u64>) -> u64 {
        match (schedule, self.deadline) {
            (Some(s), Some(d)) => s.drain_before(end_ns.min(d), left),
            _ => 0,
        }
    }
}

/// What an engine tells [`measure`] about its run.
pub struct Run<'a, E> {
    /// The engine's name: its worker threads are `tare-NAME-N`.
    pub engine: &'static str,
    pub load: &'a Load,
    /// The clock the workers read.
    pub clock: Clock,
    /// The live line's unit (`cmd`, `tx`); `None`: no line.
    pub line: Option<&'static str>,
    /// Entering the run's network namespace failed, in the engine's words.
    pub netns_error: fn(io::Error) -> E,
    /// A run-level failure with no error of a worker's to tell.
    pub failed: fn(String) -> E,
}

/// A run that started: what each worker measured.
pub struct Measured<O> {
    /// The wall clock when measuring began (after the ramp and warm-up).
    pub started: SystemTime,
    /// The clock reading at which measuring began.
    pub measure_from: u64,
    outcomes: Vec<Result<Option<O>, WorkerFailed>>,
    line: Option<Line>,
}

impl<O> Measured<O> {
    /// Ends the progress line; what each worker did, in worker order (an
    /// engine that accounts for a worker that died after the start).
    pub fn finish(self) -> Vec<Result<Option<O>, WorkerFailed>> {
        if let Some(l) = self.line {
            l.finish();
        }
        self.outcomes
    }

    /// The workers' outputs; a worker that died after the start is left
    /// out, and when none is left the run's error is the first death.
    pub fn outputs<E: From<WorkerFailed>>(self, failed: fn(String) -> E) -> Result<Vec<O>, E> {
        let mut lost = None;
        let outputs: Vec<O> = self
            .finish()
            .into_iter()
            .filter_map(|o| match o {
                Ok(o) => o,
                Err(e) => {
                    lost.get_or_insert(e);
                    None
                }
            })
            .collect();
        if outputs.is_empty() {
            return Err(lost.map_or_else(|| failed("no worker thread finished".into()), E::from));
        }
        Ok(outputs)
    }
}

/// Runs the measured window: on each of the load's threads, enters the
/// network namespace, `connect(i, connections)` makes the worker, which
/// waits at the start gate, then `load(worker, window, counters)` loads
/// and measures. `on_start` runs once the gate opens (a progress
/// reporter, reading the workers' counters on the board). A worker that fails before the gate calls the run off; its
/// error (the first one) is the run's.
pub fn measure<W, O, E>(
    run: &Run<'_, E>,
    connect: impl Fn(usize, Range<usize>) -> Result<W, E> + Sync,
    load: impl Fn(W, Window, &Counters) -> O + Sync,
    on_start: impl FnOnce(&Arc<Board>),
) -> Result<Measured<O>, E>
where
    O: Send,
    E: Send + From<WorkerFailed>,
{
    let l = run.load;
    let threads = l.threads;
    let board = Board::new(threads);
    let before_measuring = l.ramp + l.warmup;
    let failure = Mutex::new(None::<E>);
    let (started, outcomes) = workers::run_gated(
        run.engine,
        threads,
        l.cpus.as_ref(),
        |i, ticket| -> Option<O> {
            let setup = (|| -> Result<W, E> {
                if let Some(ns) = &l.netns {
                    crate::netns::enter(ns).map_err(run.netns_error)?;
                }
                connect(i, connections_of(l.connections, threads, i))
            })();
            match setup {
                Ok(w) => {
                    let start = ticket.ready()?;
                    Some(load(w, Window::new(l, start), &board.threads[i]))
                }
                Err(e) => {
                    failure
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .get_or_insert(e);
                    ticket.fail();
                    None
                }
            }
        },
        |gate| {
            if !gate.all_ready() {
                gate.open(None);
                return None;
            }
            let started = SystemTime::now() + before_measuring;
            let start_ns = run.clock.now_ns();
            gate.open(Some(start_ns));
            on_start(&board);
            let planned = l.duration.map(|d| d + before_measuring);
            let line = run
                .line
                .map(|unit| Line::start(board.clone(), unit, planned));
            Some((started, start_ns, line))
        },
    );
    let Some((started, start_ns, line)) = started else {
        let stored = failure.lock().unwrap_or_else(|p| p.into_inner()).take();
        let died = outcomes.into_iter().find_map(Result::err).map(E::from);
        return Err(stored
            .or(died)
            .unwrap_or_else(|| (run.failed)("a worker thread failed to start".into())));
    };
    Ok(Measured {
        started,
        measure_from: start_ns + before_measuring.as_nanos() as u64,
        outcomes,
        line,
    })
}

/// What each worker of an engine hands back the same way, and what the
/// run merges before [`record`]: its recorder, when it stopped measuring,
/// the open loop's arrivals it never sent, its thread's CPU time.
pub struct Share {
    pub rec: Recorder,
    pub end_ns: u64,
    pub unsent: u64,
    pub cpu: CpuTime,
}

impl Share {
    /// Adds another worker's share: counts summed, the run ending with the
    /// last worker.
    pub fn merge(&mut self, o: &Share) {
        self.rec.merge(&o.rec);
        self.end_ns = self.end_ns.max(o.end_ns);
        self.unsent += o.unsent;
        self.cpu.add(&o.cpu);
    }

    /// The merged shares' [`record`] of the window measured from `start_ns`
    /// (`started`: the wall clock then), with its length in seconds.
    pub fn record<E: Engine>(
        &self,
        load: &Load,
        start_ns: u64,
        started: SystemTime,
    ) -> (LoadResult, f64) {
        let duration_ns = self.end_ns.saturating_sub(start_ns).max(1);
        let r = record::<E>(
            load,
            &self.rec,
            duration_ns,
            &self.cpu,
            unix_s(started),
            self.unsent,
        );
        (r, duration_ns as f64 / 1e9)
    }
}

/// `t` in Unix seconds (0 before 1970).
pub fn unix_s(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The record every engine makes of its measured window the same way,
/// from its workers' merged recorder `rec` over `duration_ns` (measuring
/// began at `started_unix_s`): the counts, latency, timeline and the
/// threads' rates, the generator's `cpu` time, the open loop's schedule
/// (`unsent`: arrivals never sent). The engine adds its own part: where
/// the load went, its attempts and rate, connection timings, its details.
pub fn record<E: Engine>(
    load: &Load,
    rec: &Recorder,
    duration_ns: u64,
    cpu: &CpuTime,
    started_unix_s: f64,
    unsent: u64,
) -> LoadResult {
    LoadResult {
        engine: E::NAME.into(),
        unit: Some(E::UNIT),
        started_unix_s,
        duration_s: duration_ns as f64 / 1e9,
        connections: load.connections as u64,
        threads: load.threads as u64,
        requests: rec.requests,
        in_flight: rec.in_flight,
        errors: rec.errors,
        bytes_read: rec.bytes_read,
        latency_us: rec.latency.summary(),
        hdr: rec.latency.encode().unwrap_or_default(),
        timeline: rec.timeline(duration_ns),
        generator_cpu_s: cpu.total_s(),
        generator_cpu_user_s: cpu.user.as_secs_f64(),
        generator_cpu_system_s: cpu.system.as_secs_f64(),
        thread_rate: crate::rate::summarize(&rec.rate_samples(duration_ns)),
        schedule: crate::schedule::report(
            load.rate,
            load.arrivals,
            load.ramp,
            rec,
            duration_ns,
            unsent,
        ),
        tare_version: env!("CARGO_PKG_VERSION").into(),
        ..LoadResult::default()
    }
}

/// A clock for a run starting now.
pub fn clock() -> Clock {
    Clock::new(Instant::now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn connections_are_shared_out_first_threads_first() {
        let ranges: Vec<_> = (0..3).map(|i| connections_of(8, 3, i)).collect();
        assert_eq!(ranges, vec![0..3, 3..6, 6..8]);
    }

    #[test]
    fn the_window_follows_ramp_warmup_and_duration() {
        let load = Load {
            duration: Some(Duration::from_secs(2)),
            ramp: Duration::from_secs(1),
            warmup: Duration::from_secs(1),
            ..Load::default()
        };
        let w = Window::new(&load, 10);
        assert_eq!(w.measure_from, 2_000_000_010);
        assert_eq!(w.deadline, Some(4_000_000_010));
        assert!(w.ramping(10) && !w.ramping(1_000_000_010));
        assert!(!w.measuring(2_000_000_009) && w.measuring(2_000_000_010));
        assert_eq!(w.end_ns(5_000_000_000), 4_000_000_010);
        assert_eq!(w.wake_at(u64::MAX, Some(7)), 7);
        assert!(w.recorder(false).uncorrected.is_none());
    }

    #[test]
    fn remote_targets_need_allowing() {
        let remote = Endpoint::Tcp("192.0.2.1:80".parse().unwrap());
        let e = check_loopback(&remote, false).unwrap_err();
        assert!(e.ends_with("only with --allow-remote"), "{e}");
        assert!(check_loopback(&remote, true).is_ok());
    }
}
