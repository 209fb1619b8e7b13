//! What `tare serve` listens on and how it answers.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// TCP address (ignored when `unix` is set). Port 0 picks a free port.
    pub listen: SocketAddr,
    /// Listen on this Unix socket instead of TCP.
    pub unix: Option<PathBuf>,
    /// Worker threads, each with its own epoll loop.
    pub threads: usize,
    /// Response body size in bytes (the body is `size` bytes of `x`).
    pub body_size: usize,
    /// HTTP status of every response.
    pub status: u16,
    /// Send the body with `Transfer-Encoding: chunked` instead of Content-Length.
    pub chunked: bool,
    /// Hold every response this long after its request arrived.
    pub delay: Duration,
    /// With `stall`: every `stall_every`, answer nothing for `stall`
    /// (responses due in the pause go out when it ends). A known stall is the
    /// ground truth for coordinated-omission tests.
    pub stall_every: Option<Duration>,
    pub stall: Duration,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".parse().expect("valid literal"),
            unix: None,
            threads: 1,
            body_size: 13,
            status: 200,
            chunked: false,
            delay: Duration::ZERO,
            stall_every: None,
            stall: Duration::ZERO,
        }
    }
}

impl ServeConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.threads == 0 {
            return Err("threads must be at least 1".into());
        }
        if !(100..=599).contains(&self.status) {
            return Err(format!(
                "status {} is not an HTTP status (100-599)",
                self.status
            ));
        }
        if self.body_size > 1 << 30 {
            return Err("body size above 1 GiB".into());
        }
        if let Some(every) = self.stall_every {
            if every.is_zero() || self.stall >= every {
                return Err("--stall must be shorter than --stall-every, which must be > 0".into());
            }
        }
        Ok(())
    }

    /// If `at` (time since the server's start) falls in a stall, when it ends.
    pub(crate) fn stall_end(&self, at: Duration) -> Option<Duration> {
        let every = self.stall_every?;
        if self.stall.is_zero() {
            return None;
        }
        let period = every.as_nanos();
        let into = at.as_nanos() % period;
        // The stall occupies the last `stall` of each period, so a server
        // starts by answering (health checks pass) and first pauses at
        // `every - stall`.
        let start = period - self.stall.as_nanos();
        (into >= start).then(|| {
            let end = at.as_nanos() - into + period;
            Duration::from_nanos(end as u64)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stall_windows_close_each_period() {
        let c = ServeConfig {
            stall_every: Some(Duration::from_secs(1)),
            stall: Duration::from_millis(200),
            ..Default::default()
        };
        assert_eq!(c.stall_end(Duration::from_millis(100)), None);
        assert_eq!(
            c.stall_end(Duration::from_millis(850)),
            Some(Duration::from_secs(1))
        );
        assert_eq!(
            c.stall_end(Duration::from_millis(2900)),
            Some(Duration::from_secs(3))
        );
    }

    #[test]
    fn rejects_nonsense() {
        let bad = ServeConfig {
            threads: 0,
            ..Default::default()
        };
        assert!(bad.validate().is_err());
        let bad = ServeConfig {
            status: 42,
            ..Default::default()
        };
        assert!(bad.validate().is_err());
    }
}
