//! What one `tare http` run does: the shared [`Load`] and what only HTTP has.

use std::time::Duration;

use tare_engine::connecting::ConnectPace;
use tare_engine::load::Load;
use tare_engine::{Endpoint, Engine};

use crate::mix::Mix;
use crate::target::Target;
use crate::{Http, HttpError};

#[derive(Clone, Debug)]
pub struct HttpConfig {
    pub target: Target,
    /// Threads, connections, duration, pacing, ... (`Load::timeout`: a
    /// request with no complete response after this long is a timeout).
    pub load: Load,
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// A request mix (`--urls`, `--requests-file`): these requests, one
    /// drawn by weight per send, instead of `method`, the target's path,
    /// `headers` and `body`; counted by name too.
    pub mix: Option<Mix>,
    /// Total requests to send (`-n`), shared out among the threads. With a
    /// duration too, whichever ends first.
    pub requests: Option<u64>,
    /// Reuse connections (`false`: a new connection per request).
    pub keepalive: bool,
    /// Show a live progress line when stdout is a terminal.
    pub progress: bool,
    /// How fast the connections are opened (`--connect-rate`); the
    /// measured period starts once they are all due.
    pub connect: ConnectPace,
}

impl HttpConfig {
    /// wrk's defaults: 2 threads, 10 connections, 10 s, 2 s timeout.
    pub fn new(target: Target) -> Self {
        Self {
            target,
            load: Load {
                threads: 2,
                connections: 10,
                duration: Some(Duration::from_secs(10)),
                timeout: Duration::from_secs(2),
                ..Load::default()
            },
            method: "GET".into(),
            headers: Vec::new(),
            body: Vec::new(),
            mix: None,
            requests: None,
            keepalive: true,
            progress: false,
            connect: ConnectPace::default(),
        }
    }

    pub fn validate(&self) -> Result<(), HttpError> {
        let bad = |m: &str| Err(HttpError::Config(m.to_string()));
        let tcp = matches!(self.target.endpoint, Endpoint::Tcp(_));
        Http::check_load(&self.load, tcp).map_err(HttpError::Config)?;
        match (self.load.duration, self.requests) {
            (None, None) => return bad("give a duration (-d) or a request count (-n)"),
            (_, Some(0)) => return bad("request count (-n) must be at least 1"),
            _ => {}
        }
        crate::request::check_method(&self.method).map_err(HttpError::Config)?;
        if self.body.len() > tare_engine::bounds::MAX_BODY {
            return Err(HttpError::Config(format!(
                "--body must be at most {} bytes",
                tare_engine::bounds::MAX_BODY
            )));
        }
        if let Some(m) = &self.mix {
            if m.requests.is_empty() || m.requests.len() > crate::mix::MAX_REQUESTS {
                return bad("a request mix holds 1 to 1000 requests");
            }
        }
        Ok(())
    }
}
