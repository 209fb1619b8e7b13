//! `tare report DIR`: re-analyse a recorded run and print its report: the
//! per-cell table, the attribution waterfall and the fairness findings.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use tare_analysis::load_run;
use tare_report::{exporter, Format, Report};

#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    /// The run directory (`tare run --out DIR`).
    pub(crate) dir: PathBuf,
    /// Also write the self-contained HTML report to PATH (opens offline).
    #[arg(long, value_name = "PATH")]
    pub(crate) html: Option<PathBuf>,
    /// Write the analysis as JSON to PATH (`-` for stdout, instead of the text).
    #[arg(long, value_name = "PATH")]
    pub(crate) json: Option<PathBuf>,
    /// Attribution chain, one cell id per flag, baseline first (overrides
    /// the plan's chain), e.g. `--chain config=default --chain config=tuned`.
    #[arg(long = "chain", value_name = "CELL")]
    pub(crate) chain: Vec<String>,
    /// Leave the trials the monitor flagged as disturbed (steal, other
    /// processes' CPU, CPU frequency changes) out of the statistics; the
    /// report still lists them and says how many it dropped.
    #[arg(long)]
    pub(crate) exclude_disturbed: bool,
}

pub(crate) fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let mut run = load_run(&args.dir)?;
    if args.exclude_disturbed {
        run.exclude_disturbed();
    }
    let report = if args.chain.is_empty() {
        Report::new(&run)
    } else {
        Report::with_chain(&run, &args.chain)
    };
    if let Some(path) = &args.html {
        std::fs::write(path, tare_report::html::render_report(&run, &report))
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("tare: HTML report written to {}", path.display());
    }
    let printed = match args.json {
        Some(path) if path.as_os_str() == "-" => emit_stdout(&exporter(Format::Json).run(&report)?),
        Some(path) => {
            std::fs::write(&path, exporter(Format::Json).run(&report)?)
                .with_context(|| format!("cannot write {}", path.display()))?;
            emit_stdout(&exporter(Format::Text).run(&report)?)
        }
        None => emit_stdout(&exporter(Format::Text).run(&report)?),
    }?;
    if let Some(why) = nothing_measured(&run) {
        eprintln!("tare report: {why}");
        return Ok(ExitCode::from(1));
    }
    Ok(printed)
}

/// Why a run measured nothing, when no trial of it is usable: a script must
/// not read an all-failed run as a result, whether `tare run` just made it
/// or `tare report` reads it again (docs/experiments.md, "Failed trials").
pub(crate) fn nothing_measured(run: &tare_analysis::Run) -> Option<String> {
    if run.trials.iter().any(|t| t.usable().is_some()) {
        return None;
    }
    let first = run.trials.iter().find_map(|t| t.error.as_deref());
    Some(format!(
        "no trial measured anything (first failure: {}); the report says why",
        first.unwrap_or("nothing completed")
    ))
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
pub(crate) fn emit_stdout(bytes: &[u8]) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("cannot write to stdout")
        }
        _ => Ok(ExitCode::SUCCESS),
    }
}
