//! The schedule: runs a [`Plan`]'s trials in interleaved rounds, records
//! each one durably the moment it finishes, adds adaptive rounds, and stops
//! cleanly when interrupted.
//!
//! A trial is: deploy the cell, warm up (load, result thrown away),
//! measure, stop, cool down. Deploying per trial (the default policy) is
//! the fairest way to interleave: every trial of every cell starts from a
//! fresh server. Resuming needs nothing but the run directory: rounds are
//! reproducible from the seed, and a (cell, trial) pair already in
//! `trials.jsonl` is not run again.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tare_record::{LoadResult, TrialRecord};

use crate::adaptive;
use crate::executor::{Executor, Finding, RunningCell};
use crate::experiment::{Cell, DeploymentPolicy, Experiment, Focus};
use crate::observer::{LiveProgress, Observer, Phase, Start};
use crate::plan::{round_order, Plan};
use crate::precision;
use crate::rundir::{RunDir, RunDirError, TrialWriter, FACTS, FINDINGS};

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every planned trial is on disk.
    Complete,
    /// Stopped by an interrupt; `tare run --resume DIR` continues it.
    Interrupted,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub outcome: Outcome,
    /// Trials on disk now (this process's and earlier ones').
    pub trials_on_disk: usize,
    /// Trials this process ran and recorded.
    pub trials_run: usize,
    /// Of those, how many failed (a record with `error`).
    pub failed: usize,
    /// Load applied by this process (warm-up + measured), requested durations.
    pub load_time: Duration,
    pub wall_time: Duration,
}

/// Runs the trials of `plan` that are not yet in `dir`.
pub struct Schedule<'a> {
    pub exp: &'a Experiment,
    pub plan: &'a Plan,
    pub dir: &'a RunDir,
    pub exec: &'a mut dyn Executor,
    pub observer: &'a mut dyn Observer,
    /// Set by a signal handler (or a test): finish tearing down, then stop.
    pub interrupt: &'a AtomicBool,
}

/// A trial's end: recorded, or abandoned because of an interrupt.
enum TrialEnd {
    Done(Box<TrialRecord>),
    Interrupted,
}

/// What the rounds add to as they go: the records on disk, the file they
/// are appended to, and the tally for the [`Summary`].
struct Ledger {
    records: Vec<TrialRecord>,
    writer: TrialWriter,
    next_order: u64,
    summary: Summary,
}

impl Ledger {
    fn is_done(&self, cell: &str, trial: u32) -> bool {
        (self.records.iter()).any(|r| r.cell == cell && r.trial == trial)
    }
}

