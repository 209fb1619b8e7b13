//! `tare http URL`: HTTP/1.1 load with wrk's flags, wrk's text, and the JSON contract.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use tare_engine::units::parse_duration;
use tare_http::request::parse_header;
use tare_http::{HttpConfig, Target};

#[derive(Args, Debug)]
pub struct HttpArgs {
    /// Target URL: http://HOST[:PORT]/PATH (with --unix, only Host and path are used).
    pub url: String,
    /// Threads, each with its own event loop.
    #[arg(short = 't', long, default_value_t = 2)]
    pub threads: usize,
    /// Connections kept open, shared among the threads.
    #[arg(short = 'c', long, default_value_t = 10)]
    pub connections: usize,
    /// Test duration (10s, 500ms, 2m; a bare number is seconds). Default 10s unless -n is given.
    #[arg(short = 'd', long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Total requests to send instead of (or as well as) a duration.
    #[arg(short = 'n', long)]
    pub requests: Option<u64>,
    /// Load applied before measuring; its requests are not counted.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub warmup: Duration,
    /// Print the latency distribution (with p99.9 and p99.99).
    #[arg(long)]
    pub latency: bool,
    /// A new connection per request (as ab and http_load), reporting connect and first-byte times.
    #[arg(long)]
    pub no_keepalive: bool,
    /// Connect to this Unix socket instead of the URL's host.
    #[arg(long, value_name = "PATH")]
    pub unix: Option<PathBuf>,
    /// Add a request header (repeatable).
    #[arg(short = 'H', long = "header", value_name = "K: V", value_parser = parse_header)]
    pub headers: Vec<(String, String)>,
    /// Request method.
    #[arg(short = 'm', long, default_value = "GET")]
    pub method: String,
    /// Request body.
    #[arg(long)]
    pub body: Option<String>,
    /// A request without a complete response after this long counts as a timeout.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Write the JSON result to PATH ('-': stdout, replacing the text).
    #[arg(long, value_name = "PATH|-")]
    pub json: Option<String>,
    /// Allow a target that is not loopback or a Unix socket (only addresses you own).
    #[arg(long)]
    pub allow_remote: bool,
    /// Run the generator's threads inside this network namespace (a name from `ip netns`, or a path).
    #[arg(long, value_name = "NAME|PATH")]
    pub netns: Option<String>,
    /// Open loop: send this many requests per second in total, on schedule,
    /// measuring latency from each request's intended send time.
    #[arg(long, value_name = "REQ/S")]
    pub rate: Option<f64>,
    /// Open loop arrivals: constant spacing or a Poisson process.
    #[arg(long, default_value = "constant", requires = "rate")]
    pub arrivals: tare_engine::schedule::Arrivals,
    /// Raise connections (closed loop) or the rate (open loop) linearly over
    /// this long before measuring; shown in the timeline, not in the summary.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub ramp: Duration,
    /// Closed loop over TCP: pause an idle worker briefly before it waits, so
    /// one wake-up serves several responses (less generator CPU, a little
    /// think time): off, auto (1/32 of the latency, only when idle) or a
    /// fixed pause such as 100us. Latency stays exact (kernel receive
    /// timestamps). See docs/http.md.
    #[arg(
        long,
        default_value = "off",
        value_name = "off|auto|PAUSE",
        conflicts_with = "rate"
    )]
    pub coalesce: tare_engine::Coalesce,
    /// How workers wait for the network: io_uring (one multishot receive
    /// per connection; needs Linux 6.1 and io_uring allowed), epoll, or
    /// auto: io_uring where it can, epoll otherwise and with --coalesce.
    #[arg(long, default_value = "auto", value_name = "auto|epoll|io_uring")]
    pub io: tare_engine::IoMode,
    /// Search for the highest rate that meets --slo (each probe runs for -d).
    #[arg(long, requires = "slo")]
    pub find_max: bool,
    /// Objectives for --find-max: 'p99<10ms', 'p50<1ms,p999<50ms,errors<1%'.
    #[arg(long)]
    pub slo: Option<tare_http::find_max::Slo>,
    /// Most open-loop probes --find-max may run.
    #[arg(long, default_value_t = 8)]
    pub max_runs: usize,
}

pub fn run(args: HttpArgs) -> anyhow::Result<ExitCode> {
    let target = Target::new(&args.url, args.unix.clone(), args.allow_remote)?;
    let mut config = HttpConfig::new(target);
    config.method = args.method.clone();
    config.headers = args.headers.clone();
    config.body = args.body.clone().unwrap_or_default().into_bytes();
    config.threads = args.threads;
    config.connections = args.connections;
    config.duration = match (args.duration, args.requests) {
        (None, None) => Some(Duration::from_secs(10)),
        (d, _) => d,
    };
    config.requests = args.requests;
    config.warmup = args.warmup;
    config.rate = args.rate;
    config.arrivals = args.arrivals;
    config.ramp = args.ramp;
    config.coalesce = args.coalesce;
    config.io = args.io;
    config.keepalive = !args.no_keepalive;
    config.timeout = args.timeout;
    config.netns = super::emit::netns_path(args.netns.as_deref());
    let json_stdout = args.json.as_deref() == Some("-");
    config.progress = !json_stdout;

    if args.find_max {
        return find_max(&args, config);
    }

    let result = tare_http::run_with_stop(&config, super::emit::ctrl_c_flag()?)?;
    super::emit::result(args.json.as_deref(), &result, || {
        tare_http::wrk_text::render(&result, config.duration, args.latency)
    })?;
    if result.requests == 0 {
        let e = &result.errors;
        eprintln!(
            "tare: no request completed against {} ({} connect, {} read, {} write, {} timeout errors)",
            config.target.endpoint, e.connect, e.read, e.write, e.timeout
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn find_max(args: &HttpArgs, mut config: HttpConfig) -> anyhow::Result<ExitCode> {
    if args.rate.is_some() {
        anyhow::bail!("--find-max searches the rate itself; drop --rate");
    }
    if config.duration.is_none() {
        anyhow::bail!("--find-max needs a duration per probe (-d), not -n");
    }
    config.requests = None;
    config.progress = false;
    let slo = args.slo.clone().map(|s| s.0).unwrap_or_default();
    let found = tare_http::find_max::find_max(&config, &slo, args.max_runs, 0.05)?;
    super::emit::result(args.json.as_deref(), &found, || {
        tare_http::find_max::render(&found)
    })?;
    Ok(if found.best_rate.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
