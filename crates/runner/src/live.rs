//! Live counts of a load that runs in this process (a local generator in
//! `tare run`): the engines' per-thread progress boards
//! (`tare_engine::progress::live`, the same counters a remote generator's
//! agent ticks with, docs/remote.md "Progress") read twice a second while
//! the load runs, and handed to the observer as a [`LiveProgress`].

use std::time::{Duration, Instant};

use crate::observer::LiveProgress;

/// How often the counts are read: as often as a remote generator's agent
/// ticks.
const EVERY: Duration = Duration::from_millis(500);

/// Runs `load` on a thread of its own and, while it runs, reports this
/// process's live counts to `progress` every [`EVERY`] (on this thread:
/// the observer is not shared). Returns `load`'s value; a panic in it
/// resumes here.
pub(crate) fn watched<T: Send>(
    unit: &'static str,
    progress: &mut dyn FnMut(&LiveProgress),
    load: impl FnOnce() -> T + Send,
) -> T {
    std::thread::scope(|s| {
        // The load says when it ends (or, by dropping the sender, that it
        // panicked): the watcher sleeps between reads instead of polling,
        // two wake-ups a second wherever it runs.
        let (ended, end) = std::sync::mpsc::channel::<()>();
        let handle = s.spawn(move || {
            let value = load();
            let _ = ended.send(());
            value
        });
        let mut last: Option<(Instant, u64)> = None;
        while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = end.recv_timeout(EVERY) {
            let Some((done, errors)) = tare_engine::progress::live() else {
                continue;
            };
            let now = Instant::now();
            let rate = match last {
                // A board restarted (the next load) has no rate yet.
                Some((t, n)) if done >= n => (done - n) as f64 / (now - t).as_secs_f64().max(1e-9),
                _ => 0.0,
            };
            last = Some((now, done));
            progress(&LiveProgress {
                done,
                errors,
                rate,
                unit,
                reporting: 0,
                hosts: 0,
            });
        }
        handle
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn a_running_boards_counts_reach_the_observer_and_the_loads_value_returns() {
        let mut seen: Vec<LiveProgress> = Vec::new();
        let value = watched("request", &mut |p| seen.push(p.clone()), || {
            let board = tare_engine::progress::Board::new(2);
            for step in 1..=6u64 {
                board.threads[0]
                    .completed
                    .store(100 * step, Ordering::Relaxed);
                board.threads[1].errors.store(step, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(200));
            }
            42
        });
        assert_eq!(value, 42);
        assert!(seen.len() >= 2, "{seen:?}");
        assert!(seen.iter().all(|p| p.unit == "request" && p.hosts == 0));
        let last = seen.last().unwrap();
        assert!(last.done >= 300 && last.done <= 600, "{seen:?}");
        assert!(last.errors >= 3 && last.errors <= 6, "{seen:?}");
        assert!(seen.windows(2).all(|w| w[1].done >= w[0].done), "{seen:?}");
        assert!(seen.iter().any(|p| p.rate > 0.0), "{seen:?}");
    }
}
