//! `tare http URL`: HTTP/1.1 load with wrk's flags, wrk's text, and the JSON contract.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use tare_engine::units::parse_duration;
use tare_http::request::parse_header;
use tare_http::{Http, HttpConfig, Target};

use super::load_args::{self, LoadArgs};

#[derive(Args, Debug)]
pub(crate) struct HttpArgs {
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
    /// How fast connections are opened: N per second after the first 1024
    /// (20k, 5000), or `all` at once. The measured period starts once the
    /// last one is due.
    #[arg(long, value_name = "N|all", default_value = "10000")]
    pub connect_rate: tare_engine::connecting::ConnectPace,
    /// --warmup, --timeout, --rate, --find-max, --json, ...: what every
    /// load engine shares.
    #[command(flatten)]
    pub load: LoadArgs,
}

pub(crate) fn run(args: HttpArgs) -> anyhow::Result<ExitCode> {
    let target = Target::new(&args.url, args.unix.clone(), args.load.allow_remote)?;
    let mut config = HttpConfig::new(target);
    config.method = args.method.clone();
    config.headers = args.headers.clone();
    config.body = args.body.clone().unwrap_or_default().into_bytes();
    config.load.threads = args.threads;
    config.load.connections = args.connections;
    config.load.duration = match (args.duration, args.requests) {
        (None, None) => Some(Duration::from_secs(10)),
        (d, _) => d,
    };
    config.requests = args.requests;
    config.keepalive = !args.no_keepalive;
    config.connect = args.connect_rate;
    args.load.apply(&mut config.load)?;
    config.progress = !args.load.json_on_stdout();

    if args.load.find_max {
        // Each probe runs for -d; a request count would end probes early.
        config.requests = None;
        return load_args::find_max::<Http>(&args.load, config, "-d, not -n");
    }

    let result = tare_http::run_with_stop(&config, super::emit::ctrl_c_flag()?)?;
    super::emit::result(args.load.json.as_deref(), &result, || {
        tare_http::wrk_text::render(&result, config.load.duration, args.latency)
    })?;
    if result.requests == 0 {
        let target = config.target.endpoint.to_string();
        eprintln!(
            "tare: {}",
            tare_http::verdict::nothing_completed(&result, &target)
        );
        return Ok(ExitCode::from(1));
    }
    // Every response an error status measured an error page, not the
    // service (docs/http.md, "Errors").
    if result.errors.status == result.requests {
        let codes: Vec<String> = (result.status_codes.iter())
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        eprintln!(
            "tare: every response had an error status ({})",
            codes.join(", ")
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
