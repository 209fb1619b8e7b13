//! [`PgConfig`]: everything one `tare pg` run needs, whether it comes from
//! the command line or from the experiment runner calling [`crate::run`].

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use tare_engine::schedule::Arrivals;
use tare_engine::{Endpoint, Load};

use crate::conninfo::ConnParams;

/// pgbench's `-M`: how statements reach the server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum QueryMode {
    /// One `Query` message with the variables substituted as text.
    #[default]
    Simple,
    /// Parse (unnamed) + Bind + Execute + Sync for every statement.
    Extended,
    /// Parse once per connection, then Bind + Execute + Sync.
    Prepared,
}

impl QueryMode {
    pub fn name(&self) -> &'static str {
        match self {
            QueryMode::Simple => "simple",
            QueryMode::Extended => "extended",
            QueryMode::Prepared => "prepared",
        }
    }
}

impl FromStr for QueryMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "simple" => Ok(QueryMode::Simple),
            "extended" => Ok(QueryMode::Extended),
            "prepared" => Ok(QueryMode::Prepared),
            _ => Err(format!(
                "invalid query mode (-M): \"{s}\" (simple, extended or prepared)"
            )),
        }
    }
}

impl fmt::Display for QueryMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a script's text comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScriptSource {
    /// `tpcb-like`, `simple-update`, `select-only` (or a unique prefix).
    Builtin(String),
    /// A script file (`-f`).
    File(PathBuf),
    /// Script text given inline (the runner, tests); `name` appears in reports.
    Text { name: String, text: String },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptSpec {
    pub source: ScriptSource,
    /// Relative frequency among the scripts (`@weight`).
    pub weight: u32,
}

/// How long the run lasts: pgbench's `-T` or `-t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Length {
    Duration(Duration),
    TransactionsPerClient(u64),
}

#[derive(Clone, Debug)]
pub struct PgConfig {
    pub conn: ConnParams,
    /// Clients (`load.connections`, `-c`), threads (`load.threads`, `-j`;
    /// clients are spread over them as pgbench does), `-T`
    /// (`load.duration`), pacing, ... `load.timeout` bounds establishing one
    /// connection and tare's own statements (libpq's `connect_timeout`);
    /// pgbench has no per-transaction timeout, and neither has tare pg.
    pub load: Load,
    /// `-t`: transactions per client, when `load.duration` is `None`.
    pub transactions: Option<u64>,
    pub mode: QueryMode,
    /// Empty: the built-in `tpcb-like`.
    pub scripts: Vec<ScriptSpec>,
    /// `-C`: a new connection for every transaction.
    pub connect_per_transaction: bool,
    /// `-r`: time every command.
    pub per_statement: bool,
    /// `-P`: print a progress line on stderr every interval.
    pub progress_interval: Option<Duration>,
    /// `--progress-timestamp`: the `-P` line says the Unix time, not the
    /// time since the start.
    pub progress_timestamp: bool,
    /// A live one-line display on a terminal.
    pub live: bool,
    /// `-s`: the `:scale` variable; `None` reads it from `pgbench_branches`
    /// when a built-in script runs, else 1 (pgbench's rule).
    pub scale: Option<u32>,
    /// VACUUM pgbench's tables before a built-in run (pgbench's default; `-n` turns it off).
    pub vacuum: bool,
    /// `-v`: also `vacuum analyze pgbench_accounts` before the run.
    pub vacuum_accounts: bool,
    /// `-D name=value`.
    pub variables: Vec<(String, String)>,
    /// Seed of the per-client random generators; `None`: from the clock.
    pub random_seed: Option<u64>,
    /// Allow load to a non-loopback address (ARCHITECTURE.md, "Principles": loopback only by default).
    pub allow_remote: bool,
    /// A statement failing with an error that is not retried (anything but
    /// a serialization failure or a deadlock) fails its transaction and
    /// the client goes on (`true`, tare's rule and pgbench 18's
    /// `--continue-on-error`), or aborts the client (`false`, pgbench 15;
    /// the command line's default). docs/pg.md, "Failures and aborts".
    pub continue_on_error: bool,
    /// `--max-tries`: how many times a transaction failing by a
    /// serialization failure or a deadlock is tried; 0 is no limit (with
    /// `-T` or a latency limit). pgbench's default 1: no retry.
    pub max_tries: u32,
    /// `--verbose-errors`: a line on stderr for every error retried or failed.
    pub verbose_errors: bool,
    /// Each client's abort on stderr as it happens, one line in pgbench's
    /// words (`tare: error: client 3 script 0 aborted in command 1 query 0:
    /// ERROR:  ...`), as pgbench prints them (the command line); the
    /// result keeps the first either way (`abort_error`).
    pub print_aborts: bool,
    /// `--failures-detailed`: the report splits failures by kind.
    pub failures_detailed: bool,
    /// `--debug`: pgbench's trace of every client's steps on stderr.
    pub debug: bool,
    /// `-L/--latency-limit`: transactions above it are counted as late;
    /// with `-R`, one already late when it would start is skipped.
    pub latency_limit: Option<Duration>,
    /// `-l/--log`: pgbench's per-transaction (or aggregate) log files.
    pub log: Option<TxLogConfig>,
}

