//! `tare tune FILE`: apply each nginx recommendation alone, measure it in an
//! interleaved experiment, keep what helps beyond the noise (seed 003's rule of
//! one parameter, or one class of parameters, at a time: docs/studies.md, seed
//! 003, "The article's rules"; the noise test is tare's).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use tare_engine::units::parse_duration;
use tare_tune::{TargetChoice, TuneOptions, Tuning};

#[derive(Args, Debug)]
pub(crate) struct TuneArgs {
    /// The nginx config to start from (the baseline).
    pub(crate) config: PathBuf,
    /// What to measure: a reverse proxy in front of a tare serve backend tare
    /// starts (nginx-proxy), a static server (nginx), or auto: nginx-proxy if
    /// the config has proxy_pass.
    #[arg(long, default_value = "auto", value_parser = ["auto", "nginx", "nginx-proxy"])]
    pub(crate) target: String,
    /// Where nginx runs while measured (any placement `tare doctor` lists;
    /// default: the reference, a plain process on the host).
    #[arg(long, default_value_t = tare_deploy::PlacementKind::reference())]
    pub(crate) placement: tare_deploy::PlacementKind,
    /// Connections of the load.
    #[arg(short = 'c', long, default_value_t = 200)]
    pub(crate) connections: u32,
    /// Generator threads.
    #[arg(short = 't', long, default_value_t = 2)]
    pub(crate) threads: u32,
    /// Measured load per trial.
    #[arg(short = 'd', long, default_value = "3s", value_parser = parse_duration)]
    pub(crate) duration: Duration,
    /// Warm-up before each trial.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub(crate) warmup: Duration,
    /// Trials per config (5 or more: 3 against 3 can never be significant).
    #[arg(long, default_value_t = 5)]
    pub(crate) trials: u32,
    /// Idle time after each trial.
    #[arg(long, default_value = "500ms", value_parser = parse_duration)]
    pub(crate) cooldown: Duration,
    /// Most rounds: each starts from the config tuned so far and measures what is still recommended.
    #[arg(long, default_value_t = tare_tune::MAX_ROUNDS)]
    pub(crate) rounds: usize,
    /// Work directory: candidate configs, both runs, tuned.conf (default: tune-<file name>).
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// Also write the findings as JSON ('-': stdout instead of the table).
    #[arg(long, value_name = "PATH|-")]
    pub(crate) json: Option<String>,
}

pub(crate) fn run(args: TuneArgs) -> anyhow::Result<ExitCode> {
    if args.trials < 2 {
        anyhow::bail!("--trials must be at least 2 (5 or more to ever be significant)");
    }
    // The bounds an experiment file has (tune writes one per round), checked
    // before anything runs (docs/experiments.md, "Limits").
    use tare_engine::bounds::{self, duration_at_most};
    if args.trials > bounds::MAX_TRIALS {
        anyhow::bail!("--trials must be at most {}", bounds::MAX_TRIALS);
    }
    if args.rounds > bounds::MAX_TUNE_ROUNDS {
        anyhow::bail!("--rounds must be at most {}", bounds::MAX_TUNE_ROUNDS);
    }
    for (flag, d, max) in [
        ("--duration", args.duration, bounds::MAX_DURATION),
        ("--warmup", args.warmup, bounds::MAX_WARMUP),
        ("--cooldown", args.cooldown, bounds::MAX_COOLDOWN),
    ] {
        duration_at_most(d, max).map_err(|m| anyhow::anyhow!("{flag} {m}"))?;
    }
    let out = args.out.clone().unwrap_or_else(|| {
        let stem = args
            .config
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "nginx".into());
        PathBuf::from(format!("tune-{stem}"))
    });
    let target = match args.target.as_str() {
        "nginx" => TargetChoice::Static,
        "nginx-proxy" => TargetChoice::Proxy,
        _ => TargetChoice::Auto,
    };
    let opts = TuneOptions {
        config: args.config.clone(),
        target,
        placement: args.placement.to_string(),
        connections: args.connections,
        threads: args.threads,
        duration: args.duration,
        warmup: args.warmup,
        trials: args.trials,
        cooldown: args.cooldown,
        max_rounds: args.rounds,
        out,
    };
    let interrupt = tare_runner::interrupt::install(tare_deploy::teardown_all)
        .context("cannot install the Ctrl-C handler")?;
    let mut exec = |toml: &std::path::Path, dir: &std::path::Path| {
        tare_tune::run_experiment(toml, dir, interrupt.clone())
    };
    let tuning: Tuning = tare_tune::tune(&opts, &mut exec, &mut |line| eprintln!("{line}"))?;
    let json = serde_json::to_string_pretty(&tuning)?;
    match args.json.as_deref() {
        Some("-") => println!("{json}"),
        other => {
            print!("{}", tare_tune::table::render(&tuning));
            if let Some(path) = other {
                std::fs::write(path, json + "\n").with_context(|| format!("writing {path}"))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
