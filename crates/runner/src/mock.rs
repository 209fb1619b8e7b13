//! [`MockExecutor`]: an executor with scripted, deterministic results, so
//! the scheduler, resume logic, adaptive trials and record writing are
//! tested without Docker and without timing noise (hyperfine's
//! `MockExecutor`). Its results are `debug::result`'s, as `tare run
//! --debug-mode`'s.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tare_record::LoadResult;

use crate::debug::result;
use crate::executor::{ExecError, Executor, Finding, RunningCell};
use crate::experiment::{Cell, LoadSettings};

/// What happened, in order: `deploy CELL`, `prepare CELL`, `warmup CELL`,
/// `measure CELL`, `stop CELL`.
pub(crate) type Log = Arc<Mutex<Vec<String>>>;

#[derive(Default)]
pub(crate) struct MockExecutor {
    /// Throughput of each cell id; a cell not listed gets 1000.
    pub rps: BTreeMap<String, f64>,
    /// Per cell: the throughput of trial *n* is `rps * (1 + jitter[n % len])`.
    pub jitter: BTreeMap<String, Vec<f64>>,
    /// The machine's drift, shared by every cell: trial *n* of any cell is
    /// further multiplied by `1 + drift[n % len]` (in whole rounds, trial
    /// *n* is round *n*, so the cells of a round share it).
    pub drift: Vec<f64>,
    /// Cells this machine "cannot run".
    pub unavailable: BTreeMap<String, String>,
    /// The `binary` fact of a cell (default `mock`): a difference is a finding.
    pub binary: BTreeMap<String, String>,
    /// Per cell: the monitor record of trial *n* is `monitor[n - 1]` (a
    /// trial past the list's end is not monitored).
    pub monitor: BTreeMap<String, Vec<serde_json::Value>>,
    /// Cells whose deployment fails.
    pub failing_deploy: Vec<String>,
    /// What every trial's preparation says it did (`None`: nothing, and
    /// no `prepare` event is logged).
    pub prepared: Option<String>,
    /// Per cell: its server dies (SIGKILL) one second into its *n*-th
    /// measured load: that load's timeline drops to zero, and the
    /// deployment answers `check` with the reason until it is replaced.
    pub dies_during: BTreeMap<String, usize>,
    /// Set this flag after the given number of measured loads (an interrupt).
    pub interrupt_after: Option<(usize, Arc<AtomicBool>)>,
    pub log: Log,
    measured: Arc<Mutex<BTreeMap<String, usize>>>,
    total_measured: Arc<Mutex<usize>>,
}

impl MockExecutor {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn events(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

impl Executor for MockExecutor {
    fn can_run(&mut self, cell: &Cell) -> Result<(), String> {
        match self.unavailable.get(&cell.id) {
            Some(why) => Err(why.clone()),
            None => Ok(()),
        }
    }

    fn deploy(&mut self, cell: &Cell) -> Result<Box<dyn RunningCell>, ExecError> {
        self.log.lock().unwrap().push(format!("deploy {}", cell.id));
        if self.failing_deploy.contains(&cell.id) {
            return Err(ExecError::new("mock: cannot start"));
        }
        Ok(Box::new(MockCell {
            cell: cell.clone(),
            binary: self
                .binary
                .get(&cell.id)
                .cloned()
                .unwrap_or_else(|| "mock".into()),
            rps: self.rps.get(&cell.id).copied().unwrap_or(1000.0),
            jitter: self.jitter.get(&cell.id).cloned().unwrap_or_default(),
            drift: self.drift.clone(),
            monitors: self.monitor.get(&cell.id).cloned().unwrap_or_default(),
            monitor: None,
            prepared: self.prepared.clone(),
            log: self.log.clone(),
            measured: self.measured.clone(),
            total: self.total_measured.clone(),
            interrupt_after: self.interrupt_after.clone(),
            dies_during: self.dies_during.get(&cell.id).copied(),
            dead: false,
        }))
    }

    fn fairness(&mut self, facts: &[(Cell, serde_json::Value)]) -> Vec<Finding> {
        // Compares the one fact the mock has, as the real check compares many.
        let values: Vec<(String, String)> = facts
            .iter()
            .map(|(c, f)| (c.id.clone(), f["binary"].as_str().unwrap_or("").to_string()))
            .collect();
        if values.iter().all(|(_, v)| *v == values[0].1) {
            return Vec::new();
        }
        vec![Finding {
            fact: "binary".into(),
            message: "binary differs between cells".into(),
            values,
        }]
    }
}

struct MockCell {
    cell: Cell,
    binary: String,
    rps: f64,
    jitter: Vec<f64>,
    drift: Vec<f64>,
    monitors: Vec<serde_json::Value>,
    /// The last measured load's record, until the runner takes it.
    monitor: Option<serde_json::Value>,
    prepared: Option<String>,
    log: Log,
    measured: Arc<Mutex<BTreeMap<String, usize>>>,
    total: Arc<Mutex<usize>>,
    interrupt_after: Option<(usize, Arc<AtomicBool>)>,
    dies_during: Option<usize>,
    dead: bool,
}

impl RunningCell for MockCell {
    fn facts(&self) -> serde_json::Value {
        serde_json::json!({ "cell": self.cell.id, "binary": self.binary })
    }

    fn prepare(&mut self, _settings: &LoadSettings) -> Result<Option<String>, ExecError> {
        if self.prepared.is_some() {
            self.log
                .lock()
                .unwrap()
                .push(format!("prepare {}", self.cell.id));
        }
        Ok(self.prepared.clone())
    }

    fn load(&mut self, settings: &LoadSettings, measure: bool) -> Result<LoadResult, ExecError> {
        let phase = if measure { "measure" } else { "warmup" };
        self.log
            .lock()
            .unwrap()
            .push(format!("{phase} {}", self.cell.id));
        let n = {
            let mut m = self.measured.lock().unwrap();
            let n = m.entry(self.cell.id.clone()).or_default();
            if measure {
                *n += 1;
            }
            *n
        };
        if measure {
            let mut total = self.total.lock().unwrap();
            *total += 1;
            if let Some((after, flag)) = &self.interrupt_after {
                if *total >= *after {
                    flag.store(true, Ordering::SeqCst);
                }
            }
        }
        if measure {
            self.monitor = self.monitors.get(n.max(1) - 1).cloned();
        }
        let at = |v: &[f64]| {
            if v.is_empty() {
                0.0
            } else {
                v[(n.max(1) - 1) % v.len()]
            }
        };
        let (j, d) = (at(&self.jitter), at(&self.drift));
        let mut r = result(self.rps * (1.0 + j) * (1.0 + d), settings);
        let dies_now = measure && self.dies_during == Some(n);
        if self.dead || dies_now {
            let first = if self.dead { 0 } else { r.timeline[0] };
            r.timeline.iter_mut().for_each(|t| *t = 0);
            r.timeline[0] = first;
            r.requests = first;
            r.errors.connect = 100;
            self.dead = true;
        }
        Ok(r)
    }

    fn check(&mut self) -> Result<(), String> {
        match self.dead {
            true => Err("server exited with signal 9".into()),
            false => Ok(()),
        }
    }

    fn take_monitor(&mut self) -> Option<serde_json::Value> {
        self.monitor.take()
    }

    fn stop(self: Box<Self>) -> Result<(), ExecError> {
        self.log
            .lock()
            .unwrap()
            .push(format!("stop {}", self.cell.id));
        Ok(())
    }
}
