//! `tare net`: netperf-style round trips (rr, crr, udp-rr) and bulk
//! streams, and `tare net serve`, their responder (docs/net.md).

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use tare_engine::units::{parse_duration, parse_size};
use tare_engine::Endpoint;
use tare_net::responder::DEFAULT_PORT;
use tare_net::{Direction, Net, NetConfig, Responder, ResponderConfig, Test};

use super::load_args::{self, LoadArgs};

#[derive(Args, Debug)]
pub(crate) struct NetArgs {
    #[command(subcommand)]
    pub(crate) command: NetCommand,
}

#[derive(Subcommand, Debug)]
pub(crate) enum NetCommand {
    /// The responder: TCP and UDP request/response, connect/request/response/close, stream sink and source.
    Serve(NetServeArgs),
    /// TCP request/response on kept connections (netperf TCP_RR).
    Rr(NetTestArgs),
    /// TCP connect, one request/response, close (netperf TCP_CRR).
    Crr(NetTestArgs),
    /// UDP request/response, a lost datagram counted after --timeout (netperf UDP_RR).
    #[command(name = "udp-rr")]
    UdpRr(NetTestArgs),
    /// Bulk transfer, Gbit/s each way and CPU per gigabyte (nuttcp, netperf TCP_STREAM).
    Stream(NetTestArgs),
}

#[derive(Args, Debug)]
pub(crate) struct NetServeArgs {
    /// TCP address to listen on; UDP listens on the same address and port.
    #[arg(long, default_value_t = SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT)))]
    pub(crate) listen: SocketAddr,
    /// Listen on this Unix socket instead (rr, crr and stream only).
    #[arg(long, value_name = "PATH")]
    pub(crate) unix: Option<PathBuf>,
    /// Acceptor threads (each also receives UDP); kept connections get a thread each.
    #[arg(long, default_value_t = 2)]
    pub(crate) threads: usize,
    /// Test hook: leave every Nth UDP request unanswered (a known loss).
    #[arg(long, value_name = "N")]
    pub(crate) drop_every: Option<u64>,
}

#[derive(Args, Debug)]
pub(crate) struct NetTestArgs {
    /// The responder's host (netperf -H).
    #[arg(short = 'H', long, default_value = "127.0.0.1")]
    pub(crate) host: String,
    /// The responder's port (netperf -p; tare net serve's default).
    #[arg(short = 'p', long, default_value_t = DEFAULT_PORT)]
    pub(crate) port: u16,
    /// Connect to this Unix socket instead of HOST:PORT.
    #[arg(long, value_name = "PATH")]
    pub(crate) unix: Option<PathBuf>,
    /// Request and response sizes, REQ,RESP (netperf -r; one number sets
    /// both). Default 100,200, the IBM study's.
    #[arg(short = 'r', value_name = "REQ,RESP", value_parser = parse_sizes)]
    pub(crate) sizes: Option<(usize, usize)>,
    /// Stream: bytes per write and read (netperf -m; default 128k).
    #[arg(short = 'm', value_name = "SIZE", value_parser = parse_size)]
    pub(crate) message: Option<usize>,
    /// Test length (netperf -l; a bare number is seconds). Default 10s.
    #[arg(short = 'l', long = "duration", value_name = "SECONDS", value_parser = parse_duration)]
    pub(crate) duration: Option<Duration>,
    /// Connections, each with one transaction in flight.
    #[arg(short = 'c', long, default_value_t = 1)]
    pub(crate) connections: usize,
    /// rr, crr, udp-rr: worker threads sharing the connections, each one
    /// event loop (default: one per connection, up to 512). A stream has a
    /// thread per connection.
    #[arg(short = 't', long, value_name = "N")]
    pub(crate) threads: Option<usize>,
    /// Stream: send (client to responder), receive, or both at once.
    #[arg(long, default_value = "send", value_name = "send|receive|both")]
    pub(crate) direction: Direction,
    /// --warmup, --timeout, --rate, --find-max, --json, ...: what every
    /// load engine shares.
    #[command(flatten)]
    pub(crate) load: LoadArgs,
}

/// Threads `tare net rr|crr|udp-rr` starts without `-t`: one per
/// connection up to this many, more connections sharing them.
const DEFAULT_MAX_THREADS: usize = 512;

fn parse_sizes(s: &str) -> Result<(usize, usize), String> {
    match s.split_once(',') {
        Some((a, b)) => Ok((parse_size(a)?, parse_size(b)?)),
        None => {
            let n = parse_size(s)?;
            Ok((n, n))
        }
    }
}