/// `-l` and its options, as pgbench takes them (docs/pg.md, "Transaction logs").
#[derive(Clone, Debug, PartialEq)]
pub struct TxLogConfig {
    /// `--log-prefix`: files are `PREFIX.PID` (thread 0) and `PREFIX.PID.N`.
    pub prefix: String,
    /// `--sampling-rate`: the fraction of transactions logged (0, 1].
    pub sampling_rate: Option<f64>,
    /// `--aggregate-interval`: one line per interval of this many seconds.
    pub aggregate_interval: Option<u64>,
}

impl PgConfig {
    /// A run against `endpoint` as `user` on `database` with pgbench's
    /// defaults: 1 client, 1 thread, 10 transactions, simple mode,
    /// tpcb-like, Poisson arrivals with a rate (`-R`), and libpq's habit of
    /// a bounded connect (10 s).
    pub fn new(endpoint: Endpoint, user: &str, database: &str) -> PgConfig {
        let (host, port) = match &endpoint {
            Endpoint::Tcp(a) => (a.ip().to_string(), a.port()),
            Endpoint::Unix(p) => {
                let dir = p
                    .parent()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default();
                let port = p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.rsplit('.').next())
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(crate::conninfo::DEFAULT_PORT);
                (dir, port)
            }
        };
        PgConfig {
            conn: ConnParams {
                endpoint,
                host,
                port,
                user: user.to_string(),
                database: database.to_string(),
                password: None,
                application_name: "tare".into(),
                options: None,
            },
            load: Load {
                threads: 1,
                connections: 1,
                duration: None,
                timeout: Duration::from_secs(10),
                arrivals: Arrivals::Poisson,
                ..Load::default()
            },
            transactions: Some(10),
            mode: QueryMode::Simple,
            scripts: Vec::new(),
            connect_per_transaction: false,
            per_statement: false,
            progress_interval: None,
            progress_timestamp: false,
            live: false,
            scale: None,
            vacuum: true,
            vacuum_accounts: false,
            variables: Vec::new(),
            random_seed: None,
            allow_remote: false,
            continue_on_error: true,
            max_tries: 1,
            verbose_errors: false,
            print_aborts: false,
            failures_detailed: false,
            debug: false,
            latency_limit: None,
            log: None,
        }
    }

    /// `-T` or `-t`, whichever bounds the run (`-t 10` when neither is set).
    pub fn length(&self) -> Length {
        match self.load.duration {
            Some(d) => Length::Duration(d),
            None => Length::TransactionsPerClient(self.transactions.unwrap_or(10)),
        }
    }

    /// Bounds the run by `-T` or `-t` (and only by it).
    pub fn set_length(&mut self, length: Length) {
        match length {
            Length::Duration(d) => {
                self.load.duration = Some(d);
                self.transactions = None;
            }
            Length::TransactionsPerClient(n) => {
                self.load.duration = None;
                self.transactions = Some(n);
            }
        }
    }
}
