//! A run from start to end, as `tare run` does it: a new run directory
//! ([`begin`]) or an interrupted one ([`resume`]), then the schedule.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use crate::executor::Executor;
use crate::experiment::{ConfigSource, Experiment, ExperimentError};
use crate::observer::Observer;
use crate::plan::{fresh_seed, Plan};
use crate::provenance::{now_utc, Provenance, Resume};
use crate::rundir::{RunDir, RunDirError, EXPERIMENT, PLAN, PROVENANCE};
use crate::schedule::{Schedule, Summary};

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Experiment(#[from] ExperimentError),
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    #[error("{}: the experiment copy no longer matches plan.json (cells differ); cannot resume", .0.display())]
    Mismatch(std::path::PathBuf),
}

/// A run ready to execute: its experiment, plan and directory.
pub struct Session {
    pub exp: Experiment,
    pub plan: Plan,
    pub dir: RunDir,
}

/// Creates the run directory for `exp`, decides which cells this machine
/// can run (one note per skipped cell), and writes the experiment copy,
/// config copies, provenance and plan.
pub fn begin(
    exp: Experiment,
    dir: RunDir,
    exec: &mut dyn Executor,
    observer: &mut dyn Observer,
    provenance: &Provenance,
) -> Result<Session, SessionError> {
    let skipped: Vec<Option<String>> = exp.cells.iter().map(|c| exec.can_run(c).err()).collect();
    for (cell, why) in exp.cells.iter().zip(&skipped) {
        if let Some(why) = why {
            observer.note(&format!("skipping {}: {why}", cell.id));
        }
    }
    let seed = exp.trials.seed.unwrap_or_else(fresh_seed);
    let plan = Plan::new(&dir.id, &exp, seed, &skipped);
    // Every file the run is made from, copied verbatim and hashed.
    let mut files = vec![(EXPERIMENT.to_string(), exp.text.as_str())];
    for c in &exp.target.configs {
        files.push((format!("configs/{}", c.name), c.text.as_str()));
    }
    let inputs = exp.load.table.inputs();
    for i in &inputs {
        files.push((i.name.clone(), i.text.as_str()));
    }
    let mut provenance = provenance.clone();
    for (name, text) in files {
        dir.write_file(&name, text.as_bytes())?;
        provenance
            .inputs
            .insert(name, crate::provenance::sha256_hex(text.as_bytes()));
    }
    dir.write_json(PROVENANCE, &provenance)?;
    dir.write_json(PLAN, &plan)?;
    Ok(Session { exp, plan, dir })
}

/// Reopens an interrupted run: the experiment from its copy (configs from
/// `configs/`), the plan as written, and a resume entry in the provenance.
pub fn resume(path: &Path) -> Result<Session, SessionError> {
    let dir = RunDir::open(path)?;
    let text = std::fs::read_to_string(dir.file(EXPERIMENT)).map_err(|source| RunDirError::Io {
        path: dir.file(EXPERIMENT),
        source,
    })?;
    let exp = Experiment::parse(
        &text,
        &dir.file(EXPERIMENT),
        &ConfigSource::RunDir(dir.path.clone()),
    )?;
    let plan: Plan = dir.read_json(PLAN)?;
    let same = plan.cells.len() == exp.cells.len()
        && plan.cells.iter().zip(&exp.cells).all(|(p, c)| p.id == c.id);
    if !same {
        return Err(SessionError::Mismatch(dir.path.clone()));
    }
    let mut prov: Provenance = dir.read_json(PROVENANCE).unwrap_or_default();
    prov.resumed.push(Resume {
        started_utc: now_utc(),
        command_line: crate::provenance::command_line(),
        tare_version: env!("CARGO_PKG_VERSION").to_string(),
    });
    dir.write_json(PROVENANCE, &prov)?;
    Ok(Session { exp, plan, dir })
}

impl Session {
    /// Runs every trial not yet on disk.
    pub fn run(
        &self,
        exec: &mut dyn Executor,
        observer: &mut dyn Observer,
        interrupt: &AtomicBool,
    ) -> Result<Summary, SessionError> {
        Ok(Schedule {
            exp: &self.exp,
            plan: &self.plan,
            dir: &self.dir,
            exec,
            observer,
            interrupt,
        }
        .run()?)
    }
}
