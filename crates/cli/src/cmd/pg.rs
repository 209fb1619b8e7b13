//! `tare pg`: PostgreSQL load with pgbench's flags and text, the JSON
//! contract, `--init` to create pgbench's tables, and the open loop's
//! `-R`, `--ramp` and `--find-max --slo` (docs/open-loop.md).
//!
//! pgbench's `-h` is the host, so clap's `-h` help is off for this
//! subcommand; `--help` remains.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{ArgAction, Args};
use tare_pg::report::{self, TextOptions};
use tare_pg::script::split_weight;
use tare_pg::{ConnFlags, ConnParams, Length, Pg, PgConfig, ScriptSource, ScriptSpec};
use tare_record::LoadResult;

use super::load_args::{self, LoadArgs};
use super::pgbench_flags::{check_flags, listing, InitArgs, PgbenchArgs};

/// A valued flag given twice takes its last value, as in pgbench (getopt);
/// repeatable flags (`-f`, `-b`, `-D`, `-n`, `-S`) add up.
#[derive(Args, Debug)]
#[command(disable_help_flag = true, args_override_self = true)]
pub(crate) struct PgArgs {
    /// Database server host, or a Unix socket directory if it starts with '/' (PGHOST).
    #[arg(short = 'h', long = "host", value_name = "HOST|SOCKETDIR")]
    pub host: Option<String>,
    /// Server port (PGPORT; default 5432).
    #[arg(short = 'p', long = "port")]
    pub port: Option<u16>,
    /// User name (PGUSER; default: the OS user). Passwords come from PGPASSWORD or ~/.pgpass.
    #[arg(short = 'U', long = "username")]
    pub user: Option<String>,
    /// Database name (PGDATABASE; default: the user name).
    #[arg(short = 'd', long = "dbname")]
    pub dbname: Option<String>,
    /// Database name, as pgbench's positional argument.
    #[arg(value_name = "DBNAME")]
    pub dbname_pos: Option<String>,
    /// Number of concurrent clients (database sessions; default 1).
    #[arg(
        short = 'c',
        long = "client",
        visible_alias = "clients",
        value_name = "N"
    )]
    pub clients: Option<String>,
    /// Number of threads (default 1).
    #[arg(short = 'j', long = "jobs", value_name = "N")]
    pub threads: Option<String>,
    /// Duration of the run in seconds.
    #[arg(short = 'T', long = "time", value_name = "SECS")]
    pub time: Option<String>,
    /// Transactions per client (default 10 when -T is not given).
    #[arg(short = 't', long = "transactions", value_name = "N")]
    pub transactions: Option<String>,
    /// How statements are sent: simple (default), extended or prepared.
    #[arg(short = 'M', long = "protocol", value_name = "MODE")]
    pub mode: Option<String>,
    /// A script file, optionally weighted: FILE[@WEIGHT] (repeatable).
    #[arg(short = 'f', long = "file", value_name = "FILE[@W]")]
    pub files: Vec<String>,
    /// A built-in script: tpcb-like, simple-update, select-only, optionally @WEIGHT (repeatable).
    #[arg(short = 'b', long = "builtin", value_name = "NAME[@W]")]
    pub builtins: Vec<String>,
    /// The built-in select-only script (-b select-only; repeatable, as in pgbench).
    #[arg(short = 'S', long = "select-only", action = ArgAction::Count)]
    pub select_only: u8,
    /// The built-in simple-update script (-b simple-update; repeatable).
    #[arg(short = 'N', long = "skip-some-updates", action = ArgAction::Count)]
    pub simple_update: u8,
    /// A new connection for every transaction.
    #[arg(short = 'C', long = "connect", action = ArgAction::Count)]
    pub connect: u8,
    /// Report the average latency of every command.
    #[arg(
        short = 'r',
        long = "report-per-command",
        visible_alias = "report-latencies",
        action = ArgAction::Count
    )]
    pub per_command: u8,
    /// Print a progress line on stderr every SECS seconds.
    #[arg(short = 'P', long = "progress", value_name = "SECS")]
    pub progress: Option<String>,
    /// With -P: the progress lines carry a Unix timestamp.
    #[arg(long = "progress-timestamp", action = ArgAction::Count)]
    pub progress_timestamp: u8,
    /// Do not vacuum pgbench's tables before a built-in run.
    #[arg(short = 'n', long = "no-vacuum", action = ArgAction::Count)]
    pub no_vacuum: u8,
    /// Also vacuum pgbench_accounts before a built-in run.
    #[arg(short = 'v', long = "vacuum-all", action = ArgAction::Count)]
    pub vacuum_all: u8,
    /// Scale: with --init, how much data; otherwise the :scale variable.
    #[arg(short = 's', long = "scale")]
    pub scale: Option<String>,
    /// Define a script variable: NAME=VALUE (repeatable).
    #[arg(short = 'D', long = "define", value_name = "NAME=VALUE")]
    pub define: Vec<String>,
    /// Seed of the random generators: an unsigned integer, "time" (default) or "rand".
    #[arg(long = "random-seed", value_name = "SEED")]
    pub random_seed: Option<String>,
    /// Print a built-in script (NAME) and exit.
    #[arg(long = "show-script", value_name = "NAME")]
    pub show_script: Option<String>,
    /// Create and fill pgbench's tables (with -s SCALE), then exit.
    #[arg(short = 'i', long = "init", visible_alias = "initialize", action = ArgAction::Count)]
    pub init: u8,
    #[command(flatten)]
    pub initopts: InitArgs,
    #[command(flatten)]
    pub pgbench: PgbenchArgs,
    /// Seconds to wait for a connection (as --timeout; default 10).
    #[arg(long, value_name = "SECS", conflicts_with = "timeout")]
    pub connect_timeout: Option<u64>,
    /// --warmup, --timeout, -R/--rate, --find-max, --json, ...: what every
    /// load engine shares.
    #[command(flatten)]
    pub load: LoadArgs,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    pub help: Option<bool>,
}

