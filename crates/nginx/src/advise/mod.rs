//! The tuning advisor: the nginx tuning lists of seeds 000 and 003
//! (docs/studies.md, seed 000, "The tuned configuration"; seed 003, "Baseline
//! and tuned configurations") as rules over a parsed configuration and the
//! facts of the machine. Each piece of advice names its rule, its priority
//! (tare's grouping of the seeds' rankings, see [`Priority`]), the reason in
//! this config's own numbers, the effect the seeds state, where it applies,
//! and a [`Change`] that `tare tune` can apply and measure, one at a time.
//!
//! - [`host`]: CPUs, `ulimit -n`, `net.core.somaxconn`, behind the [`Host`] trait.
//! - [`view`]: the configuration with includes resolved.
//! - [`change`]: edits to the parsed configuration, found again by [`Anchor`].
//! - [`rules`]: the rules, grouped by the part of nginx they tune.

pub mod change;
pub mod host;
pub mod rules;
pub mod view;

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::payload::Payload;

pub use change::{Anchor, Change, ChangeError, Edit, Sysctl};
pub use host::{Host, HostFacts, LocalHost};

/// How much a recommendation matters. The levels are tare's grouping, not
/// the seeds': seed 000 ranks its seven settings 1-7 (docs/studies.md, seed
/// 000, "The tuned configuration") and tare calls 1-3 high, 4-6 medium, 7 low.
/// Of seed 003's "most important" settings (worker_connections, keep-alive to
/// clients and to the backend, buffering: docs/studies.md, seed 003, "The
/// article's rules"), tare ranks the upstream pool, which seed 000's list
/// lacks, high and proxy buffering medium; what neither ranks (epoll,
/// multi_accept, tcp_nodelay, from seed 000's difference table) is low.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    High,
    Medium,
    Low,
}

impl Priority {
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::High => "high",
            Priority::Medium => "medium",
            Priority::Low => "low",
        }
    }
}

/// One recommendation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Advice {
    /// The rule's id, e.g. `worker-processes`; stable, for scripts and `tare tune`.
    pub rule: String,
    pub priority: Priority,
    /// The recommendation in one line, e.g. `worker_processes auto;`.
    pub title: String,
    /// Why, with this configuration's and this machine's numbers.
    pub reason: String,
    /// What the seeds say it brings (docs/studies.md).
    pub effect: String,
    /// `file:line` of the statement concerned, if there is one.
    pub location: Option<String>,
    /// The edit, machine-applicable.
    pub change: Change,
}

/// Everything `tare nginx advise` reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub host: HostFacts,
    /// Most important first.
    pub advice: Vec<Advice>,
}

impl Report {
    /// Is any advice at least this important (for `--fail-on`)?
    pub fn any_at_least(&self, p: Priority) -> bool {
        self.advice.iter().any(|a| a.priority <= p)
    }

    /// The rule ids that fired.
    pub fn rules(&self) -> Vec<&str> {
        self.advice.iter().map(|a| a.rule.as_str()).collect()
    }

    /// The human-readable report.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let h = &self.host;
        let opt = |v: Option<u64>| v.map(|n| n.to_string()).unwrap_or_else(|| "unknown".into());
        let _ = writeln!(
            out,
            "host: {} CPUs, ulimit -n {}, net.core.somaxconn {}",
            h.cpus,
            opt(h.nofile),
            opt(h.somaxconn)
        );
        if self.advice.is_empty() {
            let _ = writeln!(out, "no advice: every rule is satisfied");
            return out;
        }
        for a in &self.advice {
            let _ = writeln!(out, "\n[{}] {}: {}", a.priority.as_str(), a.rule, a.title);
            if let Some(loc) = &a.location {
                let _ = writeln!(out, "  at:     {loc}");
            }
            let _ = writeln!(out, "  why:    {}", a.reason);
            let _ = writeln!(out, "  effect: {}", a.effect);
            if a.change.is_manual() && a.change.sysctls.is_empty() {
                let _ = writeln!(out, "  change: by hand (see why)");
            }
            for s in &a.change.sysctls {
                let _ = writeln!(out, "  sysctl: {}={}", s.name, s.value);
            }
        }
        let counts = [Priority::High, Priority::Medium, Priority::Low].map(|p| {
            format!(
                "{} {}",
                self.advice.iter().filter(|a| a.priority == p).count(),
                p.as_str()
            )
        });
        let _ = writeln!(
            out,
            "\n{} recommendations: {}",
            self.advice.len(),
            counts.join(", ")
        );
        out
    }
}

/// Runs every rule on a parsed configuration.
pub fn advise(payload: &Payload, host: &dyn Host) -> Report {
    let facts = host.facts();
    let nodes = view::resolve(payload);
    let ctx = rules::Context::new(&nodes, facts);
    let mut advice: Vec<Advice> = rules::RULES
        .iter()
        .flat_map(|rule| rule.run(&ctx))
        .collect();
    // Stable: within a priority, the seeds' order (the order of RULES).
    advice.sort_by_key(|a| a.priority);
    Report {
        host: facts,
        advice,
    }
}