impl Schedule<'_> {
    pub fn run(mut self) -> Result<Summary, RunDirError> {
        let t0 = Instant::now();
        let records = self.read_records()?;
        let runnable = self.plan.runnable();
        self.announce(&records, &runnable);
        let mut ledger = Ledger {
            writer: self.dir.trials_writer()?,
            next_order: records.iter().map(|r| r.order + 1).max().unwrap_or(0),
            summary: Summary {
                outcome: Outcome::Complete,
                trials_on_disk: records.len(),
                trials_run: 0,
                failed: 0,
                load_time: Duration::ZERO,
                wall_time: Duration::ZERO,
            },
            records,
        };
        let mut kept: HashMap<usize, Box<dyn RunningCell>> = HashMap::new();
        if !self.dir.file(FINDINGS).exists() && !self.preflight(&runnable, &mut kept)? {
            ledger.summary.outcome = Outcome::Interrupted;
        }

        let rounds = if ledger.summary.outcome == Outcome::Interrupted {
            0
        } else {
            self.plan.trials.max
        };
        let mut last_round: Option<Duration> = None;
        let focused = self.focused(&runnable);
        for round in 1..=rounds {
            let (round_start, ran_before) = (Instant::now(), ledger.summary.trials_run);
            let Some(candidates) =
                self.candidates(round, &ledger, &runnable, &focused, t0, last_round)
            else {
                break;
            };
            if !self.round(round, &candidates, &mut ledger, &mut kept)? {
                ledger.summary.outcome = Outcome::Interrupted;
                break;
            }
            if ledger.summary.trials_run > ran_before {
                last_round = Some(round_start.elapsed());
            }
        }
        for (i, running) in kept.drain() {
            if let Err(e) = running.stop() {
                self.observer
                    .note(&format!("{}: stop failed: {e}", self.exp.cells[i].id));
            }
        }
        self.observer.finish();
        let mut summary = ledger.summary;
        summary.trials_on_disk = ledger.records.len();
        summary.wall_time = t0.elapsed();
        Ok(summary)
    }

    /// The trials already on disk, a torn last line repaired and noted.
    fn read_records(&mut self) -> Result<Vec<TrialRecord>, RunDirError> {
        let mut torn = Vec::new();
        let records = self.dir.read_trials_noting(true, &mut torn)?;
        for note in &torn {
            self.observer.note(note);
        }
        Ok(records)
    }

    /// Tells the observer what the run holds and how much of it is done.
    fn announce(&mut self, records: &[TrialRecord], runnable: &[usize]) {
        let policy = &self.plan.trials;
        let on_disk_fixed = records.iter().filter(|r| r.trial <= policy.count).count() as u64;
        let extra_done = records.len() as u64 - on_disk_fixed;
        let on_disk = |cell: &str| records.iter().filter(|r| r.cell == cell).count() as u32;
        self.observer.start(&Start {
            trials_total: (runnable.len() as u64) * policy.count as u64 + extra_done,
            trials_done: records.len() as u64,
            cells: runnable
                .iter()
                .map(|&i| {
                    (
                        self.plan.cells[i].id.as_str(),
                        on_disk(&self.plan.cells[i].id),
                    )
                })
                .collect(),
            count: policy.count,
        });
    }

    /// The cells the rounds a precision adds run (`[trials] focus`).
    fn focused(&self, runnable: &[usize]) -> Vec<usize> {
        match self.plan.trials.focus {
            Focus::All => runnable.to_vec(),
            Focus::Chain => {
                let read: HashSet<&str> = (self.exp.attribution.iter().flatten())
                    .chain(self.exp.splits.iter().flatten().flat_map(|s| &s.chain))
                    .map(String::as_str)
                    .collect();
                (runnable.iter().copied())
                    .filter(|&i| read.contains(self.plan.cells[i].id.as_str()))
                    .collect()
            }
        }
    }

    /// The cells round `round` runs: every runnable one for the fixed
    /// rounds, then the focused ones while a precision asks for more, or
    /// the ones still spread above `max_rsd`. `None` ends the rounds.
    fn candidates(
        &mut self,
        round: u32,
        ledger: &Ledger,
        runnable: &[usize],
        focused: &[usize],
        t0: Instant,
        last_round: Option<Duration>,
    ) -> Option<Vec<usize>> {
        let policy = &self.plan.trials;
        if round <= policy.count {
            return Some(runnable.to_vec());
        }
        if let Some(target) = policy.precision {
            let started = (focused.iter()).any(|&i| ledger.is_done(&self.plan.cells[i].id, round));
            // A round already on disk was decided by the process that
            // ran it: a resumed run finishes it without deciding again.
            if !started && !self.more_rounds(round, target, t0, last_round, focused) {
                return None;
            }
            let new = (focused.iter())
                .filter(|&&i| !ledger.is_done(&self.plan.cells[i].id, round))
                .count();
            self.observer.grow(new as u64);
            return Some(focused.to_vec());
        }
        let max_rsd = policy.max_rsd;
        let c: Vec<usize> = (runnable.iter().copied())
            .filter(|&i| {
                adaptive::needs_more(&ledger.records, &self.plan.cells[i].id, round, max_rsd)
            })
            .collect();
        if c.is_empty() {
            return None;
        }
        let new = (c.iter())
            .filter(|&&i| !ledger.is_done(&self.plan.cells[i].id, round))
            .count();
        if new > 0 {
            self.observer.note(&format!(
                "round {round}: {new} cell(s) still spread above {:.1}% RSD, one more trial each",
                max_rsd * 100.0
            ));
            self.observer.grow(new as u64);
        }
        Some(c)
    }

    /// Runs round `round` over `candidates` in its seeded order, skipping
    /// what is on disk, appending each record the moment it is made.
    /// Returns `false` if interrupted.
    fn round(
        &mut self,
        round: u32,
        candidates: &[usize],
        ledger: &mut Ledger,
        kept: &mut HashMap<usize, Box<dyn RunningCell>>,
    ) -> Result<bool, RunDirError> {
        for i in round_order(self.plan.seed, round, candidates) {
            let cell = &self.exp.cells[i];
            if ledger.is_done(&cell.id, round) {
                continue;
            }
            if self.interrupt.load(Ordering::SeqCst) {
                return Ok(false);
            }
            let load_time = &mut ledger.summary.load_time;
            match self.trial(cell, i, round, ledger.next_order, kept, load_time) {
                TrialEnd::Interrupted => return Ok(false),
                TrialEnd::Done(rec) => {
                    ledger.writer.append(&rec)?;
                    ledger.next_order += 1;
                    ledger.summary.trials_run += 1;
                    ledger.summary.failed += rec.error.is_some() as usize;
                    self.observer.trial(&rec);
                    ledger.records.push(*rec);
                }
            }
            self.observer.phase(&cell.id, round, Phase::Cooldown);
            self.pause(self.plan.trials.cooldown);
        }
        Ok(true)
    }

    /// Whether precision-driven round `round` should run: not when the
    /// widest interval already meets `target`, and not when the round would
    /// end after the budget (its length guessed from the last round, or
    /// from the settings when this process has not run one). Says why
    /// either way.
    fn more_rounds(
        &mut self,
        round: u32,
        target: f64,
        t0: Instant,
        last_round: Option<Duration>,
        runnable: &[usize],
    ) -> bool {
        let done = round - 1;
        let unit = self.plan.trials.precision_unit;
        let Some(widest) = precision::widest(&self.dir.path, unit) else {
            self.observer.note(&format!(
                "after {done} rounds no cell has a result: stopping"
            ));
            return false;
        };
        let said = |h: f64| precision::said(h, unit);
        if widest.half_width <= target {
            self.observer.note(&format!(
                "precision reached after {done} rounds: widest interval {} ({}), target {}",
                said(widest.half_width),
                widest.label,
                said(target)
            ));
            return false;
        }
        let budget = self.plan.trials.budget.unwrap_or(Duration::MAX);
        let guess = last_round.unwrap_or_else(|| {
            runnable
                .iter()
                .map(|&i| {
                    let s = self.exp.cells[i].load_settings(&self.exp.load);
                    s.shared.warmup + s.duration() + self.plan.trials.cooldown
                })
                .sum()
        });
        if t0.elapsed().saturating_add(guess) > budget {
            self.observer.note(&format!(
                "budget of {} spent after {done} rounds: widest interval {} ({}), target {}",
                humantime::format_duration(Duration::from_secs(budget.as_secs())),
                said(widest.half_width),
                widest.label,
                said(target)
            ));
            return false;
        }
        let which = match self.plan.trials.focus {
            Focus::All => String::new(),
            Focus::Chain => format!(" of the {} cells the attribution reads", runnable.len()),
        };
        self.observer.note(&format!(
            "round {round}: widest interval {} ({}) above the {} target, one more round{which}",
            said(widest.half_width),
            widest.label,
            said(target)
        ));
        true
    }

    /// The fairness check, before any load: each runnable cell is deployed
    /// once and its facts taken (then stopped, or kept up under the `kept`
    /// policy, so that policy pays nothing extra). A cell that cannot deploy
    /// is noted here and recorded as a failed trial when its turn comes.
    /// Returns `false` if interrupted.
    fn preflight(
        &mut self,
        runnable: &[usize],
        kept: &mut HashMap<usize, Box<dyn RunningCell>>,
    ) -> Result<bool, RunDirError> {
        let keep = self.plan.trials.deployment == DeploymentPolicy::Kept;
        let mut facts: Vec<(Cell, serde_json::Value)> = Vec::new();
        for &i in runnable {
            if self.interrupt.load(Ordering::SeqCst) {
                return Ok(false);
            }
            let cell = &self.exp.cells[i];
            self.observer.phase(&cell.id, 0, Phase::Deploy);
            match self.exec.deploy(cell) {
                Ok(running) => {
                    facts.push((cell.clone(), running.facts()));
                    if keep {
                        kept.insert(i, running);
                    } else if let Err(e) = running.stop() {
                        self.observer
                            .note(&format!("{}: stop failed: {e}", cell.id));
                    }
                }
                Err(e) => self
                    .observer
                    .note(&format!("{}: cannot deploy: {e}", cell.id)),
            }
        }
        let findings: Vec<Finding> = if facts.len() > 1 {
            self.exec.fairness(&facts)
        } else {
            Vec::new()
        };
        // What each cell's deployment is (a guest's boot time among it), for
        // the record: before findings.json, whose presence ends preflight.
        let by_cell: serde_json::Map<String, serde_json::Value> = facts
            .iter()
            .map(|(cell, f)| (cell.id.clone(), f.clone()))
            .collect();
        self.dir.write_json(FACTS, &by_cell)?;
        self.dir.write_json(FINDINGS, &findings)?;
        self.observer.findings(&findings);
        Ok(!self.interrupt.load(Ordering::SeqCst))
    }

    /// One trial of `cell` (index `i`): deploy (or reuse), warm up, measure, stop.
    fn trial(
        &mut self,
        cell: &Cell,
        i: usize,
        trial: u32,
        order: u64,
        kept: &mut HashMap<usize, Box<dyn RunningCell>>,
        load_time: &mut Duration,
    ) -> TrialEnd {
        let started_unix_s = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let mut rec = TrialRecord {
            run_id: self.plan.run_id.clone(),
            cell: cell.id.clone(),
            factors: cell.levels.iter().cloned().collect(),
            trial,
            order,
            started_unix_s,
            ..TrialRecord::default()
        };
        let keep = self.plan.trials.deployment == DeploymentPolicy::Kept;
        let mut running = match self.running_for(cell, i, trial, kept) {
            Ok(r) => r,
            Err(e) => {
                rec.error = Some(e);
                return self.unless_interrupted(rec);
            }
        };
        let settings = cell.load_settings(&self.exp.load);
        let mut outcome = running
            .prepare(&settings)
            .map(|done| rec.prepared = done)
            .map(|()| None)
            .map_err(|e| format!("prepare: {e}"));
        if outcome.is_ok()
            && !settings.shared.warmup.is_zero()
            && !self.interrupt.load(Ordering::SeqCst)
        {
            self.observer.phase(&cell.id, trial, Phase::Warmup);
            let mut warm = settings.clone();
            warm.shared.duration = Some(settings.shared.warmup);
            *load_time += settings.shared.warmup;
            let observer = &mut *self.observer;
            let mut told = |p: &LiveProgress| observer.progress(&cell.id, trial, p);
            if let Err(e) = running.load_observed(&warm, false, &mut told) {
                outcome = Err(format!("warm-up: {e}"));
            }
        }
        if outcome.is_ok() && !self.interrupt.load(Ordering::SeqCst) {
            self.observer.phase(&cell.id, trial, Phase::Measure);
            *load_time += settings.duration();
            let observer = &mut *self.observer;
            let mut told = |p: &LiveProgress| observer.progress(&cell.id, trial, p);
            outcome = running
                .load_observed(&settings, true, &mut told)
                .map(Some)
                .map_err(|e| format!("load: {e}"));
            rec.monitor = running.take_monitor();
            // Noise is named in the record and kept (docs/monitor.md, "Noise"):
            // analysis drops flagged trials only when asked.
            rec.disturbed = rec
                .monitor
                .as_ref()
                .and_then(tare_monitor::Disturbance::reasons_in);
        }
        if !self.interrupt.load(Ordering::SeqCst) {
            outcome = judged(outcome, &mut *running);
        }
        if keep && outcome.is_ok() {
            kept.insert(i, running);
        } else {
            self.observer.phase(&cell.id, trial, Phase::Stop);
            if let Err(e) = running.stop() {
                self.observer
                    .note(&format!("{}: stop failed: {e}", cell.id));
            }
        }
        match outcome {
            Ok(result) => rec.result = result,
            Err(e) => rec.error = Some(e),
        }
        self.unless_interrupted(rec)
    }

    /// The cell's deployment for this trial: its kept one while that still
    /// serves, else a fresh one. A kept deployment that died between
    /// trials is redeployed (once per trial); if that fails, the trial
    /// fails with both reasons.
    fn running_for(
        &mut self,
        cell: &Cell,
        i: usize,
        trial: u32,
        kept: &mut HashMap<usize, Box<dyn RunningCell>>,
    ) -> Result<Box<dyn RunningCell>, String> {
        let mut died = None;
        if let Some(mut running) = kept.remove(&i) {
            match running.check() {
                Ok(()) => return Ok(running),
                Err(why) => {
                    self.observer
                        .note(&format!("{}: kept deployment: {why}; redeploying", cell.id));
                    if let Err(e) = running.stop() {
                        self.observer
                            .note(&format!("{}: stop failed: {e}", cell.id));
                    }
                    died = Some(why);
                }
            }
        }
        self.observer.phase(&cell.id, trial, Phase::Deploy);
        self.exec.deploy(cell).map_err(|e| match died {
            Some(why) => format!("{why} between trials; redeploying: {e}"),
            None => format!("deploy: {e}"),
        })
    }

    /// A trial during which an interrupt arrived is not a finished trial:
    /// its load may have been cut short (Ctrl-C reaches the whole process
    /// group), so it is dropped and `--resume` runs it again.
    fn unless_interrupted(&self, rec: TrialRecord) -> TrialEnd {
        if self.interrupt.load(Ordering::SeqCst) || (rec.result.is_none() && rec.error.is_none()) {
            TrialEnd::Interrupted
        } else {
            TrialEnd::Done(Box::new(rec))
        }
    }

    /// Sleeps `d`, waking early on an interrupt.
    fn pause(&self, d: Duration) {
        let end = Instant::now() + d;
        while !self.interrupt.load(Ordering::SeqCst) {
            let now = Instant::now();
            if now >= end {
                break;
            }
            std::thread::sleep((end - now).min(Duration::from_millis(50)));
        }
    }
}

