//! `tare tune FILE`: seed 003's rules, "don't guess, measure" and "adjust one
//! parameter, or one class of parameters, at a time" (docs/studies.md, seed
//! 003, "The article's rules"), automated: one advised change at a time, where
//! a change is one rule's edits (one parameter, or a class such as the
//! upstream pool's three settings). Keeping a change only when it helps
//! beyond the noise is tare's addition.
//!
//! 1. `candidates`: the advisor's recommendations for FILE
//!    (`tare nginx advise`), each applied *alone* to the baseline, as one
//!    config per change; changes that need a person (sysctls) are listed, not
//!    applied.
//! 2. `experiment`: an experiment whose `config` factor is the baseline and
//!    every candidate, run by the ordinary runner: interleaved, repeated,
//!    recorded (phase 1). Then the kept changes together against the baseline
//!    (phase 2).
//! 3. `decide`: a change is kept only when it helps beyond the noise: more
//!    throughput, or less p99 latency, or fewer errors, significant by
//!    Mann-Whitney at 5%, and no significant loss of throughput.
//! 4. [`table`]: what each change did, and the tuned config written out.
//!
//! `target`: a config with `proxy_pass` is measured as a reverse proxy in
//! front of a `tare serve` backend tare starts (seed 003's set-up, the
//! `nginx-proxy` target), so the upstream rules (connection pool, buffering)
//! are measured like the others; any other config as a static server.
//!
//! Rounds repeat the method from the tuned config (up to [`MAX_ROUNDS`] by
//! default): a
//! bottleneck removed in one round (too few worker_connections refusing
//! clients) can unmask what another change is worth in the next.

// Functions a reader can hold: none over 100 lines (clippy.toml) outside tests.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod candidates;
mod decide;
mod experiment;
pub mod table;
mod target;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde::Serialize;

pub use candidates::Candidate;
use candidates::CandidateSet;
pub use decide::Verdict;
pub use target::{TargetChoice, TuneTarget};

