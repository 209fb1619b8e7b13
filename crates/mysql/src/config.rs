//! [`MysqlConfig`]: everything one `tare mysql run` needs, whether it comes
//! from the command line or from the experiment runner.

use std::time::Duration;

use tare_engine::{Endpoint, Load};

use crate::oltp::{Mix, RandType, Workload};
use crate::wire::Login;

/// sysbench's defaults: `--tables=1 --table-size=10000 --threads=1
/// --time=10`, user and database `sbtest`.
pub const DEFAULT_TABLE_SIZE: u32 = 10_000;
pub(crate) const DEFAULT_TIME: Duration = Duration::from_secs(10);
pub const DEFAULT_USER: &str = "sbtest";
pub const DEFAULT_DB: &str = "sbtest";
/// How long a statement may go unanswered before its connection is given
/// up (`--timeout`): generous, as sysbench has no such limit.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// `--workers` when not given: one per CPU this process may run on, and
/// at least two. Every statement is a round trip, so a worker sleeps
/// between replies; when other processes keep its CPU busy, a lone worker
/// waits for one of them to finish its time slice at every wake-up, while
/// two hand the CPU to each other. Measured pinned to one CPU at load
/// average 24 (8 connections, oltp_read_only): one worker waited 389 µs on
/// the run queue per wake-up and ran 250 transactions/s; two waited 5 µs
/// and ran 1,900/s, as many as sysbench's 8 threads (docs/mysql.md,
/// "Against sysbench").
pub fn default_workers() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .max(2)
}

/// `--mysql-ignore-errors`: the error codes after which a transaction is
/// rolled back and run again (sysbench's "ignored errors") instead of
/// failing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IgnoreErrors {
    /// `all`: every error reply.
    All,
    Codes(Vec<u16>),
}

impl Default for IgnoreErrors {
    /// sysbench's `1213,1020,1205`.
    fn default() -> IgnoreErrors {
        IgnoreErrors::Codes(crate::worker::RETRIED.to_vec())
    }
}

impl IgnoreErrors {
    pub fn contains(&self, code: u16) -> bool {
        match self {
            IgnoreErrors::All => true,
            IgnoreErrors::Codes(c) => c.contains(&code),
        }
    }

    /// `all`, or a comma-separated list of error codes (empty: none).
    pub fn parse(s: &str) -> Result<IgnoreErrors, String> {
        if s.trim().eq_ignore_ascii_case("all") {
            return Ok(IgnoreErrors::All);
        }
        s.split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(|c| {
                c.parse::<u16>().map_err(|_| {
                    format!("{c:?} is not a MySQL error code (a list of codes, or all)")
                })
            })
            .collect::<Result<Vec<u16>, String>>()
            .map(IgnoreErrors::Codes)
    }
}

#[derive(Clone, Debug)]
pub struct MysqlConfig {
    pub endpoint: Endpoint,
    pub login: Login,
    /// Connections (`--threads`, one each as sysbench has), worker threads
    /// (`--workers`), `--time` (`load.duration`), pacing... `load.timeout`
    /// bounds connecting and each statement's reply.
    pub load: Load,
    pub workload: Workload,
    pub mix: Mix,
    pub tables: u32,
    pub table_size: u32,
    pub rand: RandType,
    /// `--events`: transactions in total (with or without `--time`).
    pub events: Option<u64>,
    /// Binary prepared statements (`--db-ps-mode=auto`, the default) or
    /// the text protocol (`disable`).
    pub prepared: bool,
    /// `--mysql-ignore-errors`.
    pub ignore_errors: IgnoreErrors,
    /// `--report-interval`: a sysbench progress line on stdout this often.
    pub report_interval: Option<Duration>,
    /// The `--report-interval` lines on stderr (the JSON is on stdout).
    pub report_on_stderr: bool,
    /// Seed of the id and string generators (`--rand-seed`); `None`: from
    /// the clock.
    pub seed: Option<u64>,
    /// A live one-line display on a terminal.
    pub live: bool,
    /// Allow load to a non-loopback address (ARCHITECTURE.md, "Principles").
    pub allow_remote: bool,
}

impl MysqlConfig {
    /// `oltp_read_only` against `endpoint` with sysbench's defaults.
    pub fn new(endpoint: Endpoint) -> MysqlConfig {
        MysqlConfig {
            endpoint,
            login: Login {
                user: DEFAULT_USER.into(),
                password: String::new(),
                db: Some(DEFAULT_DB.into()),
            },
            load: Load {
                threads: 1,
                connections: 1,
                duration: Some(DEFAULT_TIME),
                timeout: DEFAULT_TIMEOUT,
                ..Load::default()
            },
            workload: Workload::ReadOnly,
            mix: Mix::default(),
            tables: 1,
            table_size: DEFAULT_TABLE_SIZE,
            rand: RandType::Special,
            events: None,
            prepared: true,
            ignore_errors: IgnoreErrors::default(),
            report_interval: None,
            report_on_stderr: false,
            seed: None,
            live: false,
            allow_remote: false,
        }
    }

    /// What the record's `target` says: `mysql://USER@HOST:PORT/DB` or
    /// `unix:PATH?db=DB`.
    pub fn target(&self) -> String {
        let db = self.login.db.as_deref().unwrap_or("");
        match &self.endpoint {
            Endpoint::Tcp(a) => format!("mysql://{}@{a}/{db}", self.login.user),
            Endpoint::Unix(p) => format!("unix:{}?user={}&db={db}", p.display(), self.login.user),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignored_errors_as_sysbench_lists_them() {
        assert!(IgnoreErrors::default().contains(1213));
        assert!(!IgnoreErrors::default().contains(1062));
        assert_eq!(IgnoreErrors::parse("all"), Ok(IgnoreErrors::All));
        assert_eq!(
            IgnoreErrors::parse("1062, 1213"),
            Ok(IgnoreErrors::Codes(vec![1062, 1213]))
        );
        assert_eq!(IgnoreErrors::parse(""), Ok(IgnoreErrors::Codes(vec![])));
        assert!(IgnoreErrors::parse("12x").is_err());
    }
}