pub(crate) fn run(args: NetArgs) -> anyhow::Result<ExitCode> {
    let (test, a) = match args.command {
        NetCommand::Serve(s) => return serve(s),
        NetCommand::Rr(a) => (Test::Rr, a),
        NetCommand::Crr(a) => (Test::Crr, a),
        NetCommand::UdpRr(a) => (Test::UdpRr, a),
        NetCommand::Stream(a) => (Test::Stream, a),
    };
    let endpoint = match &a.unix {
        Some(p) => Endpoint::Unix(p.clone()),
        None => Endpoint::Tcp(
            (a.host.as_str(), a.port)
                .to_socket_addrs()
                .with_context(|| format!("resolving {}", a.host))?
                .next()
                .with_context(|| format!("{} has no address", a.host))?,
        ),
    };
    if !a.load.allow_remote && !endpoint.is_local() {
        anyhow::bail!(
            "{endpoint} is not loopback: tare net loads only loopback or a Unix socket unless --allow-remote is given (only responders you own)"
        );
    }
    let mut config = NetConfig::new(endpoint, test);
    if let Some((req, resp)) = a.sizes {
        config.request = req;
        config.response = resp;
    }
    if let Some(m) = a.message {
        if test != Test::Stream {
            anyhow::bail!("-m sets a stream's write size; rr, crr and udp-rr take -r REQ,RESP");
        }
        config.request = m;
        config.response = m;
    }
    if a.direction != Direction::Send && test != Test::Stream {
        anyhow::bail!("--direction is for stream only");
    }
    config.direction = a.direction;
    config.load.connections = a.connections;
    config.load.threads = match (test, a.threads) {
        (Test::Stream, Some(_)) => {
            anyhow::bail!(
                "-t is for rr, crr and udp-rr: a stream has one thread per connection (-c)"
            )
        }
        (Test::Stream, None) => 1,
        (_, Some(t)) => t,
        // A thread per connection, as before the event loop (and netperf's
        // process per test): measured as cheap per transaction as sharing
        // threads, and on a busy machine each connection keeps its own
        // share of the scheduler (docs/net.md, "How the client waits").
        (_, None) => a.connections.clamp(1, DEFAULT_MAX_THREADS),
    };
    if let Some(d) = a.duration {
        config.load.duration = Some(d);
    }
    a.load.apply(&mut config.load)?;
    config.progress = !a.load.json_on_stdout();
    config.validate()?;

    if a.load.find_max {
        return load_args::find_max::<Net>(&a.load, config, "-l");
    }
    let result = tare_net::run_with_stop(&config, super::emit::ctrl_c_flag()?)?;
    super::emit::result(a.load.json.as_deref(), &result, || {
        tare_net::text::text(&result)
    })?;
    if result.requests == 0 {
        let e = &result.errors;
        let why = if e.connect > 0 {
            format!(
                "cannot reach the responder at {} ({} connect errors): is `tare net serve` running there?",
                result.target, e.connect
            )
        } else {
            format!(
                "no {} completed against {} ({} errors)",
                result.unit().noun(),
                result.target,
                e.total()
            )
        };
        eprintln!("tare: {why}");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs the responder until SIGINT or SIGTERM, then prints what it served.
fn serve(a: NetServeArgs) -> anyhow::Result<ExitCode> {
    let responder = Responder::start(ResponderConfig {
        listen: a.listen,
        unix: a.unix,
        threads: a.threads,
        drop_every: a.drop_every,
    })
    .context("tare net serve")?;
    match (responder.local_addr(), responder.unix_path()) {
        (_, Some(p)) => eprintln!("tare net serve: listening on unix:{}", p.display()),
        (Some(addr), _) => eprintln!("tare net serve: listening on {addr} (tcp and udp)"),
        _ => {}
    }
    let stop = super::emit::ctrl_c_flag()?;
    signal_hook::flag::register(signal_hook::consts::SIGTERM, stop.clone())
        .context("installing the SIGTERM handler")?;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let s = responder.served();
    eprintln!(
        "tare net serve: served {} tcp transactions on {} connections, {} udp answered ({} dropped), {} bytes sunk, {} bytes sourced, {} rejected",
        s.transactions, s.connections, s.udp_answered, s.udp_dropped, s.bytes_sunk, s.bytes_sourced, s.rejected
    );
    Ok(ExitCode::SUCCESS)
}