/// `tare pg`: as pgbench, a mistake in the flags, the scripts or the
/// connection exits 1 and a run that aborted clients exits 2.
pub(crate) fn run(args: PgArgs) -> anyhow::Result<ExitCode> {
    match run_inner(args) {
        Ok(code) => Ok(code),
        Err(e) => {
            let mut line = String::new();
            for cause in e.chain() {
                let text = cause.to_string();
                if !line.contains(&text) {
                    if !line.is_empty() {
                        line.push_str(": ");
                    }
                    line.push_str(&text);
                }
            }
            eprintln!("tare: {line}");
            Ok(ExitCode::from(1))
        }
    }
}

fn run_inner(args: PgArgs) -> anyhow::Result<ExitCode> {
    if let Some(code) = listing(&args)? {
        return Ok(code);
    }
    let checked = check_flags(&args)?;
    let flags = ConnFlags {
        host: args.host.clone(),
        port: args.port,
        user: args.user.clone(),
        database: args.dbname.clone().or(args.dbname_pos.clone()),
        password: None,
    };
    let conn = ConnParams::from_env(&flags)?;
    let mut cfg = PgConfig::new(conn.endpoint.clone(), &conn.user, &conn.database);
    cfg.conn = conn;
    if let Some(secs) = args.connect_timeout {
        cfg.load.timeout = Duration::from_secs(secs.max(1));
    }
    if args.init > 0 {
        if !args.load.allow_remote && !cfg.conn.endpoint.is_local() {
            anyhow::bail!(
                "{} is not a loopback address or Unix socket; use --allow-remote",
                cfg.conn.endpoint
            );
        }
        let timeout = args.load.timeout.unwrap_or(cfg.load.timeout);
        let opts = args
            .initopts
            .options(checked.scale.unwrap_or(1), args.no_vacuum > 0)?;
        tare_pg::init::init(&cfg.conn, &opts, timeout, &mut |line| eprintln!("{line}"))?;
        return Ok(ExitCode::SUCCESS);
    }
    // pgbench: "Don't need more threads than there are clients."
    cfg.load.connections = checked.clients;
    cfg.load.threads = match checked.clients {
        0 => checked.threads,
        c => checked.threads.min(c),
    };
    match (checked.time, checked.transactions) {
        (Some(_), Some(_)) => anyhow::bail!(
            "specify either a number of transactions (-t) or a duration (-T), not both"
        ),
        (Some(t), None) => cfg.set_length(Length::Duration(Duration::from_secs(t))),
        (None, t) => cfg.set_length(Length::TransactionsPerClient(t.unwrap_or(10))),
    }
    args.load.apply(&mut cfg.load)?;
    cfg.mode = checked.mode;
    cfg.scripts = scripts(&args)?;
    cfg.connect_per_transaction = args.connect > 0;
    cfg.per_statement = args.per_command > 0;
    cfg.progress_interval = checked.progress.map(Duration::from_secs);
    cfg.progress_timestamp = args.progress_timestamp > 0;
    cfg.scale = checked.scale;
    cfg.vacuum = args.no_vacuum == 0;
    cfg.vacuum_accounts = args.vacuum_all > 0;
    cfg.random_seed = checked.random_seed;
    if let Some(seed) = checked.random_seed {
        eprintln!("tare: setting random seed to {seed}");
    }
    cfg.allow_remote = args.load.allow_remote;
    args.pgbench.apply(&mut cfg);
    cfg.variables = variables(&args)?;
    cfg.live = !args.load.json_on_stdout() && cfg.progress_interval.is_none();
    if args.load.find_max {
        return load_args::find_max::<Pg>(&args.load, cfg, "-T SECS");
    }

    let result = tare_pg::run_with_stop(&cfg, super::emit::ctrl_c_flag()?)?;
    let opts = TextOptions {
        progress: cfg.progress_interval.is_some(),
        failures_detailed: cfg.failures_detailed,
    };
    super::emit::result(args.load.json.as_deref(), &result, || {
        report::text(&result, opts)
    })?;
    Ok(exit_code(&result))
}

