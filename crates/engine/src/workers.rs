//! Worker threads, started and joined once for every engine.
//!
//! - Each thread is named `tare-<engine>-<i>`: the monitor finds the load
//!   generator's threads by that prefix ([`thread_prefix`]).
//! - They run on [`std::thread::scope`], so they borrow the run's plan
//!   instead of sharing it through `Arc`s, and every one is joined.
//! - A worker that panics becomes a [`WorkerFailed`] beside the others'
//!   results: never a hang, never a lost result of the others.
//! - [`run_gated`] adds a start gate (pg's): workers connect first, the
//!   main thread fixes one common start time once every worker is ready,
//!   and a worker that fails, returns or panics before the gate counts as
//!   arrived-and-failed, so the others are called off instead of waiting
//!   forever (a `std::sync::Barrier` waits for a dead worker forever).

use std::fmt;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::ScopedJoinHandle;

use crate::cpu::CpuList;

/// The name prefix of an engine's worker threads.
pub fn thread_prefix(engine: &str) -> String {
    format!("tare-{engine}-")
}

/// Why worker `index` gave no result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerFailed {
    /// The thread's name (`tare-pg-1`).
    pub thread: String,
    /// What happened: the panic's message, or why it could not start.
    pub message: String,
}

impl fmt::Display for WorkerFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "worker thread {} {}", self.thread, self.message)
    }
}

impl std::error::Error for WorkerFailed {}

/// Runs `work(i)` on `threads` named threads and returns each one's result
/// in index order.
pub fn run<T: Send>(
    engine: &str,
    threads: usize,
    cpus: Option<&CpuList>,
    work: impl Fn(usize) -> T + Sync,
) -> Vec<Result<T, WorkerFailed>> {
    let ((), results) = run_gated(engine, threads, cpus, |i, _ticket| work(i), |_gate| ());
    results
}

/// Runs `work(i, ticket)` on `threads` named threads while `main` runs on
/// the calling thread; `main` opens the start gate ([`Gate`]). Returns what
/// `main` returned and each worker's result in index order. If `main` never
/// opens the gate (it returned or panicked), the run is called off: workers
/// waiting at the gate are told so, and none waits forever.
pub(crate) fn run_gated<T: Send, R>(
    engine: &str,
    threads: usize,
    cpus: Option<&CpuList>,
    work: impl Fn(usize, Ticket<'_>) -> T + Sync,
    main: impl FnOnce(&Gate<'_>) -> R,
) -> (R, Vec<Result<T, WorkerFailed>>) {
    let prefix = thread_prefix(engine);
    let gate = StartGate::new(threads);
    let work = &work;
    std::thread::scope(|s| {
        type Handle<'s, T> = std::io::Result<ScopedJoinHandle<'s, Result<T, String>>>;
        let handles: Vec<(String, Handle<'_, T>)> = (0..threads)
            .map(|i| {
                let name = format!("{prefix}{i}");
                // Made before the spawn: if the thread cannot start, the
                // closure is dropped with it, and so the worker counts as
                // arrived-and-failed.
                let ticket = Ticket {
                    gate: &gate,
                    used: false,
                };
                let h = std::thread::Builder::new()
                    .name(name.clone())
                    .spawn_scoped(s, move || {
                        // Pinned before any work; a worker that cannot be
                        // pinned drops its ticket unused: arrived-and-failed.
                        if let Some(c) = cpus {
                            c.pin_current_thread()
                                .map_err(|e| format!("could not run on CPUs {c}: {e}"))?;
                        }
                        Ok(work(i, ticket))
                    });
                (name, h)
            })
            .collect();
        let out = {
            let _call_off = CallOffUnlessOpened(&gate);
            main(&Gate { gate: &gate })
        };
        let results = handles
            .into_iter()
            .map(|(thread, h)| match h {
                Ok(h) => match h.join() {
                    Ok(Ok(t)) => Ok(t),
                    Ok(Err(message)) => Err(WorkerFailed { thread, message }),
                    Err(payload) => Err(WorkerFailed {
                        thread,
                        message: format!("panicked: {}", panic_message(payload.as_ref())),
                    }),
                },
                Err(e) => Err(WorkerFailed {
                    thread,
                    message: format!("could not start: {e}"),
                }),
            })
            .collect();
        (out, results)
    })
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".into()
    }
}

struct GateState {
    /// Workers that reached the gate ready, and those that failed first.
    ready: usize,
    failed: usize,
    /// `None` until opened; then the common start, or `None` inside when
    /// the run was called off.
    opened: Option<Option<u64>>,
}

/// The gate workers wait at until the main thread lets them go.
struct StartGate {
    expected: usize,
    state: Mutex<GateState>,
    changed: Condvar,
}

impl StartGate {
    fn new(expected: usize) -> Self {
        StartGate {
            expected,
            state: Mutex::new(GateState {
                ready: 0,
                failed: 0,
                opened: None,
            }),
            changed: Condvar::new(),
        }
    }

    /// A worker that panicked while holding the lock poisons it; the
    /// counts stay meaningful, so the poison is ignored.
    fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn arrive(&self, ready: bool) {
        let mut s = self.lock();
        if ready {
            s.ready += 1;
        } else {
            s.failed += 1;
        }
        self.changed.notify_all();
    }

    fn open(&self, start: Option<u64>) {
        let mut s = self.lock();
        if s.opened.is_none() {
            s.opened = Some(start);
            self.changed.notify_all();
        }
    }
}

/// The main thread's side of the start gate.
pub(crate) struct Gate<'g> {
    gate: &'g StartGate,
}

impl Gate<'_> {
    /// Waits until every worker is ready or has failed (returned or
    /// panicked before the gate, or could not start); `true` when all are
    /// ready.
    pub(crate) fn all_ready(&self) -> bool {
        let g = self.gate;
        let mut s = g.lock();
        while s.ready + s.failed < g.expected {
            s = g.changed.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        s.failed == 0
    }

    /// Lets the waiting workers go with the common start time (a clock
    /// reading), or calls the run off (`None`). Only the first call counts.
    pub(crate) fn open(&self, start: Option<u64>) {
        self.gate.open(start);
    }
}

/// Calls the run off if the main side ends (returns or unwinds) without
/// opening the gate.
struct CallOffUnlessOpened<'g>(&'g StartGate);

