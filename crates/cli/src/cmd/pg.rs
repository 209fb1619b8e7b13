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
use tare_engine::find_max::Slo;
use tare_engine::schedule::Arrivals;
use tare_engine::units::parse_duration;
use tare_pg::report::{self, TextOptions};
use tare_pg::script::split_weight;
use tare_pg::{ConnFlags, ConnParams, Length, PgConfig, QueryMode, ScriptSource, ScriptSpec};

#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
pub struct PgArgs {
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
    /// Number of concurrent clients (database sessions).
    #[arg(short = 'c', long = "client", default_value_t = 1)]
    pub clients: usize,
    /// Number of threads.
    #[arg(short = 'j', long = "jobs", default_value_t = 1)]
    pub threads: usize,
    /// Duration of the run in seconds.
    #[arg(short = 'T', long = "time", value_name = "SECS")]
    pub time: Option<u64>,
    /// Transactions per client (default 10 when -T is not given).
    #[arg(short = 't', long = "transactions", value_name = "N")]
    pub transactions: Option<u64>,
    /// How statements are sent: simple, extended or prepared.
    #[arg(
        short = 'M',
        long = "protocol",
        default_value = "simple",
        value_name = "MODE"
    )]
    pub mode: QueryMode,
    /// A script file, optionally weighted: FILE[@WEIGHT] (repeatable).
    #[arg(short = 'f', long = "file", value_name = "FILE[@W]")]
    pub files: Vec<String>,
    /// A built-in script: tpcb-like, simple-update, select-only, optionally @WEIGHT (repeatable).
    #[arg(short = 'b', long = "builtin", value_name = "NAME[@W]")]
    pub builtins: Vec<String>,
    /// The built-in select-only script (-b select-only).
    #[arg(short = 'S', long = "select-only")]
    pub select_only: bool,
    /// The built-in simple-update script (-b simple-update).
    #[arg(short = 'N', long = "skip-some-updates")]
    pub simple_update: bool,
    /// A new connection for every transaction.
    #[arg(short = 'C', long = "connect")]
    pub connect: bool,
    /// Report the average latency of every command.
    #[arg(
        short = 'r',
        long = "report-per-command",
        visible_alias = "report-latencies"
    )]
    pub per_command: bool,
    /// Print a progress line on stderr every SECS seconds.
    #[arg(short = 'P', long = "progress", value_name = "SECS")]
    pub progress: Option<u64>,
    /// Do not vacuum pgbench's tables before a built-in run.
    #[arg(short = 'n', long = "no-vacuum")]
    pub no_vacuum: bool,
    /// Scale: with --init, how much data; otherwise the :scale variable.
    #[arg(short = 's', long = "scale")]
    pub scale: Option<u32>,
    /// Define a script variable: NAME=VALUE (repeatable).
    #[arg(short = 'D', long = "define", value_name = "NAME=VALUE")]
    pub define: Vec<String>,
    /// Seed for the clients' random generators (default: from the clock).
    #[arg(long = "random-seed")]
    pub random_seed: Option<u64>,
    /// Create and fill pgbench's tables (with -s SCALE), then exit.
    #[arg(short = 'i', long = "init", visible_alias = "initialize")]
    pub init: bool,
    /// Write the JSON result to PATH ('-': stdout, replacing the text).
    #[arg(long, value_name = "PATH|-")]
    pub json: Option<String>,
    /// Allow a server that is not on loopback or a Unix socket (only servers you own).
    #[arg(long)]
    pub allow_remote: bool,
    /// Run the client threads inside this network namespace (a name from `ip netns`, or a path).
    #[arg(long, value_name = "NAME|PATH")]
    pub netns: Option<String>,
    /// Seconds to wait for a connection.
    #[arg(long, default_value_t = 10)]
    pub connect_timeout: u64,
    /// Open loop: start this many transactions per second in total, on a
    /// schedule (pgbench's -R), latency counted from each intended start.
    #[arg(short = 'R', long = "rate", value_name = "TPS")]
    pub rate: Option<f64>,
    /// With --rate or --find-max: poisson arrivals (the default, as
    /// pgbench's) or constant spacing.
    #[arg(long, value_name = "constant|poisson")]
    pub arrivals: Option<tare_engine::schedule::Arrivals>,
    /// Before the measured -T, start the clients one by one (closed loop) or
    /// raise the rate linearly from 0 (with -R) over this long (10s, 500ms);
    /// shown per second, not in the summary. At most -T.
    #[arg(long, value_name = "DURATION", default_value = "0s", value_parser = parse_duration)]
    pub ramp: Duration,
    /// Closed loop over TCP: pause an idle worker briefly before it waits, so
    /// one wake-up serves several replies (less generator CPU, a little
    /// think time between transactions): off, auto or a fixed pause such as
    /// 100us. Scripts of one SQL command only; latency stays exact (kernel
    /// receive timestamps). See docs/pg.md.
    #[arg(
        long,
        default_value = "off",
        value_name = "off|auto|PAUSE",
        conflicts_with = "rate"
    )]
    pub coalesce: tare_engine::Coalesce,
    /// How workers wait for replies: io_uring (one multishot receive per
    /// connection; needs Linux 6.1 and io_uring allowed), epoll, or auto:
    /// io_uring where it can, epoll otherwise and with --coalesce.
    #[arg(long, default_value = "auto", value_name = "auto|epoll|io_uring")]
    pub io: tare_engine::IoMode,
    /// Search for the highest rate that meets --slo: a closed-loop probe,
    /// then open-loop probes of -T each, bisecting (docs/open-loop.md).
    #[arg(long)]
    pub find_max: bool,
    /// Objectives for --find-max: 'p99<10ms', 'p50<1ms,p999<50ms,errors<1%'.
    #[arg(long, value_name = "OBJECTIVES")]
    pub slo: Option<Slo>,
    /// Most open-loop probes --find-max may run.
    #[arg(long, default_value_t = 8, value_name = "N")]
    pub max_runs: usize,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    pub help: Option<bool>,
}

