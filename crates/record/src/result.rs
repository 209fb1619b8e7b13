//! [`LoadResult`]: one load run, as `tare http --json` and `tare pg --json`
//! print it and as the runner stores it (one JSON line per trial).
//!
//! Field names are tare's JSON contract, `docs/json-schema.json` (README.md);
//! adding fields is fine, renaming or removing one is a breaking change.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::latency::LatencySummary;
use crate::metrics::{Better, Metric, ToolDetails};

/// Errors by kind, counted as wrk counts them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Errors {
    /// Connections that could not be established (refused, unreachable).
    pub connect: u64,
    /// Reads that failed, hit EOF mid-response, or returned an unparsable response.
    pub read: u64,
    /// Writes that failed (reset, broken pipe).
    pub write: u64,
    /// Requests with no complete response within `--timeout`.
    pub timeout: u64,
    /// Completed responses with HTTP status >= 400 (for `pg`: failed transactions).
    pub status: u64,
}

impl Errors {
    pub fn total(&self) -> u64 {
        self.connect + self.read + self.write + self.timeout + self.status
    }

    pub fn add(&mut self, o: &Errors) {
        self.connect += o.connect;
        self.read += o.read;
        self.write += o.write;
        self.timeout += o.timeout;
        self.status += o.status;
    }

    /// The kinds with a non-zero count, by their JSON names, in the
    /// contract's order (for one-line summaries).
    pub fn nonzero(&self) -> impl Iterator<Item = (&'static str, u64)> {
        [
            ("connect", self.connect),
            ("read", self.read),
            ("write", self.write),
            ("timeout", self.timeout),
            ("status", self.status),
        ]
        .into_iter()
        .filter(|(_, n)| *n > 0)
    }
}

/// What an engine counts in `requests`: the thing one completion is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Unit {
    /// HTTP requests (`tare http`).
    #[serde(rename = "requests")]
    Requests,
    /// Database transactions (`tare pg`).
    #[serde(rename = "transactions")]
    Transactions,
    /// Commands of a key-value protocol (one request, one reply).
    #[serde(rename = "commands")]
    Commands,
    /// Network round trips (TCP_RR-style exchanges).
    #[serde(rename = "round trips")]
    RoundTrips,
    /// Megabits moved by a bulk stream (`tare net stream`): its
    /// throughput is Mbit/s.
    #[serde(rename = "megabits")]
    Megabits,
    /// Runs of a benchmark program (the tool engine): one run, one
    /// completion; its numbers are its metrics (`LoadResult::metrics`).
    #[serde(rename = "runs")]
    Runs,
}

impl Unit {
    /// One of them, in words (`no request completed`).
    pub fn noun(self) -> &'static str {
        match self {
            Unit::Requests => "request",
            Unit::Transactions => "transaction",
            Unit::Commands => "command",
            Unit::RoundTrips => "round trip",
            Unit::Megabits => "megabit",
            Unit::Runs => "run",
        }
    }

    /// The unit of a throughput in this unit, as reports print it.
    pub fn rate_label(self) -> &'static str {
        match self {
            Unit::Requests => "req/s",
            Unit::Transactions => "tps",
            Unit::Commands => "cmd/s",
            Unit::RoundTrips => "rt/s",
            Unit::Megabits => "Mbit/s",
            Unit::Runs => "runs/s",
        }
    }
}

