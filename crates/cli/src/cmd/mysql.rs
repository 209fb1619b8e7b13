//! `tare mysql TESTNAME prepare|prewarm|run|cleanup|help`: sysbench 1.0's
//! OLTP tests with its flags (`--tables --table-size --threads --time
//! --events --rate --report-interval --verbosity`,
//! `--mysql-host/-port/-socket/-user/-password/-db/-ignore-errors`,
//! `--db-driver`, `--db-ps-mode`, `--rand-type`, the per-transaction
//! counts and switches, `on|off` booleans, a repeated option taking its
//! last value) and text,
//! plus what it lacks: HDR percentiles, an open loop with latency from the
//! intended start, `--find-max --slo`, errors by kind and the JSON
//! contract. sysbench's options are spelled with dashes or underscores.
//!
//! `-h` is the host here, so clap's `-h` help is off; `--help` remains.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::{ArgAction, Args, ValueEnum};
use tare_engine::Endpoint;
use tare_mysql::admin::Admin;
use tare_mysql::config::IgnoreErrors;
use tare_mysql::config::{DEFAULT_DB, DEFAULT_TABLE_SIZE, DEFAULT_USER};
use tare_mysql::{report, Login, Mysql, MysqlConfig, RandType, Schema, Workload};
use tare_record::LoadResult;

use super::load_args::{self, LoadArgs};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Step {
    Prepare,
    Prewarm,
    Run,
    Cleanup,
    Help,
}

/// sysbench's boolean option values (`--skip-trx` alone is on).
fn parse_bool(s: &str) -> Result<bool, String> {
    match s {
        "on" | "true" | "1" | "yes" => Ok(true),
        "off" | "false" | "0" | "no" => Ok(false),
        _ => Err(format!("{s:?} is not on or off")),
    }
}

/// `--db-driver`: tare mysql speaks MySQL only.
fn parse_driver(s: &str) -> Result<String, String> {
    match s {
        "mysql" => Ok(s.into()),
        _ => Err(format!(
            "{s:?}: tare mysql has the mysql driver only (tare pg loads PostgreSQL)"
        )),
    }
}

/// sysbench's log levels: 0 critical only ... 3 notices (its default) ... 5 debug.
const NOTICE: u8 = 3;

