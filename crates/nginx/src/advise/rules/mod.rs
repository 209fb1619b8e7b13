//! The rules, in the seeds' order: process and events settings first (seed 000's
//! priorities 1-3: docs/studies.md, seed 000, "The tuned configuration"), then
//! HTTP transfer, keep-alive, logging and compression (4-7), then the listen
//! queue and the reverse-proxy settings of seed 003 (docs/studies.md, seed
//! 003). A rule's `effect` gives what the seeds say the setting brings; how
//! nginx works is explained in tare's words, and an expectation no seed states
//! is marked as tare's.

mod http;
mod listen;
mod proxy;
mod workers;

use crate::advise::change::{Change, Edit};
use crate::advise::host::HostFacts;
use crate::advise::view::{find, Node};
use crate::advise::{Advice, Priority};

/// What every rule looks at: the resolved configuration and the machine.
pub struct Context<'n, 'a> {
    /// The main context, includes resolved.
    pub main: &'n [Node<'a>],
    pub host: HostFacts,
}

impl<'n, 'a> Context<'n, 'a> {
    pub fn new(main: &'n [Node<'a>], host: HostFacts) -> Self {
        Context { main, host }
    }

    pub fn events(&self) -> Option<&'n Node<'a>> {
        find(self.main, "events")
    }

    pub fn http(&self) -> Option<&'n Node<'a>> {
        find(self.main, "http")
    }

    /// `worker_connections`, or nginx's default (512, ngx_event.c `DEFAULT_CONNECTIONS`).
    pub fn worker_connections(&self) -> u64 {
        self.events()
            .and_then(|e| e.child("worker_connections"))
            .and_then(|n| number(n.arg0()))
            .unwrap_or(512)
    }
}

/// One finding of a rule, before the rule's metadata is attached.
pub struct Finding {
    pub title: String,
    pub reason: String,
    pub location: Option<String>,
    pub change: Change,
    /// Overrides the rule's priority when this case is worse than the usual one.
    pub priority: Option<Priority>,
}

impl Finding {
    fn new(title: impl Into<String>, reason: impl Into<String>, change: Change) -> Self {
        Finding {
            title: title.into(),
            reason: reason.into(),
            location: None,
            change,
            priority: None,
        }
    }

    fn at(mut self, node: Option<&Node>) -> Self {
        self.location = node.map(Node::location);
        self
    }

    fn priority(mut self, p: Priority) -> Self {
        self.priority = Some(p);
        self
    }
}

/// A rule: its id, its priority (tare's, see [`Priority`]), what the seeds say
/// it brings, and its check.
pub struct Rule {
    pub id: &'static str,
    pub priority: Priority,
    pub effect: &'static str,
    pub check: fn(&Context) -> Vec<Finding>,
}

impl Rule {
    pub fn run(&self, ctx: &Context) -> Vec<Advice> {
        (self.check)(ctx)
            .into_iter()
            .map(|f| Advice {
                rule: self.id.to_string(),
                priority: f.priority.unwrap_or(self.priority),
                title: f.title,
                reason: f.reason,
                effect: self.effect.to_string(),
                location: f.location,
                change: f.change,
            })
            .collect()
    }
}

/// Every rule, in the order advice of equal priority is listed.
pub static RULES: &[Rule] = &[
    workers::WORKER_PROCESSES,
    workers::WORKER_RLIMIT_NOFILE,
    workers::WORKER_CONNECTIONS,
    proxy::UPSTREAM_KEEPALIVE,
    http::SENDFILE_TCP_NOPUSH,
    http::KEEPALIVE_TIMEOUT,
    http::KEEPALIVE_REQUESTS,
    http::ACCESS_LOG_BUFFERED,
    listen::LISTEN_BACKLOG,
    proxy::PROXY_BUFFERING,
    workers::USE_EPOLL,
    workers::MULTI_ACCEPT,
    http::TCP_NODELAY,
    http::GZIP_LEVEL,
    http::GZIP_TYPES,
];

/// A plain non-negative integer argument.
pub fn number(s: &str) -> Option<u64> {
    s.parse().ok()
}

/// An nginx time (`65`, `65s`, `1m30s`, `500ms`) in seconds.
pub fn seconds(s: &str) -> Option<f64> {
    let mut total = 0.0;
    let mut rest = s;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return None;
        }
        let n: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let (unit, len) = if rest.starts_with("ms") {
            (0.001, 2)
        } else {
            match rest.chars().next() {
                None => (1.0, 0),
                Some('s') => (1.0, 1),
                Some('m') => (60.0, 1),
                Some('h') => (3600.0, 1),
                Some('d') => (86400.0, 1),
                Some('w') => (604_800.0, 1),
                Some('M') => (2_592_000.0, 1),
                Some('y') => (31_536_000.0, 1),
                Some(_) => return None,
            }
        };
        total += n * unit;
        rest = &rest[len..];
    }
    Some(total)
}

/// `directive args;` set in a block (`None`: the main context).
fn set(block: Option<&Node>, directive: &str, args: &[&str]) -> Edit {
    Edit::Set {
        block: block.map(Node::anchor),
        directive: directive.into(),
        args: args.iter().map(|s| s.to_string()).collect(),
        key_args: 0,
    }
}

/// New arguments for one statement.
fn replace(node: &Node, args: Vec<String>) -> Edit {
    Edit::Replace {
        at: node.anchor(),
        args,
    }
}

fn change(edits: Vec<Edit>) -> Change {
    Change {
        edits,
        sysctls: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nginx_times() {
        assert_eq!(seconds("65"), Some(65.0));
        assert_eq!(seconds("1m30s"), Some(90.0));
        assert_eq!(seconds("500ms"), Some(0.5));
        assert_eq!(seconds("0"), Some(0.0));
        assert_eq!(seconds("x"), None);
    }
}