/// One load run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadResult {
    /// The engine that ran the load (`tare <engine>`: `"http"`, `"pg"`).
    pub engine: String,
    /// What `requests` counts. Every engine writes it; records written
    /// before it existed lack it, and [`LoadResult::unit`] derives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<Unit>,
    /// Everything attempted: completions plus the errors that are not among
    /// them (the denominator of the error rate). Every engine writes it;
    /// [`LoadResult::attempts`] derives it for older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u64>,
    /// What was loaded: the URL (with `unix:PATH` when over a Unix socket) or
    /// the PostgreSQL connection (`host=… port=… dbname=…`).
    pub target: String,
    /// `"tcp"` or `"unix"`.
    pub transport: String,
    /// Seconds since the Unix epoch when the measured period began.
    pub started_unix_s: f64,
    /// Measured wall time in seconds (the deadline, or the time the last of
    /// `-n` requests completed).
    pub duration_s: f64,
    pub connections: u64,
    pub threads: u64,
    /// Keep-alive (`true`) or a new connection per request (`false`).
    pub keepalive: bool,
    /// Completed requests (HTTP responses or PostgreSQL transactions). For
    /// `http`, responses with status >= 400 are included, as wrk counts them;
    /// for `pg`, failed transactions are not (pgbench's "actually processed").
    pub requests: u64,
    /// Requests written but not answered when the deadline struck: neither
    /// completed nor errors, reported so counts reconcile with server logs.
    pub in_flight: u64,
    pub errors: Errors,
    /// Completed requests per second (`http`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rps: Option<f64>,
    /// Completed transactions per second (`pg`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tps: Option<f64>,
    /// Response bytes read (headers and bodies).
    pub bytes_read: u64,
    /// Request-to-complete-response latency.
    pub latency_us: LatencySummary,
    /// base64 HdrHistogram V2+DEFLATE of the latency, in nanoseconds.
    pub hdr: String,
    /// With a new connection per request: time to establish the connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_us: Option<LatencySummary>,
    /// With a new connection per request: time from sending the request to
    /// its first response byte (http_load's msecs/first-response).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte_us: Option<LatencySummary>,
    /// Completions in each second of the measured period.
    pub timeline: Vec<u64>,
    /// User + system CPU seconds of the load generator's worker threads.
    pub generator_cpu_s: f64,
    pub generator_cpu_user_s: f64,
    pub generator_cpu_system_s: f64,
    /// The CPUs the generator's threads could use on its own machine
    /// (`[cpus] generator`, else its affinity mask), set by the runner;
    /// with `generators`, their sum. 0: not recorded (a bare engine run,
    /// older records). The bottleneck verdict's generator capacity is this
    /// machine's, not the target's (docs/remote.md).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub generator_cpus: u32,
    /// HTTP status counts of completed responses (`"200"`, `"404"`, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub status_codes: BTreeMap<String, u64>,
    /// Per-thread completion rate sampled every 100 ms (wrk's `Req/Sec` row).
    #[serde(default)]
    pub thread_rate: RateSummary,
    /// Pacing: open-loop rate and its lag, ramp-up (absent for a plain
    /// closed loop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<crate::schedule::ScheduleReport>,
    /// How the workers waited and woke: batched wake-ups and receive
    /// timestamps (absent for engines that do not report it, and in older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wakeups: Option<crate::wakeups::WakeupReport>,
    /// How the connections were opened and what each was doing at the
    /// deadline (`http`; absent in older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_phase: Option<crate::connect::ConnectReport>,
    /// PostgreSQL-specific results (`pg` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pg: Option<PgDetails>,
    /// Redis-specific results (`redis` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redis: Option<RedisDetails>,
    /// Network test details (`net` only): the test, its sizes, lost
    /// datagrams, stream throughput per direction and CPU per gigabyte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<NetDetails>,
    /// Named measurements beyond the common fields (the tool engine's
    /// IOPS, GB/s, GFLOP/s, latencies), each with its unit and direction.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<Metric>,
    /// The name of the metric in `metrics` that cells, attribution and
    /// comparison use; absent: throughput (`rps` or `tps`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary: Option<String>,
    /// Tool engine details: the program, its command, where its data lived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<ToolDetails>,
    /// External load tool details (`external` only): the tool, its
    /// command, its own CPU, what it reported in its own terms and which
    /// common fields it does not report (docs/external.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<crate::external::ExternalDetails>,
    /// Load from several generators (`[load] hosts`): each one's share,
    /// its clock offset and its error if its part is missing; the fields
    /// above are their merge (`crate::merge`). Empty for a local load.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub generators: Vec<crate::merge::GeneratorPart>,
    /// MySQL details (`mysql` only): the sysbench workload, queries by
    /// kind, ignored (retried) errors and errors by server error code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mysql: Option<MysqlDetails>,
    /// A request mix (`tare http --urls`, `--requests-file`,
    /// `[load.http] urls` or `requests`): each named request's share of
    /// the run, in the mix's order. Their `requests` and `in_flight` add
    /// up to the run's; their errors are the run's but for connect errors
    /// (a request is drawn when a connection is ready to send it), so a
    /// connect error belongs to no name (docs/http.md). Empty for one
    /// request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_name: Vec<crate::named::NamedResult>,
    /// tare's version.
    pub tare_version: String,
}

