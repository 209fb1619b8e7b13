//! External load tools as a cell's load (docs/external.md): wrk (with its
//! Lua scripts), ab, h2load (HTTP/2), pgbench, redis-benchmark, sysbench,
//! locust and JMeter run against the cell's address, their output (JMeter's
//! results file) read into the same [`LoadResult`] every engine writes.
//!
//! - [`LoadTool`]: which tools, their Debian packages, their default
//!   arguments and their parsers ([`wrk`], [`ab`], [`h2load`], [`pgbench`],
//!   [`redis_benchmark`], [`sysbench`], [`locust`], [`jmeter`]).
//! - [`args`]: the argument list's placeholders, filled per cell.
//! - [`run`]: one run of a tool: pinned, in the client's namespace, killed
//!   past its duration, its own CPU from its rusage.
//!
//! Each parser returns a [`Reported`]: every number the tool printed, and
//! nothing it did not (a field it lacks is `None` or absent from a map,
//! never zero).

pub mod ab;
pub mod args;
pub mod h2load;
pub mod jmeter;
pub mod locust;
pub mod pgbench;
mod progress;
pub mod redis_benchmark;
pub mod run;
pub mod sysbench;
mod units;
pub mod wrk;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use tare_record::{Errors, Latency, Unit};

use crate::parsed::ParseError;

pub use run::{External, ExternalConfig, ExternalError};

/// `wrk: cannot read `LINE``, the line cut at 120 characters (not bytes:
/// a cut inside a character panicked, found by the `external` fuzz target).
pub(crate) fn unreadable(tool: &str, line: &str) -> ParseError {
    let l: String = line.chars().take(120).collect();
    ParseError::new(format!("{tool}: cannot read `{l}`"))
}

/// A load tool tare can run and read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadTool {
    Wrk,
    Ab,
    H2load,
    Pgbench,
    #[serde(rename = "redis-benchmark")]
    RedisBenchmark,
    Sysbench,
    Locust,
    Jmeter,
}

