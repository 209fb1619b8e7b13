//! pgbench's own flags beyond the load flags every engine shares: the
//! initialization options, the logging and retry options, and pgbench's
//! checks of them with its messages (pgbench.c `main`), so a pgbench
//! command line that pgbench refuses is refused alike (docs/pg.md).

use std::process::ExitCode;

use anyhow::bail;
use clap::{ArgAction, Args};
use tare_pg::init::{InitOptions, PartitionMethod};
use tare_pg::QueryMode;

use super::pg::PgArgs;

/// `-i` options.
#[derive(Args, Debug)]
pub(crate) struct InitArgs {
    /// Initialization steps: d(rop) t(ables) g/G (data) v(acuum) p(rimary keys) f(oreign keys).
    #[arg(short = 'I', long = "init-steps", value_name = "STEPS")]
    pub(crate) steps: Option<String>,
    /// Fill factor of pgbench's tables (10..100).
    #[arg(short = 'F', long = "fillfactor", value_name = "N")]
    pub(crate) fillfactor: Option<String>,
    /// Partition pgbench_accounts into N partitions.
    #[arg(long = "partitions", value_name = "N", allow_hyphen_values = true)]
    pub(crate) partitions: Option<String>,
    /// range (default) or hash.
    #[arg(long = "partition-method", value_name = "METHOD")]
    pub(crate) partition_method: Option<String>,
    /// Create foreign keys between the tables.
    #[arg(long = "foreign-keys", action = ArgAction::Count)]
    pub(crate) foreign_keys: u8,
    /// Create the tables unlogged.
    #[arg(long = "unlogged-tables", action = ArgAction::Count)]
    pub(crate) unlogged: u8,
    /// Tablespace of the tables.
    #[arg(long = "tablespace", value_name = "NAME")]
    pub(crate) tablespace: Option<String>,
    /// Tablespace of the indexes.
    #[arg(long = "index-tablespace", value_name = "NAME")]
    pub(crate) index_tablespace: Option<String>,
    /// Quieter initialization (accepted; tare's is always one line a step).
    #[arg(short = 'q', long = "quiet", action = ArgAction::Count)]
    pub(crate) quiet: u8,
}

impl InitArgs {
    fn given(&self) -> bool {
        self.steps.is_some()
            || self.fillfactor.is_some()
            || self.partitions.is_some()
            || self.partition_method.is_some()
            || self.foreign_keys > 0
            || self.unlogged > 0
            || self.tablespace.is_some()
            || self.index_tablespace.is_some()
            || self.quiet > 0
    }

    /// `no_vacuum`: `-n`, which drops the `v` steps.
    pub(crate) fn options(&self, scale: u32, no_vacuum: bool) -> anyhow::Result<InitOptions> {
        let mut steps = self.steps.clone().unwrap_or_else(|| "dtgvp".into());
        if no_vacuum {
            steps.retain(|c| c != 'v');
        }
        if let Some(bad) = steps.chars().find(|c| !"dtgGvpf ".contains(*c)) {
            bail!(
                "unrecognized initialization step \"{bad}\"; Allowed step characters are: \"dtgGvpf\"."
            );
        }
        if self.foreign_keys > 0 && !steps.contains('f') {
            steps.push('f');
        }
        let partitions = match &self.partitions {
            None => 0,
            Some(p) => int_in(p, "--partitions", 0, i32::MAX as i64)? as u32,
        };
        let method = match self.partition_method.as_deref() {
            None => None,
            Some("range") => Some(PartitionMethod::Range),
            Some("hash") => Some(PartitionMethod::Hash),
            Some(other) => {
                bail!("invalid partition method, expecting \"range\" or \"hash\", got: \"{other}\"")
            }
        };
        if method.is_some() && partitions == 0 {
            bail!("--partition-method requires greater than zero --partitions");
        }
        Ok(InitOptions {
            scale,
            steps,
            fillfactor: match &self.fillfactor {
                Some(f) => int_in(f, "-F/--fillfactor", 10, 100)? as u32,
                None => 100,
            },
            partitions,
            partition_method: method.unwrap_or(PartitionMethod::Range),
            unlogged: self.unlogged > 0,
            tablespace: self.tablespace.clone(),
            index_tablespace: self.index_tablespace.clone(),
        })
    }
}