/// For `skip_serializing_if`: a count that was not recorded.
pub(crate) fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A record's primary metric: its value, name, unit and direction.
#[derive(Clone, Debug, PartialEq)]
pub struct Primary {
    /// `throughput` for a record without metrics.
    pub name: String,
    pub value: f64,
    pub unit: String,
    pub better: Better,
}

impl LoadResult {
    /// Requests (or transactions) per second, whichever this engine reports.
    pub fn throughput(&self) -> f64 {
        self.rps.or(self.tps).unwrap_or(0.0)
    }

    /// The primary metric: the one `primary` names in `metrics`, else the
    /// throughput in its unit's rate (`req/s`, `tps`), higher is better.
    /// A named primary missing from `metrics` reads as throughput too.
    pub fn primary(&self) -> Primary {
        if let Some(m) = self
            .primary
            .as_ref()
            .and_then(|p| self.metrics.iter().find(|m| &m.name == p))
        {
            return Primary {
                name: m.name.clone(),
                value: m.value,
                unit: m.unit.clone(),
                better: m.better,
            };
        }
        Primary {
            name: "throughput".into(),
            value: self.throughput(),
            unit: self.unit().rate_label().into(),
            better: Better::Higher,
        }
    }

    /// The metric called `name`, if recorded.
    pub fn metric(&self, name: &str) -> Option<&Metric> {
        self.metrics.iter().find(|m| m.name == name)
    }

    /// What `requests` counts: the recorded unit, or for a record written
    /// before engines recorded it, the one its fields imply (only
    /// transaction counts carried `tps`).
    pub fn unit(&self) -> Unit {
        self.unit.unwrap_or(if self.tps.is_some() {
            Unit::Transactions
        } else {
            Unit::Requests
        })
    }

    /// Everything attempted: the recorded count, or for an older record the
    /// count its unit implies. Requests with status >= 400 are among the
    /// completed `requests` (as wrk counts them); failed transactions are
    /// not (pgbench's "actually processed"), so they add to the attempts.
    pub fn attempts(&self) -> u64 {
        self.attempts.unwrap_or_else(|| {
            let errors = self.errors.total();
            match self.unit() {
                Unit::Requests => self.requests + errors - self.errors.status,
                _ => self.requests + errors,
            }
        })
    }

    /// Errors as a share of everything attempted (1 when nothing was).
    pub fn error_rate(&self) -> f64 {
        match self.attempts() {
            0 => 1.0,
            attempts => self.errors.total() as f64 / attempts as f64,
        }
    }

    /// Generator CPU microseconds per completed request.
    pub fn generator_cpu_us_per_request(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.generator_cpu_s * 1e6 / self.requests as f64
        }
    }
}

