//! `tare run [EXPERIMENT.toml] [--out DIR]`, `tare run --resume DIR`: runs an
//! experiment (the built-in quick one without a file) into a run directory,
//! then prints its report. See `docs/experiments.md`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use tare_report::{exporter, Format, Report};
use tare_runner::debug::DebugExecutor;
use tare_runner::observer::{Bars, Observer};
use tare_runner::provenance::Provenance;
use tare_runner::real::RealExecutor;
use tare_runner::session::{self, Session};
use tare_runner::{Executor, Experiment, Outcome, RunDir};

#[derive(Args, Debug)]
pub(crate) struct RunArgs {
    /// The experiment file (TOML, see docs/experiments.md); none: the built-in quick experiment.
    pub(crate) experiment: Option<PathBuf>,
    /// The run directory (default: runs/<UTC date>-<host>-<id> in the current directory).
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// Continue an interrupted run in DIR where it stopped.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["experiment", "out"])]
    pub(crate) resume: Option<PathBuf>,
    /// Check the experiment file and print its cells, without running anything.
    #[arg(long, conflicts_with = "resume")]
    pub(crate) check: bool,
    /// No progress bar (notes and the report still print).
    #[arg(long, short)]
    pub(crate) quiet: bool,
    /// Deploy nothing and generate no load: a mock placement and engine
    /// give every cell a fixed, made-up throughput (no cool-downs), so the
    /// rest of a run (cells, specs, the fairness check, records, the report)
    /// can be tried in a second. For testing tare itself, as hyperfine's
    /// --debug-mode; the report says "debug mode" in every result's target.
    #[arg(long)]
    pub(crate) debug_mode: bool,
}

pub(crate) fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    if args.check {
        let exp = experiment(&args)?;
        println!("{}: {} cells", exp.path.display(), exp.cells.len());
        for c in &exp.cells {
            println!("  {}", c.id);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let interrupt = tare_runner::interrupt::install(tare_deploy::teardown_all)
        .context("cannot install the Ctrl-C handler")?;
    let mut notes = Notes;
    let executor = |exp: &Experiment, dir: &std::path::Path| -> Box<dyn Executor> {
        if args.debug_mode {
            Box::new(DebugExecutor::new(exp, dir))
        } else {
            Box::new(RealExecutor::new(exp, dir, interrupt.clone()))
        }
    };
    let (session, mut exec) = match &args.resume {
        Some(dir) => {
            let mut s = session::resume(dir)?;
            if args.debug_mode {
                s.exp.trials.cooldown = std::time::Duration::ZERO;
            }
            let mut exec = executor(&s.exp, &s.dir.path);
            exec.prepare()?;
            eprintln!(
                "tare run: resuming {} in {}",
                s.exp.name,
                s.dir.path.display()
            );
            (s, exec)
        }
        None => {
            let mut exp = experiment(&args)?;
            if args.debug_mode {
                // Nothing runs, so nothing needs to cool down.
                exp.trials.cooldown = std::time::Duration::ZERO;
            }
            let cwd = std::env::current_dir().context("no current directory")?;
            let dir = RunDir::create(args.out.as_deref(), &cwd)?;
            let mut exec = executor(&exp, &dir.path);
            let mut provenance = Provenance::collect();
            provenance.hosts = exec.prepare()?;
            eprintln!(
                "tare run: {}: {} cells x {} trials ({} load each, {} warm-up) into {}",
                exp.name,
                exp.cells.len(),
                exp.trials.count,
                humantime::format_duration(exp.load.duration()),
                humantime::format_duration(exp.load.shared.warmup),
                dir.path.display()
            );
            let s = session::begin(exp, dir, exec.as_mut(), &mut notes, &provenance)?;
            (s, exec)
        }
    };
    let mut observer: Box<dyn Observer> = if args.quiet {
        Box::new(Notes)
    } else {
        Box::new(Bars::new())
    };
    let dir = session.dir.path.display().to_string();
    // A run that stops on an error (a full disk) keeps every trial it
    // wrote: say how to go on once the cause is fixed.
    let summary = session
        .run(exec.as_mut(), observer.as_mut(), &interrupt)
        .with_context(|| {
            format!("the run stopped; its trials are kept: resume with `tare run --resume {dir}` once this is fixed")
        })?;
    drop(observer);
    if summary.outcome == Outcome::Interrupted {
        eprintln!(
            "tare run: interrupted; {} trials are on disk in {dir}\n  resume with: tare run --resume {dir}",
            summary.trials_on_disk
        );
        return Ok(ExitCode::from(130));
    }
    eprintln!(
        "tare run: {} trials ({} failed) in {:.1} s, {:.1} s of it load; results in {dir}",
        summary.trials_run,
        summary.failed,
        summary.wall_time.as_secs_f64(),
        summary.load_time.as_secs_f64()
    );
    let run = report(&session).with_context(|| {
        format!("the run is complete, its report is not: `tare report {dir}` makes it once this is fixed")
    })?;
    if let Some(why) = super::report::nothing_measured(&run) {
        eprintln!("tare run: {why}");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn experiment(args: &RunArgs) -> anyhow::Result<Experiment> {
    Ok(match &args.experiment {
        Some(path) => Experiment::load(path)?,
        None => Experiment::quick(),
    })
}

/// The report of the finished run: printed, and kept in the run directory
/// as `report.txt`, `report.json` and the self-contained `report.html`.
fn report(session: &Session) -> anyhow::Result<tare_analysis::Run> {
    let run = tare_analysis::load_run(&session.dir.path)?;
    let report = Report::new(&run);
    let text = exporter(Format::Text).run(&report)?;
    let json = exporter(Format::Json).run(&report)?;
    session.dir.write_file("report.txt", &text)?;
    session.dir.write_file("report.json", &json)?;
    session.dir.write_file(
        "report.html",
        tare_report::html::render_report(&run, &report).as_bytes(),
    )?;
    super::report::emit_stdout(&text)?;
    Ok(run)
}

/// Prints notes (skipped cells) and fairness findings on stderr, nothing else.
struct Notes;

impl Observer for Notes {
    fn note(&mut self, line: &str) {
        eprintln!("{line}");
    }
    fn findings(&mut self, findings: &[tare_runner::Finding]) {
        for f in findings {
            eprintln!("fairness: {f}");
        }
    }
}
