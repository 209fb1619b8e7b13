//! `tare redis`: Redis load with redis-benchmark's flags and text (one
//! block per `-t` test, `-q`, `--csv`), plus what it lacks: a duration
//! (`-T`), HDR percentiles, an open loop (`--rate`), `--find-max --slo`
//! and the JSON contract. A custom command follows the options, as in
//! redis-benchmark (`tare redis -r 1000 SET key:__rand_int__ val`), or
//! `--` when its words look like options.
//!
//! redis-benchmark's `-h` is the host, so clap's `-h` help is off for this
//! subcommand; `--help` remains.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use clap::{ArgAction, Args};
use tare_engine::units::parse_duration;
use tare_record::LoadResult;
use tare_redis::command::{parse_tests, suite};
use tare_redis::report;
use tare_redis::session::Session;
use tare_redis::{Redis, RedisConfig, Workload};

use super::load_args::{self, LoadArgs};

#[derive(Args, Debug)]
#[command(disable_help_flag = true, args_override_self = true)]
pub(crate) struct RedisArgs {
    /// Server hostname.
    #[arg(short = 'h', long = "host", default_value = "127.0.0.1")]
    pub host: String,
    /// Server port.
    #[arg(short = 'p', long = "port", default_value_t = 6379)]
    pub port: u16,
    /// Server socket (overrides host and port).
    #[arg(short = 's', long = "socket", value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Server URI: redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] (overrides
    /// -h, -p, -a, --user and --dbnum).
    #[arg(short = 'u', value_name = "URI")]
    pub uri: Option<String>,
    /// Idle mode: just open the connections and wait (until Ctrl+C, or
    /// for -T DURATION); anything the server sends on them is an error.
    #[arg(short = 'I')]
    pub idle: bool,
    /// Password for Redis AUTH.
    #[arg(short = 'a', value_name = "PASSWORD")]
    pub password: Option<String>,
    /// Used to send ACL style 'AUTH username pass'. Needs -a.
    #[arg(long = "user", value_name = "USERNAME", requires = "password")]
    pub user: Option<String>,
    /// Number of parallel connections.
    #[arg(short = 'c', long = "clients", default_value_t = tare_redis::config::DEFAULT_CLIENTS)]
    pub clients: usize,
    /// Total number of requests (per test; not with -T).
    #[arg(short = 'n', long = "requests", conflicts_with = "duration")]
    pub requests: Option<u64>,
    /// Run each test for this long instead of a request count (10s, 500ms).
    #[arg(short = 'T', long = "duration", value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// Data size of SET/GET value in bytes.
    #[arg(short = 'd', default_value_t = tare_redis::config::DEFAULT_DATA_SIZE, value_name = "SIZE")]
    pub data_size: usize,
    /// SELECT the specified db number.
    #[arg(long = "dbnum", default_value_t = 0)]
    pub dbnum: u32,
    /// Worker threads (each with its own connections and event loop).
    #[arg(long = "threads", default_value_t = 1)]
    pub threads: usize,
    /// Use random keys: __rand_int__ in an argument becomes a 12-digit
    /// number from 0 to KEYSPACELEN-1, on every command.
    #[arg(short = 'r', value_name = "KEYSPACELEN")]
    pub keyspace: Option<u64>,
    /// Pipeline NUMREQ requests (default 1: no pipeline).
    #[arg(short = 'P', default_value_t = 1, value_name = "NUMREQ")]
    pub pipeline: usize,
    /// Quiet: just show one line per test (requests per second, p50).
    #[arg(short = 'q')]
    pub quiet: bool,
    /// Output in CSV format.
    #[arg(long = "csv")]
    pub csv: bool,
    /// Only run this comma separated list of tests (ping, ping_inline,
    /// ping_mbulk, set, get, incr, lpush, rpush, lpop, rpop, sadd, hset,
    /// spop, zadd, zpopmin, lrange_100..600, mset). Default: all.
    #[arg(short = 't', value_name = "TESTS")]
    pub tests: Option<String>,
    /// Seed of the key generators (default: from the clock).
    #[arg(long = "seed")]
    pub seed: Option<u64>,
    /// --rate, --warmup, --timeout, --find-max, --json, ...: what every
    /// load engine shares.
    #[command(flatten)]
    pub load: LoadArgs,
    /// A command to run instead of the tests (after the options, or
    /// after `--`).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    pub command: Vec<String>,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    pub help: Option<bool>,
}

/// A `-u` URI's parts: `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`.
#[derive(Debug, PartialEq, Eq)]
struct Uri {
    host: String,
    port: u16,
    user: Option<String>,
    password: Option<String>,
    db: Option<u32>,
}