/// MySQL details: what sysbench's report says beyond the common fields.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MysqlDetails {
    /// sysbench's test name: `oltp_read_only`, `oltp_read_write`,
    /// `oltp_point_select` or `oltp_write_only`.
    pub workload: String,
    /// `--tables` and `--table-size`.
    pub tables: u64,
    pub table_size: u64,
    /// `prepared` (binary protocol, COM_STMT_EXECUTE) or `text` (COM_QUERY).
    pub protocol: String,
    /// Statements answered in the measured period, as sysbench counts its
    /// "queries performed": `read` (SELECT), `write` (INSERT, UPDATE,
    /// DELETE), `other` (BEGIN, COMMIT, and the ROLLBACK before a retry).
    pub reads: u64,
    pub writes: u64,
    pub other: u64,
    /// Deadlocks, lock wait timeouts and "record changed" errors (1213,
    /// 1205, 1020): the transaction was rolled back and run again, as
    /// sysbench's `--mysql-ignore-errors` default does.
    pub ignored_errors: u64,
    /// Other error replies, by the server's error code (`"1062"`): each
    /// failed its transaction (counted in `errors.status`).
    #[serde(default)]
    pub errors_by_code: BTreeMap<String, u64>,
    /// Retried errors by code, too.
    #[serde(default)]
    pub ignored_by_code: BTreeMap<String, u64>,
    /// `--events`: the transactions planned, when the run was bounded by them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events_planned: Option<u64>,
    /// Connections that ended early (a lost server, a fatal error, a
    /// statement not answered within the timeout); the first reason.
    pub aborted_connections: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abort_error: Option<String>,
    /// Commands outside the transactions that MariaDB counts in
    /// `Questions`: the pre-run check's `SELECT VERSION()` and COM_QUIT,
    /// and the COM_QUIT of each connection still open at the end
    /// (COM_STMT_PREPARE is not counted). With no warm-up, a run's
    /// `Questions` delta is `reads + writes + other + untimed_commands`.
    pub untimed_commands: u64,
    /// `SELECT VERSION()` as the server answered it.
    pub server_version: String,
}

/// Redis details: what was sent, and the errors by kind.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RedisDetails {
    /// The tests (`get`, `set`) or custom command sent, taking turns on
    /// every connection.
    pub tests: Vec<String>,
    /// Commands each connection sends at once (`-P`).
    pub pipeline: u64,
    /// Bytes of each value (`-d`).
    pub data_size: u64,
    /// Keys drawn from this many (`-r`); absent: one key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyspace: Option<u64>,
    /// `-n`: the commands planned, when the run was bounded by a count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_planned: Option<u64>,
    /// Error replies (counted in `errors.status`) by their first word:
    /// `"ERR"`, `"WRONGTYPE"`, `"NOAUTH"`.
    #[serde(default)]
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Connections the server closed or reset during the measured period
    /// (their commands in flight are `errors.read`).
    pub dropped_connections: u64,
    /// The server's `redis_version`.
    pub server_version: String,
}