#[derive(Args, Debug)]
#[command(disable_help_flag = true, args_override_self = true)]
pub(crate) struct MysqlArgs {
    /// oltp_read_only, oltp_read_write, oltp_point_select or
    /// oltp_write_only (or the path of sysbench's script of that name).
    #[arg(value_name = "TESTNAME")]
    pub test: String,
    /// prepare (create and fill the tables), prewarm (read them into the
    /// server's caches), run, cleanup (drop them), or help (the test's
    /// options).
    #[arg(value_enum, value_name = "COMMAND")]
    pub step: Step,
    /// Number of tables.
    #[arg(long, default_value_t = 1)]
    pub tables: u32,
    /// Number of rows per table.
    #[arg(long = "table-size", alias = "table_size", default_value_t = DEFAULT_TABLE_SIZE)]
    pub table_size: u32,
    /// Number of threads: connections, one each (prepare: tables made at once).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Worker threads carrying the connections (tare's own; default: one
    /// per CPU and at least two, at most one per connection).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// Limit for total execution time in seconds (0: none, then --events).
    #[arg(long, default_value_t = 10)]
    pub time: u64,
    /// Limit for total number of events (transactions; 0: none).
    #[arg(long, default_value_t = 0)]
    pub events: u64,
    /// Periodically report intermediate statistics with a specified
    /// interval in seconds (0: off).
    #[arg(
        long = "report-interval",
        alias = "report_interval",
        default_value_t = 0
    )]
    pub report_interval: u64,
    /// MySQL server host.
    #[arg(
        short = 'h',
        long = "mysql-host",
        alias = "mysql_host",
        default_value = "127.0.0.1"
    )]
    pub host: String,
    /// MySQL server port.
    #[arg(long = "mysql-port", alias = "mysql_port", default_value_t = 3306)]
    pub port: u16,
    /// MySQL socket (instead of host and port).
    #[arg(long = "mysql-socket", alias = "mysql_socket", value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// MySQL user.
    #[arg(long = "mysql-user", alias = "mysql_user", default_value = DEFAULT_USER)]
    pub user: String,
    /// MySQL password.
    #[arg(long = "mysql-password", alias = "mysql_password", default_value = "")]
    pub password: String,
    /// MySQL database name.
    #[arg(long = "mysql-db", alias = "mysql_db", default_value = DEFAULT_DB)]
    pub db: String,
    /// Storage engine of the tables `prepare` makes.
    #[arg(
        long = "mysql-storage-engine",
        alias = "mysql_storage_engine",
        default_value = "innodb"
    )]
    pub storage_engine: String,
    /// Prepared statements (auto: the binary protocol) or disable (COM_QUERY text).
    #[arg(long = "db-ps-mode", alias = "db_ps_mode", default_value = "auto", value_parser = ["auto", "disable"])]
    pub ps_mode: String,
    /// Random numbers distribution {uniform,gaussian,special,pareto}.
    #[arg(long = "rand-type", alias = "rand_type", default_value = "special", value_parser = RandType::parse)]
    pub rand_type: RandType,
    /// Seed for random number generator (0: the current time).
    #[arg(long = "rand-seed", alias = "rand_seed", default_value_t = 0)]
    pub rand_seed: u64,
    /// Number of point SELECT queries per transaction.
    #[arg(long = "point-selects", alias = "point_selects", default_value_t = 10)]
    pub point_selects: u32,
    /// Number of simple range SELECT queries per transaction.
    #[arg(long = "simple-ranges", alias = "simple_ranges", default_value_t = 1)]
    pub simple_ranges: u32,
    /// Number of SELECT SUM() queries per transaction.
    #[arg(long = "sum-ranges", alias = "sum_ranges", default_value_t = 1)]
    pub sum_ranges: u32,
    /// Number of SELECT ORDER BY queries per transaction.
    #[arg(long = "order-ranges", alias = "order_ranges", default_value_t = 1)]
    pub order_ranges: u32,
    /// Number of SELECT DISTINCT queries per transaction.
    #[arg(
        long = "distinct-ranges",
        alias = "distinct_ranges",
        default_value_t = 1
    )]
    pub distinct_ranges: u32,
    /// Number of UPDATE index queries per transaction.
    #[arg(long = "index-updates", alias = "index_updates", default_value_t = 1)]
    pub index_updates: u32,
    /// Number of UPDATE non-index queries per transaction.
    #[arg(
        long = "non-index-updates",
        alias = "non_index_updates",
        default_value_t = 1
    )]
    pub non_index_updates: u32,
    /// Number of DELETE/INSERT combinations per transaction.
    #[arg(long = "delete-inserts", alias = "delete_inserts", default_value_t = 1)]
    pub delete_inserts: u32,
    /// Range size for range SELECT queries.
    #[arg(long = "range-size", alias = "range_size", default_value_t = 100)]
    pub range_size: u32,
    /// Enable/disable all range SELECT queries.
    #[arg(long = "range-selects", alias = "range_selects", value_name = "on|off", default_value = "on", num_args = 0..=1, require_equals = true, default_missing_value = "on", value_parser = parse_bool)]
    pub range_selects: bool,
    /// Don't start explicit transactions and execute all queries in the
    /// AUTOCOMMIT mode.
    #[arg(long = "skip-trx", alias = "skip_trx", value_name = "on|off", default_value = "off", num_args = 0..=1, require_equals = true, default_missing_value = "on", value_parser = parse_bool)]
    pub skip_trx: bool,
    /// Use AUTO_INCREMENT column as Primary Key (prepare; off: ids 1..N
    /// written by tare).
    #[arg(long = "auto-inc", alias = "auto_inc", value_name = "on|off", default_value = "on", num_args = 0..=1, require_equals = true, default_missing_value = "on", value_parser = parse_bool)]
    pub auto_inc: bool,
    /// Use a secondary index in place of the PRIMARY KEY (prepare).
    #[arg(long = "secondary", alias = "secondary", value_name = "on|off", default_value = "off", num_args = 0..=1, require_equals = true, default_missing_value = "on", value_parser = parse_bool)]
    pub secondary: bool,
    /// Create a secondary index in addition to the PRIMARY KEY (prepare).
    #[arg(long = "create-secondary", alias = "create_secondary", value_name = "on|off", default_value = "on", num_args = 0..=1, require_equals = true, default_missing_value = "on", value_parser = parse_bool)]
    pub create_secondary: bool,
    /// Errors after which the transaction is run again (a list of codes,
    /// or all).
    #[arg(long = "mysql-ignore-errors", alias = "mysql_ignore_errors", value_name = "LIST", default_value = "1213,1020,1205", value_parser = IgnoreErrors::parse)]
    pub ignore_errors: IgnoreErrors,
    /// Database driver (mysql only).
    #[arg(long = "db-driver", alias = "db_driver", value_name = "mysql", default_value = "mysql", value_parser = parse_driver)]
    pub db_driver: String,
    /// Verbosity level {5 - debug, 0 - only critical messages}: below 3,
    /// only the tables' messages and errors.
    #[arg(long, default_value_t = NOTICE, value_parser = clap::value_parser!(u8).range(0..=5))]
    pub verbosity: u8,
    /// --rate, --warmup, --timeout, --find-max, --json, ...: what every
    /// load engine shares (sysbench's --rate is tare's open loop).
    #[command(flatten)]
    pub load: LoadArgs,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    pub help: Option<bool>,
}

