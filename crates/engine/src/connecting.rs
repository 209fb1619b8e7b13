//! [`ConnectPace`]: how fast a run opens its connections. Thousands of
//! connects at once overflow the server's listen backlog; the dropped ones
//! are retried by the kernel only after 1 s, 3 s, ... (docs/http.md, "Many
//! connections"), so beyond a first burst they are opened at a bounded rate.

use std::fmt;
use std::str::FromStr;

/// Connections opened at once before pacing starts, at most: a burst any
/// listener with the default `net.core.somaxconn` (4096) can queue.
pub(crate) const DEFAULT_BURST: u64 = 1024;
/// New connections per second after the burst (`--connect-rate`'s default).
pub(crate) const DEFAULT_RATE: f64 = 10_000.0;

/// `--connect-rate N` (per second) or `all` (every connection at once).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConnectPace {
    /// `None`: all at once.
    pub rate: Option<f64>,
    pub burst: u64,
}

impl Default for ConnectPace {
    fn default() -> Self {
        ConnectPace {
            rate: Some(DEFAULT_RATE),
            burst: DEFAULT_BURST,
        }
    }
}

impl ConnectPace {
    pub const ALL_AT_ONCE: ConnectPace = ConnectPace {
        rate: None,
        burst: u64::MAX,
    };

    /// When connection `index` (of the whole run, in opening order) starts,
    /// in nanoseconds from the start of the run.
    pub fn start_ns(&self, index: u64) -> u64 {
        match self.rate {
            Some(r) if index >= self.burst => {
                ((index - self.burst + 1) as f64 * 1e9 / r).round() as u64
            }
            _ => 0,
        }
    }

    /// How long opening `connections` is scheduled to take: the measured
    /// period starts after it.
    pub fn phase_ns(&self, connections: u64) -> u64 {
        connections
            .checked_sub(1)
            .map_or(0, |last| self.start_ns(last))
    }
}

impl FromStr for ConnectPace {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        if t == "all" {
            return Ok(ConnectPace::ALL_AT_ONCE);
        }
        let n = t.strip_suffix("/s").unwrap_or(t);
        let (n, mult) = match n.strip_suffix(['k', 'K']) {
            Some(n) => (n, 1e3),
            None => (n, 1.0),
        };
        match n.parse::<f64>() {
            Ok(r) if r.is_finite() && r >= 1.0 && r * mult <= 1e7 => Ok(ConnectPace {
                rate: Some(r * mult),
                ..ConnectPace::default()
            }),
            _ => Err(format!(
                "invalid --connect-rate {s:?}: connections per second (1 to 10M, e.g. 5000 or 20k) or `all`"
            )),
        }
    }
}

impl fmt::Display for ConnectPace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.rate {
            Some(r) => write!(f, "{r}/s"),
            None => f.write_str("all"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_a_bounded_rate() {
        let p = ConnectPace {
            rate: Some(1000.0),
            burst: 10,
        };
        assert_eq!(p.start_ns(0), 0);
        assert_eq!(p.start_ns(9), 0);
        assert_eq!(p.start_ns(10), 1_000_000);
        assert_eq!(p.start_ns(1009), 1_000_000_000);
        assert_eq!(p.phase_ns(10), 0);
        assert_eq!(p.phase_ns(1010), 1_000_000_000);
        assert_eq!(ConnectPace::ALL_AT_ONCE.phase_ns(100_000), 0);
    }

    #[test]
    fn parses_rates_and_all_refuses_nonsense() {
        assert_eq!("all".parse::<ConnectPace>(), Ok(ConnectPace::ALL_AT_ONCE));
        assert_eq!("20k".parse::<ConnectPace>().unwrap().rate, Some(20_000.0));
        assert_eq!("500/s".parse::<ConnectPace>().unwrap().rate, Some(500.0));
        for bad in ["", "0", "-5", "fast", "nan", "1e9"] {
            assert!(bad.parse::<ConnectPace>().is_err(), "{bad}");
        }
    }
}
