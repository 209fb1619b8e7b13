//! Process and event-loop settings: seed 000's priorities 1-3 and the
//! events-block differences of its "unfair comparison" table (docs/studies.md,
//! seed 000, "Test 1" and "The tuned configuration"), with seed 003's advice
//! (docs/studies.md, seed 003, "The parameters as the article explains them").

use super::{change, number, set, Context, Finding, Rule};
use crate::advise::Priority;

pub(super) const WORKER_PROCESSES: Rule = Rule {
    id: "worker-processes",
    priority: Priority::High,
    effect: "Seed 000 ranks it first (\"CPU cores not all used\"); its tuned config says \
             usually the core count. Seed 003: the core count for CPU-bound work (TLS, gzip), \
             1.5-2 x the cores for I/O-bound work (static files, proxying), and too many \
             workers add context switches.",
    check: worker_processes,
};

fn worker_processes(ctx: &Context) -> Vec<Finding> {
    let cpus = ctx.host.cpus;
    let node = ctx.main.iter().find(|n| n.name() == "worker_processes");
    let workers = match node.map(|n| n.arg0()) {
        Some("auto") => return Vec::new(),
        Some(v) => match number(v) {
            Some(n) => n,
            None => return Vec::new(),
        },
        // nginx's default (ngx_cycle.c: `ccf->worker_processes = 1`).
        None => 1,
    };
    let why = if workers < cpus {
        format!(
            "{workers} worker process{} on a {cpus}-CPU machine: nginx serves with at most {workers} \
             of {cpus} cores{}",
            if workers == 1 { "" } else { "es" },
            if node.is_none() { " (unset: nginx's default is 1)" } else { "" }
        )
    } else if workers > 2 * cpus {
        format!(
            "{workers} worker processes on {cpus} CPUs: beyond 2 per core (seed 003's ceiling for \
             I/O-bound work) extra workers only compete for the same cores"
        )
    } else {
        return Vec::new();
    };
    let edit = set(None, "worker_processes", &["auto"]);
    vec![Finding::new("worker_processes auto;", why, change(vec![edit])).at(node)]
}

pub(super) const WORKER_RLIMIT_NOFILE: Rule = Rule {
    id: "worker-rlimit-nofile",
    priority: Priority::High,
    effect: "Seed 000 ranks it second (\"not enough file descriptors\"); seed 003 credits the \
             descriptor limit, with worker_connections, for errors falling from 0.5% \
             (connection resets) to 0 under 1000 concurrent clients.",
    check: worker_rlimit_nofile,
};

fn worker_rlimit_nofile(ctx: &Context) -> Vec<Finding> {
    let wc = ctx.worker_connections();
    // A client connection is one descriptor; proxying it or sending a file adds one.
    let need = 2 * wc;
    let node = ctx.main.iter().find(|n| n.name() == "worker_rlimit_nofile");
    let (limit, source) = match node.and_then(|n| number(n.arg0())) {
        Some(n) => (n, "worker_rlimit_nofile"),
        None => match ctx.host.nofile {
            Some(n) => (n, "the inherited `ulimit -n`"),
            None => return Vec::new(),
        },
    };
    if limit >= need {
        return Vec::new();
    }
    let suggested = need.max(65535);
    let why = format!(
        "each worker may open {limit} files ({source}) but worker_connections {wc} needs up to \
         {need} (a client socket plus an upstream socket or an open file each); past the limit \
         nginx fails with \"Too many open files\""
    );
    let edit = set(None, "worker_rlimit_nofile", &[&suggested.to_string()]);
    vec![Finding::new(
        format!("worker_rlimit_nofile {suggested};"),
        why,
        change(vec![edit]),
    )
    .at(node)]
}

/// Seed 000's tuned value. Seed 003's general advice is "usually 10240 or more"
/// and its tuned proxy config sets 50000; tare suggests seed 000's smaller
/// value, which covers both seeds' 1000 connections (tare's choice).
const CONNECTIONS: u64 = 4096;

pub(super) const WORKER_CONNECTIONS: Rule = Rule {
    id: "worker-connections",
    priority: Priority::High,
    effect: "Seed 000 ranks it third (tuned: 4096; Docker's default 1024 \"becomes the \
             bottleneck at high concurrency\"); seed 003 names it among the most important \
             settings (tuned: 50000) and credits it, with the keep-alive settings, for \
             12.5k -> 32k QPS, and with worker_rlimit_nofile for 0.5% -> 0 errors.",
    check: worker_connections,
};

fn worker_connections(ctx: &Context) -> Vec<Finding> {
    let Some(events) = ctx.events() else {
        return Vec::new();
    };
    let wc = ctx.worker_connections();
    if wc >= CONNECTIONS {
        return Vec::new();
    }
    let node = events.child("worker_connections");
    let why = format!(
        "worker_connections {wc}{}: each worker holds at most {wc} connections (clients and \
         upstreams together, so a proxy serves at most half as many clients); seed 000's \
         tuned config has 4096 for its load of 1000 connections",
        if node.is_none() {
            " (unset: nginx's default)"
        } else {
            ""
        }
    );
    let edit = set(
        Some(events),
        "worker_connections",
        &[&CONNECTIONS.to_string()],
    );
    vec![Finding::new(
        format!("worker_connections {CONNECTIONS};"),
        why,
        change(vec![edit]),
    )
    .at(node.or(Some(events)))]
}

pub(super) const USE_EPOLL: Rule = Rule {
    id: "use-epoll",
    priority: Priority::Low,
    effect: "Seed 000 lists `use epoll` among the differences between its tuned and default \
             configs (which it puts at ~20-30% together). nginx already picks epoll on Linux \
             when `use` is absent, so alone expect no measurable change; an explicit select or \
             poll is what costs (every wake-up scans all connections).",
    check: use_epoll,
};

fn use_epoll(ctx: &Context) -> Vec<Finding> {
    let Some(events) = ctx.events() else {
        return Vec::new();
    };
    let node = events.child("use");
    let finding = match node.map(|n| n.arg0()) {
        Some("epoll") => return Vec::new(),
        Some(other) => Finding::new(
            "use epoll;",
            format!("`use {other}` forces an event method that scans every connection per wake-up"),
            change(vec![set(Some(events), "use", &["epoll"])]),
        )
        .priority(Priority::High),
        None => Finding::new(
            "use epoll;",
            "no `use` in events: nginx chooses epoll itself on Linux; saying so makes the choice \
             explicit and fails loudly where epoll is missing",
            change(vec![set(Some(events), "use", &["epoll"])]),
        ),
    };
    vec![finding.at(node.or(Some(events)))]
}

pub(super) const MULTI_ACCEPT: Rule = Rule {
    id: "multi-accept",
    priority: Priority::Low,
    effect: "Seed 000 lists it among the config differences it puts at ~20-30% together (its \
             test opens 1000 connections at once); seed 003's tuned config sets it.",
    check: multi_accept,
};

fn multi_accept(ctx: &Context) -> Vec<Finding> {
    let Some(events) = ctx.events() else {
        return Vec::new();
    };
    let node = events.child("multi_accept");
    if node.is_some_and(|n| n.arg0().eq_ignore_ascii_case("on")) {
        return Vec::new();
    }
    let why = "multi_accept is off: a worker accepts one new connection per wake-up, so a burst \
               of connections waits in the listen queue for many event-loop rounds";
    let edit = set(Some(events), "multi_accept", &["on"]);
    vec![Finding::new("multi_accept on;", why, change(vec![edit])).at(node.or(Some(events)))]
}