/// Parses a `-u` URI as redis-benchmark does (`USER` without a password
/// is ignored; `%XX` escapes are decoded); `rediss://` is refused, tare
/// does not speak TLS.
fn parse_uri(uri: &str) -> anyhow::Result<Uri> {
    let bad = || anyhow::anyhow!("-u {uri:?}: expected redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]");
    if uri.starts_with("rediss://") {
        anyhow::bail!("-u {uri:?}: TLS (rediss://) is not supported");
    }
    let rest = uri.strip_prefix("redis://").ok_or_else(bad)?;
    let (auth, rest) = match rest.rsplit_once('@') {
        Some((a, r)) => (Some(a), r),
        None => (None, rest),
    };
    let (hostport, db) = match rest.split_once('/') {
        Some((h, "")) => (h, None),
        Some((h, d)) => (h, Some(d.parse::<u32>().map_err(|_| bad())?)),
        None => (rest, None),
    };
    // An IPv6 address is in brackets: `[::1]:6379`.
    let (host, port) = match hostport.strip_prefix('[') {
        Some(v6) => {
            let (h, after) = v6.split_once(']').ok_or_else(bad)?;
            (h, after.strip_prefix(':'))
        }
        None => match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        },
    };
    let port = match port {
        Some(p) => p.parse::<u16>().map_err(|_| bad())?,
        None => 6379,
    };
    let (user, password) = match auth.map(|a| a.split_once(':')) {
        Some(Some((u, p))) => (
            Some(percent_decode(u)).filter(|u| !u.is_empty()),
            Some(percent_decode(p)),
        ),
        _ => (None, None),
    };
    Ok(Uri {
        host: if host.is_empty() {
            "127.0.0.1".into()
        } else {
            percent_decode(host)
        },
        port,
        user,
        password,
        db,
    })
}

/// `%XX` escapes decoded (a malformed one is kept as it is).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (b[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `-u` folded into the other options it overrides.
fn apply_uri(args: &mut RedisArgs) -> anyhow::Result<()> {
    let Some(uri) = args.uri.as_deref() else {
        return Ok(());
    };
    let u = parse_uri(uri)?;
    args.host = u.host;
    args.port = u.port;
    if u.password.is_some() {
        args.password = u.password;
        args.user = u.user;
    }
    if let Some(db) = u.db {
        args.dbnum = db;
    }
    Ok(())
}

/// The server's `save` and `appendonly`, for the text's `host
/// configuration` lines (none when it refuses `CONFIG`).
fn host_config(cfg: &RedisConfig) -> Option<report::HostConfig> {
    Session::connect(
        &cfg.endpoint,
        cfg.load.timeout,
        cfg.user.as_deref(),
        cfg.password.as_deref(),
        cfg.dbnum,
    )
    .ok()?
    .host_config()
}

pub(crate) fn run(mut args: RedisArgs) -> anyhow::Result<ExitCode> {
    apply_uri(&mut args)?;
    let cfg = config(&args)?;
    if args.load.find_max {
        if cfg.workloads.len() != 1 {
            anyhow::bail!("--find-max searches one test at a time: give -t with one test");
        }
        return load_args::find_max::<Redis>(&args.load, cfg, "-T DURATION");
    }
    let stop = super::emit::ctrl_c_flag()?;
    if args.idle {
        println!(
            "Creating {} idle connections and waiting forever (Ctrl+C when done)",
            cfg.load.connections
        );
        tare_redis::session::idle(&cfg, &stop)?;
        return Ok(ExitCode::SUCCESS);
    }
    let results = tests(&args, &cfg, &stop)?;
    if let Some(json) = args.load.json.as_deref() {
        let only: Vec<&LoadResult> = results.iter().map(|(_, r)| r).collect();
        let value = match only.as_slice() {
            [one] => serde_json::to_value(one)?,
            many => serde_json::to_value(many)?,
        };
        super::emit::result(Some(json), &value, String::new)?;
    }
    Ok(exit_code(&results))
}

