//! `tare serve`: the built-in HTTP/1.1 server, until interrupted.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use tare_engine::units::{parse_duration, parse_size};
use tare_serve::{ServeConfig, Server};

#[derive(Args, Debug)]
pub(crate) struct ServeArgs {
    /// TCP address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub(crate) listen: SocketAddr,
    /// Listen on this Unix socket instead of TCP.
    #[arg(long, value_name = "PATH")]
    pub(crate) unix: Option<PathBuf>,
    /// Worker threads.
    #[arg(long, default_value_t = 1)]
    pub(crate) threads: usize,
    /// Response body size (e.g. 13, 4k, 1m).
    #[arg(long, default_value = "13", value_parser = parse_size)]
    pub(crate) body_size: usize,
    /// HTTP status of every response.
    #[arg(long, default_value_t = 200)]
    pub(crate) status: u16,
    /// Send bodies with chunked transfer encoding.
    #[arg(long)]
    pub(crate) chunked: bool,
    /// Hold each response this long (e.g. 2ms): a known latency to check tare against.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub(crate) delay: Duration,
    /// Pause all responses for --stall once every this long (a known stall).
    #[arg(long, value_parser = parse_duration, requires = "stall")]
    pub(crate) stall_every: Option<Duration>,
    /// Length of each pause (with --stall-every).
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub(crate) stall: Duration,
}

pub(crate) fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    check(&args)?;
    let config = ServeConfig {
        listen: args.listen,
        unix: args.unix,
        threads: args.threads,
        body_size: args.body_size,
        status: args.status,
        chunked: args.chunked,
        delay: args.delay,
        stall_every: args.stall_every,
        stall: args.stall,
    };
    let server = Server::start(config).context("tare serve")?;
    match (server.local_addr(), server.unix_path()) {
        (_, Some(p)) => eprintln!("tare serve: listening on unix:{}", p.display()),
        (Some(a), _) => eprintln!("tare serve: listening on http://{a}/"),
        _ => {}
    }
    // SIGTERM and SIGINT end it cleanly, exit 0: as a container's first
    // process it has no default action for them (`docker stop` would wait
    // for its SIGKILL), and a server told to exit says so by its code.
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, server.stopper())
            .context("installing the SIGTERM handler")?;
    }
    server.wait();
    Ok(ExitCode::SUCCESS)
}

/// The bounds every setting a person types has (docs/experiments.md, "Limits").
fn check(args: &ServeArgs) -> anyhow::Result<()> {
    use tare_engine::bounds::{self, duration_at_most};
    if !(1..=bounds::MAX_THREADS).contains(&args.threads) {
        anyhow::bail!("--threads must be between 1 and {}", bounds::MAX_THREADS);
    }
    if args.body_size > bounds::MAX_BODY {
        anyhow::bail!(
            "--body-size must be at most {}",
            bounds::show_bytes(bounds::MAX_BODY as u64)
        );
    }
    for (flag, d) in [
        ("--delay", Some(args.delay)),
        ("--stall", Some(args.stall)),
        ("--stall-every", args.stall_every),
    ] {
        if let Some(d) = d {
            duration_at_most(d, bounds::MAX_PAUSE).map_err(|m| anyhow::anyhow!("{flag} {m}"))?;
        }
    }
    Ok(())
}