#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    #[error("{0}")]
    Config(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Experiment(#[from] tare_runner::ExperimentError),
    #[error(transparent)]
    Session(#[from] tare_runner::session::SessionError),
    #[error(transparent)]
    Analysis(#[from] tare_analysis::AnalysisError),
    #[error("interrupted; what was measured is in {0}")]
    Interrupted(PathBuf),
}

/// How to measure each candidate.
#[derive(Clone, Debug)]
pub struct TuneOptions {
    /// The nginx config to start from (the baseline).
    pub config: PathBuf,
    /// Static server, reverse proxy, or decided from the config.
    pub target: TargetChoice,
    /// Where nginx runs (any placement; `tare doctor` lists them).
    pub placement: String,
    pub connections: u32,
    pub threads: u32,
    pub duration: Duration,
    pub warmup: Duration,
    pub trials: u32,
    /// Idle time after each trial.
    pub cooldown: Duration,
    /// Most rounds (each re-measures what the advisor still recommends).
    pub max_rounds: usize,
    /// The work directory: candidate configs, both runs, the tuned config.
    pub out: PathBuf,
}

/// One round: the current baseline, each remaining recommendation alone
/// against it, then the kept ones together.
#[derive(Debug, Serialize)]
pub struct Round {
    pub verdicts: Vec<Verdict>,
    /// The kept changes together against this round's baseline.
    pub combined: Option<Verdict>,
    pub runs: Vec<PathBuf>,
}

/// Everything a tuning session found.
#[derive(Debug, Serialize)]
pub struct Tuning {
    pub baseline: PathBuf,
    /// What was measured: `nginx` (a static server) or `nginx-proxy`.
    pub target: TuneTarget,
    /// Round 1 measures every recommendation against the given config; each
    /// later round starts from the previous round's tuned config and measures
    /// what the advisor still recommends there (a bottleneck fixed in one
    /// round can unmask what the next change is worth).
    pub rounds: Vec<Round>,
    /// Recommendations that need a person (not applied).
    pub manual: Vec<String>,
    /// Rules kept, in the order they were adopted.
    pub kept: Vec<String>,
    /// The tuned config, if any change was kept.
    pub tuned: Option<PathBuf>,
}

/// Default number of rounds.
pub const MAX_ROUNDS: usize = 3;

/// Runs the whole method; `say` receives one-line progress notes.
pub fn tune(
    opts: &TuneOptions,
    exec: &mut dyn FnMut(&Path, &Path) -> Result<tare_analysis::Run, TuneError>,
    say: &mut dyn FnMut(&str),
) -> Result<Tuning, TuneError> {
    let mut tuning = Tuning {
        baseline: opts.config.clone(),
        target: TuneTarget::Nginx,
        rounds: Vec::new(),
        manual: Vec::new(),
        kept: Vec::new(),
        tuned: None,
    };
    let mut current = opts.config.clone();
    for round in 1..=opts.max_rounds.max(1) {
        let set = candidates::prepare(&current)?;
        if round == 1 {
            tuning.target = target::resolve(&opts.config, &set.payload, opts.target)?;
            if tuning.target == TuneTarget::NginxProxy {
                say("tare tune: a reverse proxy: measured in front of a tare serve backend tare starts");
            }
            // Only a config that can be measured gets a work directory.
            std::fs::create_dir_all(&opts.out).map_err(|source| TuneError::Io {
                context: format!("creating {}", opts.out.display()),
                source,
            })?;
        }
        for m in &set.manual {
            if !tuning.manual.contains(m) {
                say(&format!("tare tune: needs a person, not measured: {m}"));
                tuning.manual.push(m.clone());
            }
        }
        match one_round(opts, &mut tuning, round, &set, exec, say)? {
            Some(tuned) => current = tuned,
            None => break,
        }
    }
    Ok(tuning)
}

/// Round `round` from `set`: each fresh change alone against the
/// baseline, then the kept ones together. Returns the config tuned in
/// it, `None` when the method stops here.
fn one_round(
    opts: &TuneOptions,
    tuning: &mut Tuning,
    round: usize,
    set: &CandidateSet,
    exec: &mut dyn FnMut(&Path, &Path) -> Result<tare_analysis::Run, TuneError>,
    say: &mut dyn FnMut(&str),
) -> Result<Option<PathBuf>, TuneError> {
    // A rule already kept is never re-measured (its advice may persist,
    // e.g. a value the advisor would raise further).
    let fresh: Vec<&Candidate> = set
        .candidates
        .iter()
        .filter(|c| !tuning.kept.contains(&c.rule))
        .collect();
    if fresh.is_empty() {
        if round == 1 {
            say("tare tune: the advisor has nothing a program can apply to this config");
        }
        return Ok(None);
    }
    let against = if round == 1 {
        "the baseline"
    } else {
        "the config tuned so far"
    };
    say(&format!(
        "tare tune: round {round}: {} changes, each alone against {against}",
        fresh.len(),
    ));
    let levels: Vec<(String, String)> =
        std::iter::once(("baseline".to_string(), set.baseline_text.clone()))
            .chain(fresh.iter().map(|c| (c.name.clone(), c.text.clone())))
            .collect();
    let (toml_path, run_dir) =
        experiment::write(opts, tuning.target, &format!("round{round}-alone"), &levels)?;
    let run = exec(&toml_path, &run_dir)?;
    let mut runs = vec![run_dir];
    let verdicts: Vec<Verdict> = fresh
        .iter()
        .map(|c| decide::judge(&run, &c.name, &c.rule, &c.priority))
        .collect();
    let kept: Vec<&Candidate> = fresh
        .iter()
        .zip(&verdicts)
        .filter(|(_, v)| v.kept)
        .map(|(c, _)| *c)
        .collect();
    if kept.is_empty() {
        tuning.rounds.push(Round {
            verdicts,
            combined: None,
            runs,
        });
        return Ok(None);
    }
    let (text, skipped) = candidates::combine(set, &kept)?;
    for s in skipped {
        say(&format!("tare tune: {s}"));
    }
    say(&format!(
        "tare tune: round {round}: the {} kept changes together against {against}",
        kept.len(),
    ));
    let levels = vec![
        ("baseline".to_string(), set.baseline_text.clone()),
        ("tuned".to_string(), text.clone()),
    ];
    let (toml_path, run_dir) = experiment::write(
        opts,
        tuning.target,
        &format!("round{round}-together"),
        &levels,
    )?;
    let run = exec(&toml_path, &run_dir)?;
    runs.push(run_dir);
    let combined = decide::judge(&run, "tuned", "kept changes together", "");
    let holds = combined.kept;
    tuning.rounds.push(Round {
        verdicts,
        combined: Some(combined),
        runs,
    });
    if !holds {
        say("tare tune: together, the kept changes did not beat the baseline beyond the noise; stopping");
        return Ok(None);
    }
    let path = opts.out.join(format!("tuned-round{round}.conf"));
    write_file(&path, &text)?;
    let final_path = opts.out.join("tuned.conf");
    write_file(&final_path, &text)?;
    tuning.kept.extend(kept.iter().map(|c| c.rule.clone()));
    tuning.tuned = Some(final_path);
    Ok(Some(path))
}

fn write_file(path: &Path, text: &str) -> Result<(), TuneError> {
    std::fs::write(path, text).map_err(|source| TuneError::Io {
        context: format!("writing {}", path.display()),
        source,
    })
}

/// The ordinary runner, as `tare run` uses it: real deployments, real load.
pub fn run_experiment(
    toml_path: &Path,
    run_dir: &Path,
    interrupt: std::sync::Arc<AtomicBool>,
) -> Result<tare_analysis::Run, TuneError> {
    use tare_runner::observer::Observer;
    use tare_runner::provenance::Provenance;
    use tare_runner::real::RealExecutor;
    use tare_runner::{session, Experiment, Outcome, RunDir};

    struct Quiet;
    impl Observer for Quiet {
        fn note(&mut self, line: &str) {
            eprintln!("{line}");
        }
    }
    let exp = Experiment::load(toml_path)?;
    let base = run_dir.parent().unwrap_or(Path::new("."));
    let dir =
        RunDir::create(Some(run_dir), base).map_err(tare_runner::session::SessionError::from)?;
    let mut exec = RealExecutor::new(&exp, &dir.path, interrupt.clone());
    let mut observer = Quiet;
    let s = session::begin(exp, dir, &mut exec, &mut observer, &Provenance::collect())?;
    let summary = s.run(&mut exec, &mut observer, &interrupt)?;
    if summary.outcome == Outcome::Interrupted {
        return Err(TuneError::Interrupted(run_dir.to_path_buf()));
    }
    Ok(tare_analysis::load_run(run_dir)?)
}