/// The run's settings from redis-benchmark's flags and the shared load
/// flags: the tests (`-t`, or a custom command), clients and requests.
fn config(args: &RedisArgs) -> anyhow::Result<RedisConfig> {
    let endpoint = load_args::endpoint(&args.host, args.port, args.socket.as_deref())?;
    let mut cfg = RedisConfig::new(endpoint);
    cfg.workloads = if !args.command.is_empty() {
        if args.tests.is_some() {
            anyhow::bail!("-t picks tests; a command is run instead of them: give one");
        }
        vec![Workload::Custom(args.command.clone())]
    } else {
        match &args.tests {
            Some(list) => parse_tests(list).map_err(anyhow::Error::msg)?,
            None => suite(&tare_redis::Test::ALL),
        }
        .into_iter()
        .map(Workload::Test)
        .collect()
    };
    cfg.load.connections = args.clients;
    cfg.load.threads = match args.clients {
        0 => args.threads,
        c => args.threads.min(c),
    };
    cfg.load.duration = args.duration;
    cfg.requests = args
        .requests
        .unwrap_or(tare_redis::config::DEFAULT_REQUESTS);
    args.load.apply(&mut cfg.load)?;
    cfg.data_size = args.data_size;
    cfg.keyspace = args.keyspace;
    cfg.pipeline = args.pipeline;
    cfg.password = args.password.clone();
    cfg.user = args.user.clone();
    cfg.dbnum = args.dbnum;
    cfg.seed = args.seed;
    cfg.allow_remote = args.load.allow_remote;
    cfg.live = !args.load.json_on_stdout() && !args.quiet && !args.csv;
    Ok(cfg)
}

/// Runs each test in turn (until Ctrl-C), printing each one's text as
/// it ends: redis-benchmark's block, `-q` line or `--csv` row.
fn tests(
    args: &RedisArgs,
    cfg: &RedisConfig,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<Vec<(String, LoadResult)>> {
    let mut results: Vec<(String, LoadResult)> = Vec::new();
    let text_out = !args.load.json_on_stdout();
    if text_out && args.csv {
        print!("{}", report::csv_header());
    }
    let host = (text_out && !args.csv && !args.quiet)
        .then(|| host_config(cfg))
        .flatten();
    for w in cfg.workloads.clone() {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        let mut one = cfg.clone();
        one.workloads = vec![w.clone()];
        let r = tare_redis::run_with_stop(&one, stop.clone())?;
        let title = w.title();
        if text_out {
            let text = if args.csv {
                report::csv_row(&r, &title)
            } else if args.quiet {
                report::quiet_line(&r, &title)
            } else {
                report::text(&r, &title, host.as_ref())
            };
            print!("{text}");
        }
        results.push((title, r));
    }
    Ok(results)
}

/// 2 when a test measured nothing or lost commands, the first such said
/// on stderr; else success.
fn exit_code(results: &[(String, LoadResult)]) -> ExitCode {
    // A test in which no command succeeded measured nothing: its error
    // replies by kind, and a non-zero exit (docs/redis.md, "Errors").
    if let Some((title, r)) = results.iter().find(|(_, r)| r.requests == 0) {
        let kinds = r
            .redis
            .as_ref()
            .map(|d| {
                let k: Vec<String> = (d.errors_by_kind.iter())
                    .map(|(k, n)| format!("{k} {n}"))
                    .collect();
                k.join(", ")
            })
            .unwrap_or_default();
        let e = &r.errors;
        eprintln!(
            "tare: error: {title}: no command succeeded ({} error replies{}{}, {} connects failed)",
            e.status,
            if kinds.is_empty() { "" } else { ": " },
            kinds,
            e.connect
        );
        return ExitCode::from(2);
    }
    let lost: u64 = results
        .iter()
        .map(|(_, r)| r.errors.total() - r.errors.status)
        .sum();
    if lost > 0 {
        let (title, r) = results
            .iter()
            .find(|(_, r)| r.errors.total() > r.errors.status)
            .expect("a result with lost commands");
        let e = &r.errors;
        eprintln!(
            "tare: error: {title}: {} commands lost with their connections, {} timed out, {} connects failed; the results above are incomplete",
            e.read + e.write,
            e.timeout,
            e.connect
        );
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_as_redis_benchmark_reads_them() {
        let u = parse_uri("redis://default:p%40ss@127.0.0.1:6390/3").unwrap();
        assert_eq!(
            u,
            Uri {
                host: "127.0.0.1".into(),
                port: 6390,
                user: Some("default".into()),
                password: Some("p@ss".into()),
                db: Some(3),
            }
        );
        let u = parse_uri("redis://:secret@localhost").unwrap();
        assert_eq!(
            (u.port, u.user, u.password.as_deref()),
            (6379, None, Some("secret"))
        );
        let u = parse_uri("redis://[::1]:7000/").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.db), ("::1", 7000, None));
        assert_eq!(parse_uri("redis://[::1]").unwrap().port, 6379);
        for bad in ["http://x", "redis://h:port", "redis://h/x", "rediss://h"] {
            assert!(parse_uri(bad).is_err(), "{bad}");
        }
    }
}
