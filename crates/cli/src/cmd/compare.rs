//! `tare compare DIR_A DIR_B`: two recorded runs side by side, benchstat
//! style: per cell in both, old and new medians with intervals, the change
//! with its interval, and the p-value, `~` when not significant.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use tare_analysis::{compare, incomparable, load_notes, load_run};
use tare_report::{exporter, Format};

use super::report::emit_stdout;

#[derive(Args, Debug)]
pub(crate) struct CompareArgs {
    /// The old (baseline) run directory.
    pub(crate) dir_a: PathBuf,
    /// The new run directory.
    pub(crate) dir_b: PathBuf,
    /// Write the comparison as JSON to PATH (`-` for stdout, instead of the text).
    #[arg(long, value_name = "PATH")]
    pub(crate) json: Option<PathBuf>,
    /// Compare runs of different targets or loads, or a --debug-mode run
    /// with a real one, with a warning instead of refusing.
    #[arg(long)]
    pub(crate) force: bool,
}

pub(crate) fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let old = load_run(&args.dir_a)?;
    let new = load_run(&args.dir_b)?;
    for run in [&old, &new] {
        for w in &run.warnings {
            eprintln!("tare: {}: {w}", run.run_id);
        }
    }
    // Runs that measured different things are not a change (docs/analysis.md,
    // "Compare").
    let why = incomparable(&old, &new);
    if !why.is_empty() {
        let said = why.join("; ");
        if !args.force {
            anyhow::bail!(
                "{} and {} are not comparable: {said} (--force compares them anyway)",
                args.dir_a.display(),
                args.dir_b.display()
            );
        }
        eprintln!("tare: warning: compared anyway (--force): {said}");
    }
    for note in load_notes(&old, &new) {
        eprintln!("tare: note: {note}; rates and latencies compare, counts do not");
    }
    let comparison = compare(&old, &new);
    match args.json {
        Some(path) if path.as_os_str() == "-" => {
            emit_stdout(&exporter(Format::Json).comparison(&comparison)?)
        }
        Some(path) => {
            std::fs::write(&path, exporter(Format::Json).comparison(&comparison)?)
                .with_context(|| format!("cannot write {}", path.display()))?;
            emit_stdout(&exporter(Format::Text).comparison(&comparison)?)
        }
        None => emit_stdout(&exporter(Format::Text).comparison(&comparison)?),
    }
}
