//! [`ConnectReport`]: how a run's connections were opened, and what each
//! one was doing when the run ended.

use serde::{Deserialize, Serialize};

/// The connect phase: how connections were paced, how long they took to be
/// all established, and every connection's state at the deadline
/// (`established + connecting + refused + idle` is `connections`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConnectReport {
    /// New connections per second after the first `burst` (`None`: all at once).
    pub rate: Option<f64>,
    /// Connections opened at once before pacing.
    pub burst: u64,
    /// Seconds between the first connect and the moment every connection
    /// was established at once (`None`: that never happened).
    pub established_all_s: Option<f64>,
    /// Source addresses the connections were spread over (1: the kernel's choice).
    pub source_addresses: u32,
    /// At the deadline: connected.
    pub established: u64,
    /// At the deadline: a connect started, not yet answered.
    pub connecting: u64,
    /// At the deadline: the last connect failed (refused, reset, timed out),
    /// waiting to retry.
    pub refused: u64,
    /// At the deadline: no socket and no failure (not opened yet, a
    /// count-bounded run's finished slots, an open loop's free slots).
    pub idle: u64,
}

impl ConnectReport {
    /// Adds another worker's share; `established_all_s` holds only if it
    /// holds for every share (the latest of them).
    pub fn add(&mut self, o: &ConnectReport) {
        self.established_all_s = match (self.established_all_s, o.established_all_s) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
        self.established += o.established;
        self.connecting += o.connecting;
        self.refused += o.refused;
        self.idle += o.idle;
    }

    /// One line for the text reports.
    pub fn summary(&self) -> String {
        let all = match self.established_all_s {
            Some(s) => format!("all established in {s:.2}s"),
            None => "never all established".into(),
        };
        let pace = match self.rate {
            Some(r) => format!("{} at once, then {r:.0}/s", self.burst),
            None => "all at once".into(),
        };
        let sources = if self.source_addresses > 1 {
            format!(", from {} source addresses", self.source_addresses)
        } else {
            String::new()
        };
        format!(
            "{all} ({pace}{sources}); at the deadline {} established, {} connecting, {} refused",
            self.established, self.connecting, self.refused
        )
    }
}