/// Logging, retries and latency limit: checked as pgbench checks them.
#[derive(Args, Debug)]
pub(crate) struct PgbenchArgs {
    /// Write a per-transaction log (pgbench_log.PID[.THREAD]).
    #[arg(short = 'l', long = "log", action = ArgAction::Count)]
    pub(crate) log: u8,
    /// Fraction of transactions to log (0 < RATE <= 1).
    #[arg(long = "sampling-rate", value_name = "RATE")]
    pub(crate) sampling_rate: Option<String>,
    /// Log aggregates over SECS-second intervals instead of transactions.
    #[arg(
        long = "aggregate-interval",
        value_name = "SECS",
        allow_hyphen_values = true
    )]
    pub(crate) aggregate_interval: Option<String>,
    /// Prefix of the log files (default pgbench_log).
    #[arg(long = "log-prefix", value_name = "PREFIX")]
    pub(crate) log_prefix: Option<String>,
    /// Count transactions above this latency (ms) separately.
    #[arg(short = 'L', long = "latency-limit", value_name = "MS")]
    pub(crate) latency_limit: Option<String>,
    /// Tries of a transaction failing by serialization or deadlock (0: unlimited).
    #[arg(long = "max-tries", value_name = "N", allow_hyphen_values = true)]
    pub(crate) max_tries: Option<String>,
    /// Print every failure's message.
    #[arg(long = "verbose-errors", action = ArgAction::Count)]
    pub(crate) verbose_errors: u8,
    /// Report failures by kind.
    #[arg(long = "failures-detailed", action = ArgAction::Count)]
    pub(crate) failures_detailed: u8,
    /// Trace every client's steps on stderr (pgbench's --debug; -d is the database).
    #[arg(long = "debug", action = ArgAction::Count)]
    pub(crate) debug: u8,
    /// A failed statement fails its transaction and the client goes on,
    /// counted by SQLSTATE class (pgbench 15 aborts the client).
    #[arg(long = "continue-on-error", action = ArgAction::Count)]
    pub(crate) continue_on_error: u8,
}

impl PgbenchArgs {
    /// Puts the checked logging, retry and error flags into `cfg`.
    pub(crate) fn apply(&self, cfg: &mut tare_pg::PgConfig) {
        cfg.continue_on_error = self.continue_on_error > 0;
        cfg.max_tries = self
            .max_tries
            .as_deref()
            .and_then(|m| m.parse().ok())
            .unwrap_or(1);
        cfg.verbose_errors = self.verbose_errors > 0;
        cfg.print_aborts = true;
        cfg.failures_detailed = self.failures_detailed > 0;
        cfg.debug = self.debug > 0;
        cfg.latency_limit = self
            .latency_limit
            .as_deref()
            .and_then(|l| l.parse::<f64>().ok())
            .map(|ms| std::time::Duration::from_secs_f64(ms / 1e3));
        if self.log > 0 {
            cfg.log = Some(tare_pg::TxLogConfig {
                prefix: self
                    .log_prefix
                    .clone()
                    .unwrap_or_else(|| "pgbench_log".into()),
                sampling_rate: self.sampling_rate.as_deref().and_then(|r| r.parse().ok()),
                aggregate_interval: self
                    .aggregate_interval
                    .as_deref()
                    .and_then(|a| a.trim().parse().ok()),
            });
        }
    }
}

/// The flags after pgbench's checks.
pub(crate) struct Checked {
    pub(crate) clients: usize,
    pub(crate) threads: usize,
    pub(crate) time: Option<u64>,
    pub(crate) transactions: Option<u64>,
    pub(crate) mode: QueryMode,
    pub(crate) progress: Option<u64>,
    pub(crate) scale: Option<u32>,
    pub(crate) random_seed: Option<u64>,
}

/// pgbench's `option_parse_int`: an integer in `[min, max]`.
fn int_in(v: &str, name: &str, min: i64, max: i64) -> anyhow::Result<i64> {
    let n: i64 = v
        .trim()
        .parse()
        .map_err(|_| anyhow::anyhow!("invalid value \"{v}\" for option {name}"))?;
    if n < min || n > max {
        bail!("{name} must be in range {min}..{max}");
    }
    Ok(n)
}

const INT_MAX: i64 = i32::MAX as i64;

/// `-b list` and `--show-script NAME`: pgbench's listings on stderr.
pub(crate) fn listing(args: &PgArgs) -> anyhow::Result<Option<ExitCode>> {
    if args.builtins.iter().any(|b| b == "list") {
        eprintln!("Available builtin scripts:");
        for b in tare_pg::script::builtins() {
            eprintln!("\t{:>13}: {}", b.0, b.1);
        }
        return Ok(Some(ExitCode::SUCCESS));
    }
    if let Some(name) = &args.show_script {
        let (name, desc, text) = tare_pg::script::builtin(name).map_err(anyhow::Error::msg)?;
        eprintln!("-- {name}: {desc}\n{text}");
        return Ok(Some(ExitCode::SUCCESS));
    }
    Ok(None)
}