/// PostgreSQL details: what pgbench reports beyond the common fields.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PgDetails {
    /// `simple`, `extended` or `prepared`.
    pub query_mode: String,
    /// The scripts run, with their weights (`builtin: select only@1`, ...).
    pub scripts: Vec<String>,
    /// `-C`: a new connection per transaction.
    pub connect_per_transaction: bool,
    /// Transactions per second excluding connection set-up time.
    pub tps_excluding_connect: f64,
    /// Time to open the initial connections (or the mean per-transaction
    /// connection time with `-C`), in milliseconds.
    pub connection_time_ms: f64,
    /// Failed transactions by SQLSTATE class (`"23"`, `"40"`, ...).
    #[serde(default)]
    pub failed_by_sqlstate_class: BTreeMap<String, u64>,
    /// `-r`: per-statement latency.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub statements: Vec<StatementLatency>,
    /// Failed transactions (an SQL error; counted, the run goes on).
    #[serde(default)]
    pub failed: u64,
    /// Transactions per second including connection set-up time (the
    /// initial connections; with `-C`, every reconnection).
    #[serde(default)]
    pub tps_including_connect: f64,
    /// The `:scale` variable (pgbench's "scaling factor").
    #[serde(default)]
    pub scale: u32,
    /// `-T`: the planned duration in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_duration_s: Option<f64>,
    /// `-t`: transactions per client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions_per_client: Option<u64>,
    /// Clients stopped by an error they could not continue from (a dead
    /// server, a script error); their partial work is still counted.
    #[serde(default)]
    pub aborted_clients: u64,
    /// The first client abort, in pgbench's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abort_error: Option<String>,
    /// The first failed transaction's error, in the server's words
    /// (`ERROR: syntax error at or near "SELEC" (SQLSTATE 42601)`);
    /// absent when none failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<String>,
    /// `server_version` as the server reported it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub server_version: String,
    /// Per-script results (pgbench prints them when several scripts run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub script_results: Vec<PgScriptResult>,
    /// `--max-tries`: tries of a transaction failing by a serialization
    /// failure or a deadlock (0: no limit); absent: pgbench's default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tries: Option<u32>,
    /// Transactions tried more than once, and the tries beyond the first.
    #[serde(default)]
    pub retried: u64,
    #[serde(default)]
    pub retries: u64,
    /// Failed transactions whose last error was a serialization failure
    /// (SQLSTATE 40001), a deadlock (40P01).
    #[serde(default)]
    pub serialization_failures: u64,
    #[serde(default)]
    pub deadlock_failures: u64,
    /// `--latency-limit` in ms, with the successful transactions above it
    /// and (with a rate) the starts skipped as already late.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_limit_ms: Option<f64>,
    #[serde(default)]
    pub late: u64,
    #[serde(default)]
    pub skipped: u64,
}

/// `tare net` details: what netperf and nuttcp report beyond the common
/// fields (docs/net.md).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NetDetails {
    /// `rr`, `crr`, `udp-rr` or `stream`.
    pub test: String,
    /// Request bytes per transaction (stream: bytes per write).
    pub request_bytes: u64,
    /// Response bytes per transaction (stream: bytes per read).
    pub response_bytes: u64,
    /// Round trips: mean microseconds per round trip of one connection,
    /// `1e6 * connections / transactions per second` (netperf's
    /// "latency" from its TCP_RR rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_trip_us: Option<f64>,
    /// `udp-rr`: requests whose response never came within the timeout
    /// (also counted in `errors.timeout`).
    #[serde(default)]
    pub lost: u64,
    /// How the client's threads waited: `blocking` (a stream, or rr with
    /// one connection per thread), `io_uring` or `epoll` (the event loop);
    /// `mixed` if its threads differed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub client_io: String,
    /// Stream: `send`, `receive` or `both`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub direction: String,
    /// Stream: bytes the client wrote during the measured period.
    #[serde(default)]
    pub bytes_sent: u64,
    /// Stream: bytes the client read during the measured period.
    #[serde(default)]
    pub bytes_received: u64,
    /// Stream: client to responder, Gbit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_gbit_s: Option<f64>,
    /// Stream: responder to client, Gbit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive_gbit_s: Option<f64>,
    /// Stream: the client's CPU seconds per gigabyte moved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpu_s_per_gb: Option<f64>,
    /// Stream: the responder's CPU seconds per gigabyte, from the CPU
    /// time of its connection threads it reports at the end of each stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_s_per_gb: Option<f64>,
}

/// One script's share of a `pg` run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PgScriptResult {
    pub name: String,
    pub weight: u32,
    pub transactions: u64,
    pub failed: u64,
    pub latency_mean_ms: f64,
    pub latency_stdev_ms: f64,
    pub tps: f64,
    /// This script's share of `PgDetails`' `retried`, `retries`,
    /// `serialization_failures`, `deadlock_failures` and `skipped`.
    #[serde(default)]
    pub retried: u64,
    #[serde(default)]
    pub retries: u64,
    #[serde(default)]
    pub serialization_failures: u64,
    #[serde(default)]
    pub deadlock_failures: u64,
    #[serde(default)]
    pub skipped: u64,
}

