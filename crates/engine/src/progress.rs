//! Live progress: workers publish their running totals with a plain relaxed
//! store once per poll iteration (no read-modify-write, one cache line per
//! thread), and a display thread reads them a few times a second.
//!
//! Every [`Board`] is also registered process-wide, so a process that runs
//! one load at a time (`tare agent load` on a remote host, docs/remote.md)
//! can report its progress without knowing which engine made the board:
//! [`live`].

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One worker's published totals, padded to its own cache line so workers
/// never contend.
#[repr(align(64))]
#[derive(Default)]
pub struct Counters {
    pub completed: AtomicU64,
    pub errors: AtomicU64,
}

impl Counters {
    #[inline]
    pub fn publish(&self, completed: u64, errors: u64) {
        self.completed.store(completed, Ordering::Relaxed);
        self.errors.store(errors, Ordering::Relaxed);
    }
}

/// Every worker's counters.
#[derive(Default)]
pub struct Board {
    pub threads: Vec<Counters>,
}

/// The boards of this process's loads, held weakly: a finished load's
/// board is gone when its engine drops it.
static BOARDS: Mutex<Vec<Weak<Board>>> = Mutex::new(Vec::new());

impl Board {
    pub fn new(threads: usize) -> Arc<Self> {
        let board = Arc::new(Self {
            threads: (0..threads).map(|_| Counters::default()).collect(),
        });
        if let Ok(mut all) = BOARDS.lock() {
            all.retain(|b| b.strong_count() > 0);
            all.push(Arc::downgrade(&board));
        }
        board
    }

    pub fn totals(&self) -> (u64, u64) {
        self.threads.iter().fold((0, 0), |(c, e), t| {
            (
                c + t.completed.load(Ordering::Relaxed),
                e + t.errors.load(Ordering::Relaxed),
            )
        })
    }
}

/// Completed units and errors of every load running in this process (the
/// sum of their boards), `None` when none is running.
pub fn live() -> Option<(u64, u64)> {
    let all = BOARDS.lock().ok()?;
    let boards: Vec<Arc<Board>> = all.iter().filter_map(Weak::upgrade).collect();
    if boards.is_empty() {
        return None;
    }
    Some(boards.iter().fold((0, 0), |(c, e), b| {
        let (bc, be) = b.totals();
        (c + bc, e + be)
    }))
}

/// A one-line display on stdout, updated every 250 ms; does nothing unless
/// stdout is a terminal. Dropping it (or [`Line::finish`]) erases the line.
pub struct Line {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Line {
    /// `unit`: what is counted (`req`, `tx`); `total`: planned duration.
    pub fn start(board: Arc<Board>, unit: &'static str, total: Option<Duration>) -> Line {
        let stop = Arc::new(AtomicBool::new(false));
        if !std::io::stdout().is_terminal() {
            return Line { stop, handle: None };
        }
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("tare-progress".into())
            .spawn(move || {
                let start = Instant::now();
                let (mut last_n, mut last_t) = (0u64, start);
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(250));
                    let (n, errors) = board.totals();
                    let now = Instant::now();
                    let rate = (n - last_n.min(n)) as f64 / (now - last_t).as_secs_f64().max(1e-9);
                    (last_n, last_t) = (n, now);
                    let elapsed = start.elapsed().as_secs_f64();
                    let of = total
                        .map(|t| format!("/{:.0}s", t.as_secs_f64()))
                        .unwrap_or_default();
                    let mut out = std::io::stdout().lock();
                    let _ = write!(
                        out,
                        "\r\x1b[2K  {elapsed:5.1}s{of}  {rate:>10.0} {unit}/s  {n} done  {errors} errors"
                    );
                    let _ = out.flush();
                }
                let mut out = std::io::stdout().lock();
                let _ = write!(out, "\r\x1b[2K");
                let _ = out.flush();
            })
            .ok();
        Line { stop, handle }
    }

    pub fn finish(mut self) {
        self.end();
    }

    fn end(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        self.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_sums_the_running_boards_and_forgets_finished_ones() {
        let a = Board::new(2);
        let b = Board::new(1);
        a.threads[0].publish(10, 1);
        a.threads[1].publish(5, 0);
        b.threads[0].publish(7, 2);
        // Other tests in this process may hold boards of their own: ours
        // are at least counted.
        let (c, e) = live().unwrap();
        assert!(c >= 22 && e >= 3, "{c} {e}");
        let gone = Arc::as_ptr(&b);
        drop(b);
        let held: Vec<*const Board> = BOARDS
            .lock()
            .unwrap()
            .iter()
            .filter_map(Weak::upgrade)
            .map(|b| Arc::as_ptr(&b))
            .collect();
        assert!(held.contains(&Arc::as_ptr(&a)));
        assert!(!held.contains(&gone), "a dropped board is not counted");
    }
}