pub fn run(args: PgArgs) -> anyhow::Result<ExitCode> {
    let flags = ConnFlags {
        host: args.host.clone(),
        port: args.port,
        user: args.user.clone(),
        database: args.dbname.clone().or(args.dbname_pos.clone()),
        password: None,
    };
    let conn = ConnParams::from_env(&flags)?;
    let timeout = Duration::from_secs(args.connect_timeout.max(1));
    if args.init {
        if !args.allow_remote && !conn.endpoint.is_local() {
            anyhow::bail!(
                "{} is not a loopback address or Unix socket; use --allow-remote",
                conn.endpoint
            );
        }
        tare_pg::init::init(&conn, args.scale.unwrap_or(1), timeout, &mut |line| {
            eprintln!("{line}")
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut cfg = PgConfig::new(conn.endpoint.clone(), &conn.user, &conn.database);
    cfg.conn = conn;
    cfg.clients = args.clients;
    cfg.threads = args.threads;
    cfg.length = match (args.time, args.transactions) {
        (Some(_), Some(_)) => anyhow::bail!(
            "specify either a number of transactions (-t) or a duration (-T), not both"
        ),
        (Some(t), None) => Length::Duration(Duration::from_secs(t)),
        (None, t) => Length::TransactionsPerClient(t.unwrap_or(10)),
    };
    cfg.mode = args.mode;
    cfg.scripts = scripts(&args)?;
    cfg.connect_per_transaction = args.connect;
    cfg.per_statement = args.per_command;
    cfg.progress_interval = args.progress.filter(|p| *p > 0).map(Duration::from_secs);
    cfg.scale = args.scale;
    cfg.vacuum = !args.no_vacuum;
    cfg.random_seed = args.random_seed;
    cfg.allow_remote = args.allow_remote;
    if let Some(r) = args.rate {
        if !(r.is_finite() && r > 0.0) {
            anyhow::bail!("--rate must be a positive number of transactions per second");
        }
    }
    cfg.rate = args.rate;
    if args.arrivals.is_some() && args.rate.is_none() && !args.find_max {
        anyhow::bail!("--arrivals paces an open loop: give --rate or --find-max");
    }
    cfg.arrivals = args.arrivals.unwrap_or(Arrivals::Poisson);
    cfg.ramp = args.ramp;
    cfg.coalesce = args.coalesce;
    cfg.io = args.io;
    cfg.connect_timeout = timeout;
    cfg.variables = args
        .define
        .iter()
        .map(|d| {
            d.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .with_context(|| {
                    format!("invalid variable definition: \"{d}\" (expected NAME=VALUE)")
                })
        })
        .collect::<anyhow::Result<_>>()?;
    cfg.netns = super::emit::netns_path(args.netns.as_deref());
    let json_stdout = args.json.as_deref() == Some("-");
    cfg.live = !json_stdout && cfg.progress_interval.is_none();
    if args.find_max || args.slo.is_some() {
        return find_max(&args, cfg);
    }

    let result = tare_pg::run_with_stop(&cfg, super::emit::ctrl_c_flag()?)?;
    let opts = TextOptions {
        progress: cfg.progress_interval.is_some(),
    };
    super::emit::result(args.json.as_deref(), &result, || {
        report::text(&result, opts)
    })?;
    if let Some(pg) = &result.pg {
        if let Some(why) = &pg.abort_error {
            eprintln!("tare: error: {why}");
            eprintln!(
                "tare: error: Run was aborted ({} of {} clients); the above results are incomplete.",
                pg.aborted_clients, result.connections
            );
            return Ok(ExitCode::from(2));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `--find-max`: probes of `-T` each, no live line between them; the
/// table (or the JSON search) on stdout.
fn find_max(args: &PgArgs, mut cfg: PgConfig) -> anyhow::Result<ExitCode> {
    let Some(slo) = args.slo.as_ref().filter(|_| args.find_max) else {
        if args.find_max {
            anyhow::bail!("--find-max needs objectives: --slo 'p99<10ms'");
        }
        anyhow::bail!("--slo is the objective of --find-max; add --find-max");
    };
    if args.rate.is_some() {
        anyhow::bail!("--find-max searches the rate itself; drop --rate");
    }
    if !matches!(cfg.length, Length::Duration(_)) {
        anyhow::bail!("--find-max needs a duration per probe: -T SECS");
    }
    if args.max_runs == 0 {
        anyhow::bail!("--max-runs must be at least 1");
    }
    cfg.live = false;
    cfg.progress_interval = None;
    let found = tare_pg::find_max::find_max(&cfg, &slo.0, args.max_runs, 0.05)?;
    super::emit::result(args.json.as_deref(), &found, || {
        tare_pg::find_max::render(&found)
    })?;
    Ok(if found.best_rate.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
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
    for (on, name) in [
        (args.select_only, "select-only"),
        (args.simple_update, "simple-update"),
    ] {
        if on {
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
    Ok(out)
}
