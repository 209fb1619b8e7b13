//! `tare http URL`: HTTP/1.1 load with wrk's flags, wrk's text, and the JSON contract.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use tare_engine::units::parse_duration;
use tare_http::mix::{self, Mix};
use tare_http::request::parse_header;
use tare_http::{Http, HttpConfig, Target};

use super::load_args::{self, LoadArgs};

#[derive(Args, Debug)]
pub(crate) struct HttpArgs {
    /// Target URL: http://HOST[:PORT]/PATH (with --unix, only Host and path are used).
    /// With --urls it may be left out: the file's server is the target.
    #[arg(required_unless_present = "urls")]
    pub(crate) url: Option<String>,
    /// A URL file, as http_load takes it: one http://HOST[:PORT]/PATH or
    /// /PATH a line, each request a line drawn at random (seeded). Its
    /// URLs name one server, the target's; only their paths are sent.
    #[arg(long, value_name = "FILE", conflicts_with = "requests_file")]
    pub(crate) urls: Option<PathBuf>,
    /// A requests file (TOML [[request]] tables: name, method, path,
    /// headers, body, weight): each request drawn by weight; counted by name.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["method", "body"])]
    pub(crate) requests_file: Option<PathBuf>,
    /// The seed of a mix's draws (--urls, --requests-file): the same seed,
    /// the same sequence of requests on each thread.
    #[arg(long, value_name = "N")]
    pub(crate) seed: Option<u64>,
    /// Threads, each with its own event loop.
    #[arg(short = 't', long, default_value_t = 2)]
    pub(crate) threads: usize,
    /// Connections kept open, shared among the threads.
    #[arg(short = 'c', long, default_value_t = 10)]
    pub(crate) connections: usize,
    /// Test duration (10s, 500ms, 2m; a bare number is seconds). Default 10s unless -n is given.
    #[arg(short = 'd', long, value_parser = parse_duration)]
    pub(crate) duration: Option<Duration>,
    /// Total requests to send instead of (or as well as) a duration.
    #[arg(short = 'n', long)]
    pub(crate) requests: Option<u64>,
    /// Print the latency distribution (with p99.9 and p99.99).
    #[arg(long)]
    pub(crate) latency: bool,
    /// A new connection per request (as ab and http_load), reporting connect and first-byte times.
    #[arg(long)]
    pub(crate) no_keepalive: bool,
    /// Connect to this Unix socket instead of the URL's host.
    #[arg(long, value_name = "PATH")]
    pub(crate) unix: Option<PathBuf>,
    /// Add a request header (repeatable).
    #[arg(short = 'H', long = "header", value_name = "K: V", value_parser = parse_header)]
    pub(crate) headers: Vec<(String, String)>,
    /// Request method.
    #[arg(short = 'm', long, default_value = "GET")]
    pub(crate) method: String,
    /// Request body.
    #[arg(long)]
    pub(crate) body: Option<String>,
    /// How fast connections are opened: N per second after the first 1024
    /// (20k, 5000), or `all` at once. The measured period starts once the
    /// last one is due.
    #[arg(long, value_name = "N|all", default_value = "10000")]
    pub(crate) connect_rate: tare_engine::connecting::ConnectPace,
    /// --warmup, --timeout, --rate, --find-max, --json, ...: what every
    /// load engine shares.
    #[command(flatten)]
    pub(crate) load: LoadArgs,
}

pub(crate) fn run(args: HttpArgs) -> anyhow::Result<ExitCode> {
    let (target, mix) = target_and_mix(&args)?;
    let mut config = HttpConfig::new(target);
    config.method = args.method.clone();
    config.headers = args.headers.clone();
    config.body = args.body.clone().unwrap_or_default().into_bytes();
    config.mix = mix;
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
        let mut text = tare_http::wrk_text::render(&result, config.load.duration, args.latency);
        text.push_str(&tare_http::wrk_text::render_names(&result));
        text
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

/// The target, and the mix `--urls` or `--requests-file` makes (docs/http.md,
/// "Request mixes"). A URL file's lines name one server: the URL given, or
/// with none, the file's own.
fn target_and_mix(args: &HttpArgs) -> anyhow::Result<(Target, Option<Mix>)> {
    let url_file = match &args.urls {
        None => None,
        Some(p) => {
            let text = mix::read(p).map_err(anyhow::Error::msg)?;
            Some(mix::parse_urls(&text).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?)
        }
    };
    let url = match (&args.url, &url_file) {
        (Some(u), _) => u.clone(),
        (None, Some(f)) => f.first_url.clone().ok_or_else(|| {
            anyhow::anyhow!(
                "{}: only paths in it: give the target URL too",
                args.urls.as_deref().unwrap_or(Path::new("")).display()
            )
        })?,
        (None, None) => anyhow::bail!("give a URL (or --urls FILE)"),
    };
    let target = Target::new(&url, args.unix.clone(), args.load.allow_remote)?;
    let requests = if let (Some(f), Some(p)) = (&url_file, &args.urls) {
        f.check_server(&target.authority)
            .map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
        let body = args.body.clone().unwrap_or_default().into_bytes();
        Some(f.mix(&args.method, &args.headers, &body))
    } else if let Some(p) = &args.requests_file {
        let text = mix::read(p).map_err(anyhow::Error::msg)?;
        let mut requests =
            mix::parse_requests(&text).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
        // -H adds to every request; a request's own header of that name wins.
        for r in &mut requests {
            for (k, v) in &args.headers {
                if !r.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(k)) {
                    r.headers.push((k.clone(), v.clone()));
                }
            }
        }
        Some(requests)
    } else {
        None
    };
    Ok((
        target,
        requests.map(|r| Mix {
            requests: r,
            seed: args.seed.unwrap_or(mix::DEFAULT_SEED),
        }),
    ))
}
