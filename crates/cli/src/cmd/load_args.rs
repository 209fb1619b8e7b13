//! The flags every load engine shares, flattened into `tare http` and
//! `tare pg` (each keeps its reference tool's spelling of threads,
//! connections and duration: wrk's `-t -c -d`, pgbench's `-j -c -T`), built
//! into the typed [`Load`] here and nowhere else, and `--find-max`, run
//! here for every engine; and where a server given by host, port or
//! socket is.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use tare_engine::find_max::{self, Budget, Slo};
use tare_engine::schedule::Arrivals;
use tare_engine::units::parse_duration;
use tare_engine::{Coalesce, Endpoint, Engine, IoMode, Load};

#[derive(Args, Debug)]
pub(crate) struct LoadArgs {
    /// Load applied after any --ramp and before measuring; what completes
    /// during it is not counted.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub warmup: Option<Duration>,
    /// http: a request without a complete response after this long counts
    /// as a timeout (default 2s). pg: the bound on establishing a
    /// connection (default 10s; pg has no per-transaction timeout).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Open loop: start this many requests (transactions) per second in
    /// total, on a schedule, latency counted from each intended start
    /// (wrk2's and pgbench's -R).
    #[arg(short = 'R', long, value_name = "PER_SEC")]
    pub rate: Option<f64>,
    /// With --rate or --find-max: constant spacing or a Poisson process
    /// (default: constant for http, poisson for pg, as pgbench's).
    #[arg(long, value_name = "constant|poisson")]
    pub arrivals: Option<Arrivals>,
    /// Raise connections (closed loop) or the rate (open loop) linearly over
    /// this long before measuring; shown per second, not in the summary.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub ramp: Option<Duration>,
    /// Closed loop over TCP: pause an idle worker briefly before it waits, so
    /// one wake-up serves several responses (less generator CPU, a little
    /// think time): off, auto (1/32 of the latency, only when idle) or a
    /// fixed pause such as 100us. Latency stays exact (kernel receive
    /// timestamps). See docs/http.md and docs/pg.md.
    #[arg(
        long,
        default_value = "off",
        value_name = "off|auto|PAUSE",
        conflicts_with = "rate"
    )]
    pub coalesce: Coalesce,
    /// How workers wait for the network: io_uring (one multishot receive
    /// per connection; needs Linux 6.1 and io_uring allowed), epoll, or
    /// auto: io_uring where it can, epoll otherwise and with --coalesce.
    #[arg(long, default_value = "auto", value_name = "auto|epoll|io_uring")]
    pub io: IoMode,
    /// Run the generator's threads inside this network namespace (a name
    /// from `ip netns`, or a path).
    #[arg(long, value_name = "NAME|PATH")]
    pub netns: Option<String>,
    /// Run the generator's threads on these CPUs only (a taskset list:
    /// 0, 0-1,3), away from the server's: on a small machine the two
    /// otherwise measure each other.
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<tare_engine::cpu::CpuList>,
    /// Search for the highest rate that meets --slo: a closed-loop probe,
    /// then open-loop probes of the run's duration each, bisecting
    /// (docs/open-loop.md).
    #[arg(long)]
    pub find_max: bool,
    /// Objectives for --find-max: 'p99<10ms', 'p50<1ms,p999<50ms,errors<1%'.
    #[arg(long, value_name = "OBJECTIVES")]
    pub slo: Option<Slo>,
    /// Most open-loop probes --find-max may run.
    #[arg(long, default_value_t = 8, value_name = "N")]
    pub max_runs: usize,
    /// Write the JSON result to PATH ('-': stdout, replacing the text).
    #[arg(long, value_name = "PATH|-")]
    pub json: Option<String>,
    /// Allow a target that is not loopback or a Unix socket (only servers
    /// you own).
    #[arg(long)]
    pub allow_remote: bool,
}

impl LoadArgs {
    /// Sets the shared settings on `load`, which holds the engine's
    /// defaults and its own threads, connections and duration flags.
    pub(crate) fn apply(&self, load: &mut Load) -> anyhow::Result<()> {
        if self.arrivals.is_some() && self.rate.is_none() && !self.find_max {
            anyhow::bail!("--arrivals paces an open loop: give --rate or --find-max");
        }
        match (self.find_max, &self.slo) {
            (true, None) => anyhow::bail!("--find-max needs objectives: --slo 'p99<10ms'"),
            (false, Some(_)) => {
                anyhow::bail!("--slo is the objective of --find-max; add --find-max")
            }
            (true, Some(_)) if self.rate.is_some() => {
                anyhow::bail!("--find-max searches the rate itself; drop --rate")
            }
            (true, Some(_)) if self.max_runs == 0 => {
                anyhow::bail!("--max-runs must be at least 1")
            }
            _ => {}
        }
        if let Some(w) = self.warmup {
            load.warmup = w;
        }
        if let Some(t) = self.timeout {
            load.timeout = t;
        }
        load.rate = self.rate;
        if let Some(a) = self.arrivals {
            load.arrivals = a;
        }
        if let Some(r) = self.ramp {
            load.ramp = r;
        }
        load.slo = self.slo.clone();
        load.coalesce = self.coalesce;
        load.io = self.io;
        load.netns = super::emit::netns_path(self.netns.as_deref());
        load.cpus = self.cpus.clone();
        Ok(())
    }

    /// Whether `--json -` replaces the text (so no live display either).
    pub(crate) fn json_on_stdout(&self) -> bool {
        self.json.as_deref() == Some("-")
    }
}

/// `--find-max`, for any engine: probes of the run's duration (`needs`
/// says how the engine's flags give it, when it is missing), no live line
/// between them; the table (or the JSON search) on stdout. Ctrl-C ends the
/// search as it always has: at once.
pub(super) fn find_max<E: Engine>(
    args: &LoadArgs,
    mut config: E::Config,
    needs: &str,
) -> anyhow::Result<ExitCode> {
    if E::load(&config).duration.is_none() {
        anyhow::bail!("--find-max needs a duration per probe: {needs}");
    }
    E::quiet(&mut config);
    let never = Arc::new(AtomicBool::new(false));
    let found = find_max::find_max::<E>(&config, Budget::runs(args.max_runs), &never)?;
    super::emit::result(args.json.as_deref(), &found, || {
        find_max::render_for::<E>(&found)
    })?;
    Ok(if found.best_rate.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Where the server is: a Unix socket when given, else host and port (a
/// name resolved once), as sysbench's and redis-benchmark's flags say it.
pub(crate) fn endpoint(host: &str, port: u16, socket: Option<&Path>) -> anyhow::Result<Endpoint> {
    if let Some(s) = socket {
        return Ok(Endpoint::Unix(s.to_path_buf()));
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(Endpoint::Tcp(SocketAddr::new(ip, port)));
    }
    let addr = (host, port)
        .to_socket_addrs()
        .with_context(|| format!("could not resolve host {host:?}"))?
        .next()
        .with_context(|| format!("host {host:?} has no address"))?;
    Ok(Endpoint::Tcp(addr))
}