/// `-r`: one script command's latency.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StatementLatency {
    pub script: String,
    pub line: u64,
    pub command: String,
    pub mean_ms: f64,
    /// Transactions that failed at this command (after their last try).
    pub failures: u64,
    /// `--max-tries`: retries after an error in this command.
    #[serde(default)]
    pub retries: u64,
}

/// Mean, standard deviation and maximum of a set of rate samples, and the
/// share of samples within one standard deviation of the mean.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RateSummary {
    pub mean: f64,
    pub stdev: f64,
    pub max: f64,
    pub within_stdev_pct: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed_transactions(ok: u64, failed: u64) -> LoadResult {
        let mut r = LoadResult {
            engine: "pg".into(),
            requests: ok,
            tps: Some(ok as f64),
            ..Default::default()
        };
        r.errors.status = failed;
        r
    }

    /// A record written before `unit` and `attempts` existed reads as its
    /// fields say, whatever its engine is called.
    #[test]
    fn older_records_derive_unit_and_attempts_from_their_fields() {
        // As a record of an engine with an unknown name, before `unit`
        // and `attempts` existed.
        let mut old = serde_json::to_value(failed_transactions(900, 100)).unwrap();
        old["engine"] = "x".into();
        assert!(old.get("unit").is_none() && old.get("attempts").is_none());
        let old = old.to_string();
        let r: LoadResult = serde_json::from_str(&old).unwrap();
        assert_eq!((r.unit, r.attempts), (None, None));
        assert_eq!(r.unit(), Unit::Transactions);
        assert_eq!(r.attempts(), 1000);
        let http: LoadResult = serde_json::from_str(&old.replace(r#""tps""#, r#""rps""#)).unwrap();
        assert_eq!(http.unit(), Unit::Requests);
        assert_eq!(
            http.attempts(),
            900,
            "a 4xx response is a completed request"
        );
    }

    #[test]
    fn recorded_unit_and_attempts_win_and_round_trip() {
        let mut r = failed_transactions(900, 100);
        r.unit = Some(Unit::RoundTrips);
        r.attempts = Some(2000);
        assert_eq!(r.error_rate(), 0.05);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["unit"], "round trips");
        assert_eq!(json["attempts"], 2000);
        assert_eq!(serde_json::from_value::<LoadResult>(json).unwrap(), r);
    }

    /// The primary metric is the named one of `metrics`; without one (or
    /// naming one that is absent) it is the throughput, higher is better.
    #[test]
    fn primary_is_the_named_metric_else_throughput() {
        let mut r = LoadResult {
            rps: Some(5.0),
            metrics: vec![crate::Metric::new("p99_us", 7.0, "µs", Better::Lower)],
            ..Default::default()
        };
        assert_eq!(
            (r.primary().name.as_str(), r.primary().value),
            ("throughput", 5.0)
        );
        assert_eq!(r.primary().unit, "req/s");
        r.primary = Some("p99_us".into());
        let p = r.primary();
        assert_eq!(
            (p.value, p.unit.as_str(), p.better),
            (7.0, "µs", Better::Lower)
        );
        r.primary = Some("gone".into());
        assert_eq!(r.primary().name, "throughput");
        let json = serde_json::to_value(LoadResult::default()).unwrap();
        assert!(json.get("metrics").is_none() && json.get("primary").is_none());
        assert_eq!(Better::Lower.as_speed(4.0), 0.25);
    }

    #[test]
    fn failed_transactions_are_attempts_once() {
        assert_eq!(failed_transactions(900, 100).error_rate(), 0.1);
        assert_eq!(failed_transactions(0, 100).error_rate(), 1.0);
        assert_eq!(failed_transactions(0, 0).error_rate(), 1.0);
    }
}