/// `-D NAME=VALUE`: the scripts' variables.
fn variables(args: &PgArgs) -> anyhow::Result<Vec<(String, String)>> {
    args.define
        .iter()
        .map(|d| {
            d.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .with_context(|| {
                    format!("invalid variable definition: \"{d}\" (expected NAME=VALUE)")
                })
        })
        .collect()
}

/// 2, as pgbench's, when the run was aborted or measured nothing, said on
/// stderr; else success.
fn exit_code(result: &LoadResult) -> ExitCode {
    if let Some(pg) = &result.pg {
        // Each client's abort was printed as it happened (print_aborts).
        if pg.abort_error.is_some() {
            eprintln!(
                "tare: error: Run was aborted ({} of {} clients); the above results are incomplete.",
                pg.aborted_clients, result.connections
            );
            return ExitCode::from(2);
        }
        // A run in which no transaction succeeded measured nothing: say the
        // server's words and exit as pgbench does (docs/pg.md, "Errors").
        if result.requests == 0 {
            match &pg.first_failure {
                Some(why) => eprintln!(
                    "tare: error: every transaction failed ({}); the server said: {why}",
                    pg.failed
                ),
                None => eprintln!("tare: error: no transaction completed"),
            }
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}

/// The scripts in flag order: -b, -S, -N, then -f; none means tpcb-like.
fn scripts(args: &PgArgs) -> anyhow::Result<Vec<ScriptSpec>> {
    let mut out = Vec::new();
    for b in &args.builtins {
        let (name, weight) = split_weight(b).map_err(anyhow::Error::msg)?;
        out.push(ScriptSpec {
            source: ScriptSource::Builtin(name.to_string()),
            weight,
        });
    }
    for (n, name) in [
        (args.select_only, "select-only"),
        (args.simple_update, "simple-update"),
    ] {
        for _ in 0..n {
            out.push(ScriptSpec {
                source: ScriptSource::Builtin(name.into()),
                weight: 1,
            });
        }
    }
    for f in &args.files {
        let (path, weight) = split_weight(f).map_err(anyhow::Error::msg)?;
        out.push(ScriptSpec {
            source: ScriptSource::File(PathBuf::from(path)),
            weight,
        });
    }
    if out.len() > 128 {
        anyhow::bail!("at most 128 SQL scripts are allowed");
    }
    Ok(out)
}
