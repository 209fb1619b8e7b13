//! What the runner tells the person watching: an [`Observer`] receives
//! events; [`Bars`] draws them with indicatif (cells done, ETA, the rate of
//! the trial that just finished), [`Quiet`] ignores them (tests, `--quiet`).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tare_record::TrialRecord;

use crate::executor::Finding;

/// A trial's phase, for the progress line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Deploy,
    Warmup,
    Measure,
    Stop,
    Cooldown,
}

/// How far a running load got, from generators that report it while they
/// run: a local one's progress boards (`live.rs`), or the remote
/// generators' agents' ticks (docs/remote.md "Progress") summed over the
/// hosts that reported.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LiveProgress {
    /// Units completed so far (requests, transactions...), `unit` naming them.
    pub done: u64,
    pub errors: u64,
    /// Units per second over each host's last tick, added up.
    pub rate: f64,
    pub unit: &'static str,
    /// Generator hosts that reported counts, of how many run; both 0 for
    /// a generator in this process.
    pub reporting: usize,
    pub hosts: usize,
}

impl std::fmt::Display for LiveProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}s done, {:.0}/s, {} errors",
            self.done, self.unit, self.rate, self.errors
        )?;
        if self.hosts > 0 {
            write!(f, " ({} of {} generator hosts)", self.reporting, self.hosts)?;
        }
        Ok(())
    }
}

/// Where a run starts from (a resumed run has trials on disk already).
pub struct Start<'a> {
    /// Trials planned so far (adaptive rounds may add some).
    pub trials_total: u64,
    pub trials_done: u64,
    /// Each runnable cell with its trials already on disk.
    pub cells: Vec<(&'a str, u32)>,
    /// Trials every cell gets (`trials.count`): a cell with that many is done.
    pub count: u32,
}

pub trait Observer {
    fn start(&mut self, _start: &Start) {}
    /// A one-line note (a skipped cell, a stop that failed, ...).
    fn note(&mut self, _line: &str) {}
    fn phase(&mut self, _cell: &str, _trial: u32, _phase: Phase) {}
    /// The running load's progress, a few times a second at most.
    fn progress(&mut self, _cell: &str, _trial: u32, _progress: &LiveProgress) {}
    fn trial(&mut self, _rec: &TrialRecord) {}
    /// More trials were added (an adaptive round).
    fn grow(&mut self, _more: u64) {}
    fn findings(&mut self, _findings: &[Finding]) {}
    fn finish(&mut self) {}
}

/// Ignores everything.
pub struct Quiet;

impl Observer for Quiet {}

/// indicatif progress: a bar of trials with ETA, the current cell and phase,
/// and the last measured rate. Notes print above the bar.
pub struct Bars {
    bar: ProgressBar,
    last_rate: String,
    /// Trials on disk per cell, to count cells done.
    per_cell: HashMap<String, u32>,
    count: u32,
    /// The phase shown, for progress messages.
    phase: &'static str,
    /// When a progress line was last printed without a terminal.
    printed: Option<Instant>,
}

/// Without a terminal (a log, a pipe), a progress line is printed at most
/// this often: a heartbeat for a log, not a second-by-second count (every
/// local load reports live counts, which printed ~450 lines in a 9-minute
/// run at one a second).
const PRINT_EVERY: Duration = Duration::from_secs(10);

impl Default for Bars {
    fn default() -> Self {
        Self::new()
    }
}

impl Bars {
    pub fn new() -> Bars {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} trials, {prefix}, ETA {eta}  {msg}",
            )
            .expect("static template")
            .progress_chars("=> "),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        Bars {
            bar,
            last_rate: String::new(),
            per_cell: HashMap::new(),
            count: 0,
            phase: "",
            printed: None,
        }
    }
}

impl Bars {
    fn show_cells(&self) {
        let done = self.per_cell.values().filter(|&&n| n >= self.count).count();
        self.bar
            .set_prefix(format!("{done}/{} cells done", self.per_cell.len()));
    }

    /// A line above the bar; on stderr as is when there is no bar (not a
    /// terminal), where indicatif would drop it.
    fn say(&self, line: &str) {
        if self.bar.is_hidden() {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
    }
}

impl Observer for Bars {
    fn start(&mut self, start: &Start) {
        self.per_cell = start
            .cells
            .iter()
            .map(|(c, n)| (c.to_string(), *n))
            .collect();
        self.count = start.count;
        self.show_cells();
        self.bar.set_length(start.trials_total);
        self.bar.set_position(start.trials_done);
        // ETA counts only trials run in this process, not resumed ones.
        self.bar.reset_eta();
    }

    fn note(&mut self, line: &str) {
        self.say(line);
    }

    fn phase(&mut self, cell: &str, trial: u32, phase: Phase) {
        let p = match phase {
            Phase::Deploy => "deploying",
            Phase::Warmup => "warming up",
            Phase::Measure => "measuring",
            Phase::Stop => "stopping",
            Phase::Cooldown => "cooling down",
        };
        self.phase = p;
        self.bar
            .set_message(format!("{cell} #{trial} {p}{}", self.last_rate));
    }

    fn progress(&mut self, cell: &str, trial: u32, progress: &LiveProgress) {
        let line = format!("{cell} #{trial} {}: {progress}", self.phase);
        if !self.bar.is_hidden() {
            self.bar.set_message(line);
        } else if self.printed.is_none_or(|t| t.elapsed() >= PRINT_EVERY) {
            self.printed = Some(Instant::now());
            eprintln!("{line}");
        }
    }

    fn trial(&mut self, rec: &TrialRecord) {
        self.bar.inc(1);
        *self.per_cell.entry(rec.cell.clone()).or_default() += 1;
        self.show_cells();
        self.last_rate = match (&rec.result, &rec.error) {
            (_, Some(e)) => {
                self.say(&format!("{} #{}: failed: {e}", rec.cell, rec.trial));
                String::new()
            }
            (Some(r), None) => format!("  (last: {:.0}/s)", r.throughput()),
            _ => String::new(),
        };
    }

    fn grow(&mut self, more: u64) {
        self.bar.inc_length(more);
    }

    fn findings(&mut self, findings: &[Finding]) {
        for f in findings {
            self.say(&format!("fairness: {f}"));
        }
    }

    fn finish(&mut self) {
        self.bar.finish_and_clear();
    }
}
