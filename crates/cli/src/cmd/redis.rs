//! `tare redis`: Redis load with redis-benchmark's flags and text (one
//! block per `-t` test, `-q`, `--csv`), plus what it lacks: a duration
//! (`-T`), HDR percentiles, an open loop (`--rate`), `--find-max --slo`
//! and the JSON contract. A custom command follows `--`:
//! `tare redis -r 1000 -- SET key:__rand_int__ val`.
//!
//! redis-benchmark's `-h` is the host, so clap's `-h` help is off for this
//! subcommand; `--help` remains.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{ArgAction, Args};
use tare_engine::units::parse_duration;
use tare_engine::Endpoint;
use tare_record::LoadResult;
use tare_redis::command::parse_tests;
use tare_redis::report;
use tare_redis::{Redis, RedisConfig, Workload};

use super::load_args::{self, LoadArgs};

#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
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
    /// A command to run instead of the tests, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
    /// Print help.
    #[arg(long, action = ArgAction::Help)]
    pub help: Option<bool>,
}

/// Where the server is: `-s`, or `-h`/`-p` (a name resolved once).
fn endpoint(args: &RedisArgs) -> anyhow::Result<Endpoint> {
    if let Some(s) = &args.socket {
        return Ok(Endpoint::Unix(s.clone()));
    }
    if let Ok(ip) = args.host.parse::<IpAddr>() {
        return Ok(Endpoint::Tcp(SocketAddr::new(ip, args.port)));
    }
    let addr = (args.host.as_str(), args.port)
        .to_socket_addrs()
        .with_context(|| format!("could not resolve host {:?}", args.host))?
        .next()
        .with_context(|| format!("host {:?} has no address", args.host))?;
    Ok(Endpoint::Tcp(addr))
}

pub(crate) fn run(args: RedisArgs) -> anyhow::Result<ExitCode> {
    let mut cfg = RedisConfig::new(endpoint(&args)?);
    cfg.workloads = if !args.command.is_empty() {
        if args.tests.is_some() {
            anyhow::bail!("-t picks tests; a command after -- is run instead of them: give one");
        }
        vec![Workload::Custom(args.command.clone())]
    } else {
        match &args.tests {
            Some(list) => parse_tests(list).map_err(anyhow::Error::msg)?,
            None => tare_redis::Test::ALL.to_vec(),
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
    if args.load.find_max {
        if cfg.workloads.len() != 1 {
            anyhow::bail!("--find-max searches one test at a time: give -t with one test");
        }
        return load_args::find_max::<Redis>(&args.load, cfg, "-T DURATION");
    }
    let stop = super::emit::ctrl_c_flag()?;
    let mut results: Vec<(String, LoadResult)> = Vec::new();
    let text_out = !args.load.json_on_stdout();
    if text_out && args.csv {
        print!("{}", report::csv_header());
    }
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
                report::text(&r, &title)
            };
            print!("{text}");
        }
        results.push((title, r));
    }
    if let Some(json) = args.load.json.as_deref() {
        let only: Vec<&LoadResult> = results.iter().map(|(_, r)| r).collect();
        let value = match only.as_slice() {
            [one] => serde_json::to_value(one)?,
            many => serde_json::to_value(many)?,
        };
        super::emit::result(Some(json), &value, String::new)?;
    }
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
        return Ok(ExitCode::from(2));
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
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}