impl Drop for CallOffUnlessOpened<'_> {
    fn drop(&mut self) {
        self.0.open(None);
    }
}

/// A worker's place at the start gate. Using it says how the worker
/// arrived; dropping it unused (an early return, a panic) counts as failed.
pub(crate) struct Ticket<'g> {
    gate: &'g StartGate,
    used: bool,
}

impl Ticket<'_> {
    /// This worker is ready: waits for the gate to open and returns the
    /// common start time, or `None` when the run was called off (another
    /// worker failed) and this one should return at once.
    pub(crate) fn ready(mut self) -> Option<u64> {
        self.used = true;
        let g = self.gate;
        g.arrive(true);
        let mut s = g.lock();
        loop {
            if let Some(start) = s.opened {
                return start;
            }
            s = g.changed.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// This worker could not get ready (its error is reported by other
    /// means); the run will be called off.
    pub(crate) fn fail(mut self) {
        self.used = true;
        self.gate.arrive(false);
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if !self.used {
            self.gate.arrive(false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Runs `f` on its own thread and fails the test if it takes more than
    /// ten seconds: a hang is a failure here, not a stuck test run.
    fn within_10s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the run hung (or its thread died)")
    }

    /// The gate's common start reaches every worker, and each worker's
    /// result comes back in index order on a thread named for its engine.
    #[test]
    fn workers_start_together_and_return_in_order() {
        let (start, results) = within_10s(|| {
            run_gated(
                "pg",
                3,
                None,
                |i, ticket| {
                    let start = ticket.ready();
                    (i, start, std::thread::current().name().map(str::to_string))
                },
                |gate| {
                    assert!(gate.all_ready());
                    gate.open(Some(42));
                    42
                },
            )
        });
        assert_eq!(start, 42);
        for (i, r) in results.into_iter().enumerate() {
            let (index, start, name) = r.unwrap();
            assert_eq!((index, start), (i, Some(42)));
            assert_eq!(name.unwrap(), format!("tare-pg-{i}"));
        }
    }

    /// Regression: pg's start-up `Barrier` hung the run when a worker died
    /// before reaching it. A worker that panics, or returns early, before
    /// the gate counts as failed: the others are called off and the panic
    /// is a reported error.
    #[test]
    fn pg_barrier_hang_a_worker_dying_before_the_start_gate_does_not_hang_the_run() {
        for early_return in [false, true] {
            let (all_ready, results) = within_10s(move || {
                run_gated(
                    "pg",
                    3,
                    None,
                    move |i, ticket| {
                        if i == 1 {
                            if early_return {
                                return None;
                            }
                            panic!("no connection");
                        }
                        ticket.ready()
                    },
                    |gate| {
                        let all = gate.all_ready();
                        gate.open(all.then_some(7));
                        all
                    },
                )
            });
            assert!(!all_ready);
            assert_eq!(results[0], Ok(None), "called off");
            assert_eq!(results[2], Ok(None), "called off");
            if early_return {
                assert_eq!(results[1], Ok(None));
            } else {
                let e = results[1].as_ref().unwrap_err();
                assert_eq!(
                    e.to_string(),
                    "worker thread tare-pg-1 panicked: no connection"
                );
            }
        }
    }

    /// A main side that never opens the gate calls the run off.
    #[test]
    fn a_gate_left_closed_calls_the_run_off() {
        let ((), results) = within_10s(|| run_gated("pg", 2, None, |_, t| t.ready(), |_| ()));
        assert_eq!(results, vec![Ok(None), Ok(None)]);
    }

    /// Without a gate, a panicking worker is a failure beside the others'
    /// results, which are kept.
    #[test]
    fn a_panicking_worker_is_a_reported_failure_not_a_lost_run() {
        let results = within_10s(|| {
            run("http", 2, None, |i| {
                if i == 0 {
                    panic!("bad state {i}");
                }
                i
            })
        });
        assert_eq!(
            results[0].as_ref().unwrap_err().to_string(),
            "worker thread tare-http-0 panicked: bad state 0"
        );
        assert_eq!(results[1], Ok(1));
        assert_eq!(thread_prefix("http"), "tare-http-");
    }

    /// Workers run on the CPUs asked for; CPUs the process may not use are
    /// a reported failure of each worker, which the gate counts as failed.
    #[test]
    fn workers_are_pinned_to_the_cpus_asked_for() {
        let allowed = CpuList::allowed().unwrap();
        let one: CpuList = allowed.cpus()[0].to_string().parse().unwrap();
        let results = run("http", 2, Some(&one), |_| CpuList::allowed().unwrap());
        for r in results {
            assert_eq!(r.unwrap(), one);
        }
        let outside: CpuList = "1023".parse().unwrap();
        let (ready, results) = within_10s(move || {
            run_gated(
                "pg",
                2,
                Some(&outside),
                |_, t| t.ready(),
                |gate| gate.all_ready(),
            )
        });
        assert!(!ready);
        for r in results {
            let e = r.unwrap_err().to_string();
            assert!(e.contains("could not run on CPUs 1023"), "{e}");
        }
    }
}