impl LoadTool {
    pub const ALL: &'static [LoadTool] = &[
        LoadTool::Wrk,
        LoadTool::Ab,
        LoadTool::H2load,
        LoadTool::Pgbench,
        LoadTool::RedisBenchmark,
        LoadTool::Sysbench,
        LoadTool::Locust,
        LoadTool::Jmeter,
    ];

    /// Its executable's name, as `[load.external] tool` spells it.
    pub fn name(self) -> &'static str {
        match self {
            LoadTool::Wrk => "wrk",
            LoadTool::Ab => "ab",
            LoadTool::H2load => "h2load",
            LoadTool::Pgbench => "pgbench",
            LoadTool::RedisBenchmark => "redis-benchmark",
            LoadTool::Sysbench => "sysbench",
            LoadTool::Locust => "locust",
            LoadTool::Jmeter => "jmeter",
        }
    }

    /// The process name the monitor watches: JMeter runs as `java`.
    pub fn process_name(self) -> &'static str {
        match self {
            LoadTool::Jmeter => "java",
            t => t.name(),
        }
    }

    /// How long past its duration the tool may run when `grace` is not
    /// given: JMeter starts a Java VM and loads its plan before its
    /// duration starts (1.3 s unloaded here, docs/external.md).
    pub fn default_grace(self) -> std::time::Duration {
        match self {
            LoadTool::Jmeter => std::time::Duration::from_secs(20),
            _ => std::time::Duration::from_secs(5),
        }
    }

    /// What one completion is: an HTTP request, or pgbench's transaction.
    pub fn unit(self) -> Unit {
        match self {
            LoadTool::Pgbench | LoadTool::Sysbench => Unit::Transactions,
            LoadTool::RedisBenchmark => Unit::Commands,
            _ => Unit::Requests,
        }
    }

    pub fn from_name(name: &str) -> Option<LoadTool> {
        LoadTool::ALL.iter().copied().find(|t| t.name() == name)
    }

    /// The Debian package that provides it.
    pub fn package(self) -> &'static str {
        match self {
            LoadTool::Wrk => "wrk",
            LoadTool::Ab => "apache2-utils",
            LoadTool::H2load => "nghttp2-client",
            LoadTool::Pgbench => "postgresql-client",
            LoadTool::RedisBenchmark => "redis-tools",
            LoadTool::Sysbench => "sysbench",
            LoadTool::Locust => "python3-locust",
            // Its HTTP sampler is a package of its own, which depends on
            // `jmeter`.
            LoadTool::Jmeter => "jmeter-http",
        }
    }

    /// The arguments when the experiment gives none: the cell's
    /// connections, threads and duration, and the URL. ab's `-t` implies
    /// `-n 50000` (ab.c, `MAX_REQUESTS`), so a larger `-n` follows it: ab
    /// stops at either, and allocates its per-request table for `-n` up
    /// front (`-n1000000000` failed to start here), so ten million, 100k
    /// requests a second for 100 s; ab has no threads. pgbench's built-in
    /// scripts need `pgbench -i`'s tables: an experiment names its own
    /// script (`-f`, docs/external.md); `-n` skips the vacuum of those
    /// tables.
    pub fn default_args(self) -> &'static [&'static str] {
        match self {
            LoadTool::Wrk => &[
                "-t{threads}",
                "-c{connections}",
                "-d{duration}s",
                "--latency",
                "{url}",
            ],
            LoadTool::Ab => &[
                "-k",
                "-c{connections}",
                "-t{duration}",
                "-n10000000",
                "{url}",
            ],
            LoadTool::H2load => &["-t{threads}", "-c{connections}", "-D{duration}", "{url}"],
            LoadTool::Pgbench => &[
                "-n",
                "-c{connections}",
                "-j{threads}",
                "-T{duration}",
                "{url}",
            ],
            // redis-benchmark runs a count, not a time: 100k GETs.
            LoadTool::RedisBenchmark => &[
                "-h",
                "{host}",
                "-p",
                "{port}",
                "-c",
                "{connections}",
                "--threads",
                "{threads}",
                "-n",
                "100000",
                "-t",
                "get",
            ],
            // The mysql target's user and database (sbtest, no password);
            // one connection per thread; `run` makes tare prepare the
            // tables before it and clean them up after (docs/external.md).
            LoadTool::Sysbench => &[
                "oltp_read_only",
                "--db-driver=mysql",
                "--mysql-host={host}",
                "--mysql-port={port}",
                "--mysql-user=sbtest",
                "--mysql-db=sbtest",
                "--tables=1",
                "--table-size=10000",
                "--threads={connections}",
                "--time={duration}",
                "--report-interval=1",
                "--histogram=on",
                "run",
            ],
            // A locustfile is the experiment's (`scripts`); a user per
            // connection, all started in the first second; `--host` is the
            // base URL its paths are joined to.
            LoadTool::Locust => &[
                "-f",
                "locustfile.py",
                "--headless",
                "-u",
                "{connections}",
                "-r",
                "{connections}",
                "-t",
                "{duration}s",
                "--host",
                "http://{host}:{port}",
                "--only-summary",
                "--exit-code-on-error",
                "0",
            ],
            // The plan is the experiment's (`scripts`); it reads the cell
            // as JMeter properties: `${__P(host)}`, `${__P(port)}`,
            // `${__P(threads)}`, `${__P(duration)}`. tare adds `-l` and
            // the JTL's settings ([`jmeter::forced_args`]).
            LoadTool::Jmeter => &[
                "-n",
                "-t",
                "plan.jmx",
                "-Jhost={host}",
                "-Jport={port}",
                "-Jthreads={connections}",
                "-Jduration={duration}",
            ],
        }
    }

    /// Arguments the tool may not be given, checked when the experiment is
    /// read: JMeter's results file and log are tare's.
    pub fn check_args(self, args: &[String]) -> Result<(), String> {
        match self {
            LoadTool::Jmeter => jmeter::check_args(args),
            _ => Ok(()),
        }
    }

    /// Which of a run's outputs [`LoadTool::parse`] reads: locust logs
    /// its summary on stderr, the others print theirs on stdout (JMeter's
    /// is its results file, which `run` reads instead).
    pub fn output<'a>(self, stdout: &'a str, stderr: &'a str) -> &'a str {
        match self {
            LoadTool::Locust => stderr,
            _ => stdout,
        }
    }

    /// Reads one run's output ([`LoadTool::output`]).
    pub fn parse(self, output: &str) -> Result<Reported, ParseError> {
        let r = match self {
            LoadTool::Wrk => wrk::parse(output),
            LoadTool::Ab => ab::parse(output),
            LoadTool::H2load => h2load::parse(output),
            LoadTool::Pgbench => pgbench::parse(output),
            LoadTool::RedisBenchmark => redis_benchmark::parse(output),
            LoadTool::Sysbench => sysbench::parse(output),
            LoadTool::Locust => locust::parse(output),
            LoadTool::Jmeter => jmeter::parse(output),
        }?;
        r.check()?;
        Ok(r)
    }

    /// The host's binary on PATH, else the one-line error that names the
    /// package to install.
    pub fn find(self) -> Result<PathBuf, String> {
        crate::on_path(self.name()).ok_or_else(|| self.missing())
    }

    /// `ab is not installed: install the Debian package apache2-utils (...)`.
    pub fn missing(self) -> String {
        format!(
            "{} is not installed: install the Debian package {1} (apt-get install {1}; scripts/setup.sh does)",
            self.name(),
            self.package()
        )
    }
}

