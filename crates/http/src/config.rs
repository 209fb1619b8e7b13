//! What one `tare http` run does.

use std::path::PathBuf;
use std::time::Duration;

use crate::target::Target;
use crate::HttpError;

#[derive(Clone, Debug)]
pub struct HttpConfig {
    pub target: Target,
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Worker threads, each with its own epoll loop.
    pub threads: usize,
    /// Concurrent connections, shared out among the threads.
    pub connections: usize,
    /// Measured period (`-d`). With `requests`, whichever ends first.
    pub duration: Option<Duration>,
    /// Total requests to send (`-n`), shared out among the threads.
    pub requests: Option<u64>,
    /// Load applied before measuring starts; its requests are not recorded.
    pub warmup: Duration,
    /// Reuse connections (`false`: a new connection per request).
    pub keepalive: bool,
    /// A request with no complete response after this long is a timeout.
    pub timeout: Duration,
    /// Worker threads enter this network namespace before connecting
    /// (`lab-client`: the generator stands on another "machine").
    pub netns: Option<PathBuf>,
    /// Show a live progress line when stdout is a terminal.
    pub progress: bool,
    /// Open loop: requests per second in total (`--rate`); `None` is a
    /// closed loop.
    pub rate: Option<f64>,
    /// Open loop: evenly spaced or Poisson arrivals.
    pub arrivals: tare_engine::schedule::Arrivals,
    /// Connections (closed loop) or the rate (open loop) rise linearly over
    /// this long before measurement starts (then `warmup`, then the measured
    /// `duration`).
    pub ramp: Duration,
    /// Closed loop: how an idle worker batches its wake-ups (`--coalesce`).
    pub coalesce: tare_engine::Coalesce,
    /// How workers wait for the network (`--io`): io_uring where it can,
    /// epoll otherwise.
    pub io: tare_engine::IoMode,
}

impl HttpConfig {
    /// wrk's defaults: 2 threads, 10 connections, 10 s, 2 s timeout.
    pub fn new(target: Target) -> Self {
        Self {
            target,
            method: "GET".into(),
            headers: Vec::new(),
            body: Vec::new(),
            threads: 2,
            connections: 10,
            duration: Some(Duration::from_secs(10)),
            requests: None,
            warmup: Duration::ZERO,
            keepalive: true,
            timeout: Duration::from_secs(2),
            netns: None,
            progress: false,
            rate: None,
            arrivals: Default::default(),
            ramp: Duration::ZERO,
            coalesce: tare_engine::Coalesce::Off,
            io: tare_engine::IoMode::Auto,
        }
    }

    pub fn validate(&self) -> Result<(), HttpError> {
        let bad = |m: &str| Err(HttpError::Config(m.to_string()));
        if self.threads == 0 {
            return bad("threads (-t) must be at least 1");
        }
        if self.connections == 0 {
            return bad("connections (-c) must be at least 1");
        }
        if self.connections < self.threads {
            return bad("connections (-c) must be at least the number of threads (-t)");
        }
        if self.connections > 1_000_000 {
            return bad("connections (-c) above 1000000");
        }
        match (self.duration, self.requests) {
            (None, None) => return bad("give a duration (-d) or a request count (-n)"),
            (Some(d), _) if d.is_zero() => return bad("duration (-d) must be greater than zero"),
            (_, Some(0)) => return bad("request count (-n) must be at least 1"),
            _ => {}
        }
        if let Some(r) = self.rate {
            if !(r.is_finite() && r > 0.0) {
                return bad("rate (--rate) must be a positive number of requests per second");
            }
            if r > 10_000_000.0 {
                return bad("rate (--rate) above 10M requests per second");
            }
        }
        if self.io == tare_engine::IoMode::Uring
            && self.coalesce != tare_engine::Coalesce::Off
            && matches!(self.target.endpoint, tare_engine::Endpoint::Tcp(_))
            && self.rate.is_none()
        {
            return bad("--coalesce needs kernel receive timestamps, which only --io epoll takes; use --io auto or epoll");
        }
        if self.timeout.is_zero() {
            return bad("timeout must be greater than zero");
        }
        if self.method.is_empty()
            || !self
                .method
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b == b'-' || b == b'_')
        {
            return bad("method (-m) must be an uppercase token such as GET or POST");
        }
        Ok(())
    }
}