fn seed(args: &MysqlArgs) -> Option<u64> {
    (args.rand_seed != 0).then_some(args.rand_seed)
}

pub(crate) fn run(args: MysqlArgs) -> anyhow::Result<ExitCode> {
    let workload = Workload::parse(&args.test).map_err(anyhow::Error::msg)?;
    if args.step == Step::Help {
        // Titled as given, as sysbench titles a script's options.
        let title = args.test.rsplit('/').next().unwrap_or(&args.test);
        print!("{}", report::script_help(workload.name(), title));
        return Ok(ExitCode::SUCCESS);
    }
    // Below sysbench's notice level, only the tables' messages and errors.
    let notices = args.verbosity >= NOTICE;
    let endpoint = load_args::endpoint(&args.host, args.port, args.socket.as_deref())?;
    let login = Login {
        user: args.user.clone(),
        password: args.password.clone(),
        db: Some(args.db.clone()),
    };
    if args.step != Step::Run {
        if notices {
            println!(
                "tare mysql {} ({})\n",
                env!("CARGO_PKG_VERSION"),
                workload.name()
            );
        }
        let admin = admin(&args, endpoint, login);
        let mut out = std::io::stdout();
        match args.step {
            Step::Prepare => admin.prepare(&mut out)?,
            Step::Prewarm => admin.prewarm(&mut out)?,
            _ => admin.cleanup(&mut out)?,
        }
        return Ok(ExitCode::SUCCESS);
    }
    let text_out = !args.load.json_on_stdout();
    let mut cfg = MysqlConfig::new(endpoint);
    cfg.login = login;
    cfg.workload = workload;
    configure(&args, &mut cfg)?;
    cfg.report_on_stderr = !text_out;
    cfg.live = text_out && notices && cfg.report_interval.is_none();
    if args.load.find_max {
        return load_args::find_max::<Mysql>(&args.load, cfg, "--time SECONDS");
    }
    let text_out = text_out && notices;
    if text_out {
        print!(
            "{}",
            report::header(&report::Header {
                workload: workload.name(),
                threads: args.threads as u64,
                seed: cfg.seed,
                rate: cfg.load.rate,
                report_interval: (args.report_interval > 0).then_some(args.report_interval),
            })
        );
        println!("Initializing worker threads...\n");
        println!("Threads started!\n");
    }
    let stop = super::emit::ctrl_c_flag()?;
    let r = tare_mysql::run_with_stop(&cfg, stop)?;
    if text_out {
        print!("{}", report::text(&r));
    }
    if let Some(json) = args.load.json.as_deref() {
        super::emit::result(Some(json), &r, String::new)?;
    }
    Ok(exit_code(&r))
}

