//! Shared by the runner's integration tests: an experiment file written
//! and loaded, and a real executor on a fresh run directory.

#![allow(dead_code)]

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use tare_runner::real::RealExecutor;
use tare_runner::{Experiment, RunDir};

/// `text` written to `<dir>/<file>` and loaded.
pub(crate) fn experiment(dir: &Path, file: &str, text: &str) -> Experiment {
    let path = dir.join(file);
    std::fs::write(&path, text).unwrap();
    Experiment::load(&path).unwrap()
}

/// The run directory `<dir>/tare-test-<name>`, the run's interrupt flag
/// (never raised) and a real executor of `exp` on them.
pub(crate) fn real(
    exp: &Experiment,
    dir: &Path,
    name: &str,
) -> (RunDir, Arc<AtomicBool>, RealExecutor) {
    let run = RunDir::create(Some(&dir.join(format!("tare-test-{name}"))), dir).unwrap();
    let flag = Arc::new(AtomicBool::new(false));
    let exec = RealExecutor::new(exp, &run.path, flag.clone());
    (run, flag, exec)
}