/// What a tool's output says about one run. `None` and absent keys: the
/// tool did not say.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reported {
    /// Completed requests (responses of any status).
    pub requests: Option<u64>,
    /// The measured time, seconds.
    pub duration_s: Option<f64>,
    /// Completed requests per second.
    pub rps: Option<f64>,
    /// Bytes received.
    pub bytes_read: Option<u64>,
    /// Errors mapped onto the common kinds, and which kinds the tool
    /// reports at all (`connect`, `read`, `write`, `timeout`, `status`).
    pub errors: Errors,
    pub error_kinds: Vec<&'static str>,
    /// Errors in the tool's own words.
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Latency, microseconds: `min`, `mean`, `stdev`, `max`, `p50`...
    pub latency_us: BTreeMap<String, f64>,
    /// The protocol the tool said it spoke.
    pub protocol: Option<String>,
    /// The whole latency distribution, where the tool printed one (wrk
    /// with tare's `done()`): each distinct value in microseconds and its
    /// count, in increasing order.
    pub histogram: Option<Vec<(u64, u64)>>,
    /// The latency histogram already encoded as the record keeps it
    /// (HdrHistogram V2 + DEFLATE, base64, in nanoseconds), where the
    /// parser built it from every sample (JMeter's JTL).
    pub encoded_hdr: Option<String>,
    /// Completions in each second, where the tool's own output gives them
    /// (pgbench's and sysbench's are read from their progress lines in `run`).
    pub timeline: Option<Vec<u64>>,
    /// When the tool's own window began (seconds since the epoch).
    pub started_unix_s: Option<f64>,
}

impl Reported {
    /// A run that says how many requests completed and over what time (or
    /// at what rate), with every number finite and not negative.
    fn check(&self) -> Result<(), ParseError> {
        if self.requests.is_none() {
            return Err(ParseError::new("no count of completed requests"));
        }
        if self.rps.is_none() && self.duration_s.is_none() {
            return Err(ParseError::new("no duration and no request rate"));
        }
        let nums = self
            .latency_us
            .values()
            .chain(self.rps.iter())
            .chain(self.duration_s.iter());
        for v in nums {
            if !v.is_finite() || *v < 0.0 {
                return Err(ParseError::new(format!("a number out of range: {v}")));
            }
        }
        Ok(())
    }

    /// The distribution as the record keeps every engine's: an HDR
    /// histogram in nanoseconds, base64 (`LoadResult::hdr`); `None` when
    /// the tool printed none.
    pub fn hdr(&self) -> Option<String> {
        let pairs = self.histogram.as_ref()?;
        let mut h = Latency::new();
        for &(us, n) in pairs {
            h.record_ns_n(us.saturating_mul(1000), n);
        }
        h.encode().ok()
    }

    /// Completed requests per second: the tool's, else its count over its
    /// duration.
    pub fn throughput(&self) -> f64 {
        self.rps
            .unwrap_or_else(|| match (self.requests, self.duration_s) {
                (Some(n), Some(d)) if d > 0.0 => n as f64 / d,
                _ => 0.0,
            })
    }
}

#[cfg(test)]
mod tests {
    /// Found by the `external` fuzz target: a cut inside a character.
    #[test]
    fn an_unreadable_line_is_cut_at_a_character() {
        let e = super::unreadable("wrk", &"\u{fffd}".repeat(200)).to_string();
        assert_eq!(e.chars().filter(|c| *c == '\u{fffd}').count(), 120);
    }
}