/// What `prepare`, `prewarm` and `cleanup` work with: the tables, their
/// schema, and how to reach the server.
fn admin(args: &MysqlArgs, endpoint: Endpoint, login: Login) -> Admin {
    Admin {
        endpoint,
        login,
        tables: args.tables,
        table_size: args.table_size,
        threads: args.threads.clamp(1, u32::MAX as usize) as u32,
        storage_engine: args.storage_engine.clone(),
        schema: Schema {
            auto_inc: args.auto_inc,
            secondary: args.secondary,
            create_secondary: args.create_secondary,
        },
        rand: args.rand_type,
        seed: seed(args).unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        }),
        timeout: args
            .load
            .timeout
            .unwrap_or(tare_mysql::config::DEFAULT_TIMEOUT),
        netns: super::emit::netns_path(args.load.netns.as_deref()),
        allow_remote: args.load.allow_remote,
    }
}

/// The run's settings from sysbench's flags and the shared load flags.
fn configure(args: &MysqlArgs, cfg: &mut MysqlConfig) -> anyhow::Result<()> {
    cfg.tables = args.tables;
    cfg.table_size = args.table_size;
    cfg.rand = args.rand_type;
    cfg.seed = seed(args);
    cfg.prepared = args.ps_mode == "auto";
    cfg.ignore_errors = args.ignore_errors.clone();
    cfg.mix = tare_mysql::Mix {
        point_selects: args.point_selects,
        simple_ranges: args.simple_ranges,
        sum_ranges: args.sum_ranges,
        order_ranges: args.order_ranges,
        distinct_ranges: args.distinct_ranges,
        index_updates: args.index_updates,
        non_index_updates: args.non_index_updates,
        delete_inserts: args.delete_inserts,
        range_size: args.range_size,
        range_selects: args.range_selects,
        skip_trx: args.skip_trx,
    };
    cfg.load.connections = args.threads;
    cfg.load.threads = args
        .workers
        .unwrap_or_else(tare_mysql::config::default_workers)
        .min(args.threads.max(1));
    cfg.load.duration = (args.time > 0).then(|| std::time::Duration::from_secs(args.time));
    cfg.events = (args.events > 0).then_some(args.events);
    args.load.apply(&mut cfg.load)?;
    if args.load.timeout.is_none() {
        cfg.load.timeout = tare_mysql::config::DEFAULT_TIMEOUT;
    }
    // sysbench's --rate=0: no rate limit.
    if cfg.load.rate == Some(0.0) {
        cfg.load.rate = None;
    }
    cfg.report_interval =
        (args.report_interval > 0).then(|| std::time::Duration::from_secs(args.report_interval));
    cfg.allow_remote = args.load.allow_remote;
    Ok(())
}

/// 2 when the run measured nothing or lost transactions, each said on
/// stderr; else success.
fn exit_code(r: &LoadResult) -> ExitCode {
    let e = &r.errors;
    // A run in which no transaction succeeded measured nothing: the
    // server's error codes, and a non-zero exit (docs/mysql.md, "Errors").
    if r.requests == 0 && e.status > 0 {
        let codes: Vec<String> = (r.mysql.iter())
            .flat_map(|d| &d.errors_by_code)
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        eprintln!(
            "tare: error: every transaction failed ({}; errors by code: {})",
            e.status,
            codes.join(", ")
        );
        return ExitCode::from(2);
    }
    if e.read + e.write + e.timeout + e.connect > 0 {
        eprintln!(
            "tare: error: {} transactions lost with their connections, {} timed out ({}); the results above are incomplete",
            e.read + e.write,
            e.timeout,
            r.mysql
                .as_ref()
                .and_then(|d| d.abort_error.as_deref())
                .unwrap_or("connection lost")
        );
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}
