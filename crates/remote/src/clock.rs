//! The clock offset to a host, NTP-style: this host's time before and
//! after asking the host's, over one ssh session; the sample with the
//! fastest round trip wins, and its offset is known to within half of it
//! (Mills, RFC 5905, "On-Wire Protocol", the same midpoint estimate).

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::install::Installed;
use crate::RemoteError;

/// Exchanges per measurement: the fastest of them is kept.
const SAMPLES: usize = 8;

/// A host's clock relative to this one's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Clock {
    /// The host's clock minus this host's, in seconds.
    pub offset_s: f64,
    /// The round trip of the kept exchange.
    pub rtt_s: f64,
}

/// Seconds since the Unix epoch, now.
pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Measures the offset to the host `inst` is installed on.
pub fn measure(inst: &Installed) -> Result<Clock, RemoteError> {
    let host = &inst.host;
    let mut cmd = host.ssh();
    cmd.arg(inst.agent_line("clock"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let err = |message: String| RemoteError::Ssh {
        host: host.name.clone(),
        message,
    };
    let mut child = cmd
        .spawn()
        .map_err(|e| err(format!("cannot start ssh: {e}")))?;
    let mut stdin = child.stdin.take().expect("piped");
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let mut best: Option<Clock> = None;
    let result = (|| {
        for _ in 0..SAMPLES {
            let t0 = now();
            stdin
                .write_all(b"t\n")
                .and_then(|()| stdin.flush())
                .map_err(|e| err(format!("clock exchange: {e}")))?;
            let line = lines
                .next()
                .ok_or_else(|| err("the clock agent closed".into()))?
                .map_err(|e| err(format!("clock exchange: {e}")))?;
            let t1 = now();
            let remote: f64 = line
                .trim()
                .parse()
                .map_err(|_| err(format!("the clock agent said {line:?}")))?;
            let sample = Clock {
                offset_s: remote - (t0 + t1) / 2.0,
                rtt_s: t1 - t0,
            };
            if best.is_none_or(|b| sample.rtt_s < b.rtt_s) {
                best = Some(sample);
            }
        }
        Ok(())
    })();
    drop(stdin);
    let out = crate::wait::with_limit(child, Duration::from_secs(10));
    if let Err(e) = result {
        let stderr = out.map(|o| o.stderr).unwrap_or_default();
        let said = String::from_utf8_lossy(&stderr);
        return Err(match said.lines().rfind(|l| !l.trim().is_empty()) {
            Some(l) => err(l.trim().to_string()),
            None => e,
        });
    }
    best.ok_or_else(|| err("no clock sample".into()))
}

/// The agent's side: answers each line on stdin with its clock.
pub fn serve() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        if line.is_err() {
            break;
        }
        if writeln!(out, "{:.9}", now())
            .and_then(|()| out.flush())
            .is_err()
        {
            break;
        }
    }
}