pub(crate) fn check_flags(args: &PgArgs) -> anyhow::Result<Checked> {
    let run_only = args.select_only > 0
        || args.simple_update > 0
        || !args.builtins.is_empty()
        || !args.files.is_empty()
        || args.time.is_some()
        || args.transactions.is_some()
        || args.clients.is_some()
        || args.connect > 0
        || args.progress.is_some()
        || args.pgbench.log > 0;
    if args.init > 0 && run_only {
        bail!("some of the specified options cannot be used in initialization (-i) mode");
    }
    if args.init == 0 && args.initopts.given() {
        bail!("some of the specified options cannot be used in benchmarking mode");
    }
    if args.init > 0 {
        // The init options' own checks come with their use.
        args.initopts.options(1, false)?;
    }
    let opt = |v: &Option<String>, name: &str, min: i64| -> anyhow::Result<Option<i64>> {
        v.as_deref()
            .map(|v| int_in(v, name, min, INT_MAX))
            .transpose()
    };
    let clients = opt(&args.clients, "-c/--clients", 1)?.unwrap_or(1) as usize;
    let threads = opt(&args.threads, "-j/--jobs", 1)?.unwrap_or(1) as usize;
    let scale = opt(&args.scale, "-s/--scale", 1)?.map(|s| s as u32);
    let transactions = opt(&args.transactions, "-t/--transactions", 1)?.map(|t| t as u64);
    let time = opt(&args.time, "-T/--time", 1)?.map(|t| t as u64);
    if time.is_some() && transactions.is_some() {
        bail!("specify either a number of transactions (-t) or a duration (-T), not both");
    }
    let mode = match args.mode.as_deref() {
        None | Some("simple") => QueryMode::Simple,
        Some("extended") => QueryMode::Extended,
        Some("prepared") => QueryMode::Prepared,
        Some(other) => bail!("invalid query mode (-M): \"{other}\""),
    };
    let progress = opt(&args.progress, "-P/--progress", 1)?.map(|p| p as u64);
    if args.progress_timestamp > 0 && progress.is_none() {
        bail!("--progress-timestamp is allowed only under --progress");
    }
    let random_seed = match args.random_seed.as_deref() {
        None | Some("time") => None,
        Some("rand") => Some(rand_seed()),
        Some(s) => Some(s.parse::<u64>().map_err(|_| {
            anyhow::anyhow!(
                "unrecognized random seed option \"{s}\"; Expecting an unsigned integer, \"time\" or \"rand\"; error while setting random seed from --random-seed option"
            )
        })?),
    };
    check_logging(&args.pgbench, time)?;
    Ok(Checked {
        clients,
        threads,
        time,
        transactions,
        mode,
        progress,
        scale,
        random_seed,
    })
}

fn check_logging(p: &PgbenchArgs, time: Option<u64>) -> anyhow::Result<()> {
    if let Some(r) = &p.sampling_rate {
        match r.parse::<f64>() {
            Ok(x) if x > 0.0 && x <= 1.0 => {}
            _ => bail!("invalid sampling rate: \"{r}\""),
        }
    }
    let agg = p
        .aggregate_interval
        .as_deref()
        .map(|a| int_in(a, "--aggregate-interval", 1, INT_MAX))
        .transpose()?;
    if let Some(l) = &p.latency_limit {
        match l.parse::<f64>() {
            Ok(x) if x > 0.0 => {}
            _ => bail!("invalid latency limit: \"{l}\""),
        }
    }
    if let Some(m) = &p.max_tries {
        match m.parse::<i64>() {
            Ok(n) if (0..=u32::MAX as i64).contains(&n) => {
                if n == 0 && p.latency_limit.is_none() && time.is_none() {
                    bail!("an unlimited number of transaction tries can only be used with --latency-limit or a duration (-T)");
                }
            }
            _ => bail!("invalid number of maximum tries: \"{m}\""),
        }
    }
    let logging = p.log > 0;
    if p.sampling_rate.is_some() && !logging {
        bail!("log sampling (--sampling-rate) is allowed only when logging transactions (-l)");
    }
    if p.sampling_rate.is_some() && agg.is_some() {
        bail!("log sampling (--sampling-rate) and aggregation (--aggregate-interval) cannot be used at the same time");
    }
    if agg.is_some() && !logging {
        bail!("log aggregation is allowed only when actually logging transactions");
    }
    if p.log_prefix.is_some() && !logging {
        bail!("log file prefix (--log-prefix) is allowed only when logging transactions (-l)");
    }
    if let (Some(a), Some(t)) = (agg, time) {
        if a as u64 > t {
            bail!("number of seconds for aggregation ({a}) must not be higher than test duration ({t})");
        }
        if t % a as u64 != 0 {
            bail!("duration ({t}) must be a multiple of aggregation interval ({a})");
        }
    }
    Ok(())
}

/// `--random-seed=rand`: a seed from the OS's random source.
fn rand_seed() -> u64 {
    let mut b = [0u8; 8];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        use std::io::Read;
        let _ = f.read_exact(&mut b);
    }
    u64::from_le_bytes(b)
}