/// A trial's outcome once its deployment is asked whether it still
/// serves and its result is judged by the engine's own signals
/// (`tare_record::judge`): a server that died, froze or went silent makes
/// the trial failed with the reason (`server exited with signal 9 at
/// 1.0 s`), never a measurement (docs/experiments.md, "Failed trials").
fn judged(
    outcome: Result<Option<LoadResult>, String>,
    running: &mut dyn RunningCell,
) -> Result<Option<LoadResult>, String> {
    match outcome {
        Ok(Some(result)) => match failure(running.check(), tare_record::judge(&result)) {
            Some(why) => Err(why),
            None => Ok(Some(result)),
        },
        // A load that failed because its server died says so first.
        Err(e) => Err(match running.check() {
            Err(live) => format!("{live} ({e})"),
            Ok(()) => e,
        }),
        Ok(None) => Ok(None),
    }
}

/// One reason from the deployment's state after the load and the judge's
/// verdict on its result: the state says what happened, the timeline when.
fn failure(live: Result<(), String>, judged: Option<tare_record::Failure>) -> Option<String> {
    match (live, judged) {
        (Ok(()), None) => None,
        (Ok(()), Some(f)) => Some(f.reason),
        (Err(live), Some(f)) => Some(match f.at_s {
            Some(at) if at > 0.0 => format!("{live} at {at:.1} s"),
            Some(_) => format!("{live} before anything completed"),
            None => format!("{live} ({})", f.reason),
        }),
        (Err(live), None) => Some(format!("{live} by the end of the load")),
    }
}

#[cfg(test)]
mod tests;
