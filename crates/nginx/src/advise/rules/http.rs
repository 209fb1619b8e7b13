//! HTTP-level settings: file transfer, client keep-alive, the access log and
//! compression (seed 000's priorities 4-7, seed 003's tuned http block:
//! docs/studies.md, seed 000, "The tuned configuration"; seed 003, "Baseline
//! and tuned configurations").

use super::{change, number, replace, seconds, set, Context, Finding, Rule};
use crate::advise::view::{all_named, Node};
use crate::advise::Priority;

fn is_on(n: &Node) -> bool {
    n.arg0().eq_ignore_ascii_case("on")
}

pub(super) const SENDFILE_TCP_NOPUSH: Rule = Rule {
    id: "sendfile-tcp-nopush",
    priority: Priority::Medium,
    effect: "Seed 000 priority 4 (\"static files transfer slowly\"): sendfile copies file data \
             inside the kernel instead of through nginx's buffers; tcp_nopush then sends the \
             headers and the start of the file in full packets.",
    check: sendfile_tcp_nopush,
};

fn sendfile_tcp_nopush(ctx: &Context) -> Vec<Finding> {
    let Some(http) = ctx.http() else {
        return Vec::new();
    };
    let sendfile = http.child("sendfile");
    let nopush = http.child("tcp_nopush");
    let mut edits = Vec::new();
    let mut missing = Vec::new();
    if !sendfile.is_some_and(is_on) {
        edits.push(set(Some(http), "sendfile", &["on"]));
        missing.push(if sendfile.is_some() {
            "sendfile is off"
        } else {
            "sendfile is unset (default off)"
        });
    }
    if !nopush.is_some_and(is_on) {
        edits.push(set(Some(http), "tcp_nopush", &["on"]));
        missing.push(if nopush.is_some() {
            "tcp_nopush is off"
        } else {
            "tcp_nopush is unset (default off)"
        });
    }
    if edits.is_empty() {
        return Vec::new();
    }
    let cost = if sendfile.is_some_and(is_on) {
        "headers and file data leave in separate, partly filled packets"
    } else {
        "files are read into user space and written out again"
    };
    let why = format!("{} in the http block: {cost}", missing.join(" and "));
    vec![
        Finding::new("sendfile on; tcp_nopush on;", why, change(edits))
            .at(sendfile.or(nopush).or(Some(http))),
    ]
}

pub(super) const TCP_NODELAY: Rule = Rule {
    id: "tcp-nodelay",
    priority: Priority::Low,
    effect: "Seed 003 credits tcp_nodelay (with tcp_nopush and upstream keep-alive) for mean \
             latency 75 -> 29 ms. nginx's default is on; only an explicit off costs.",
    check: tcp_nodelay,
};

fn tcp_nodelay(ctx: &Context) -> Vec<Finding> {
    let Some(http) = ctx.http() else {
        return Vec::new();
    };
    all_named(std::slice::from_ref(http), "tcp_nodelay")
        .into_iter()
        .filter(|n| !is_on(n))
        .map(|n| {
            let why = "tcp_nodelay off: small responses on keep-alive connections wait for \
                       Nagle's algorithm (up to 40 ms with delayed ACKs)";
            Finding::new(
                "tcp_nodelay on;",
                why,
                change(vec![replace(n, vec!["on".into()])]),
            )
            .at(Some(n))
        })
        .collect()
}

pub(super) const KEEPALIVE_TIMEOUT: Rule = Rule {
    id: "keepalive-timeout",
    priority: Priority::Medium,
    effect: "Seed 000 priority 5 (\"frequent connection setup is expensive\"; tuned: 65 s). \
             Seed 003 recommends 15-30 s for proxies: long enough to reuse connections, short \
             enough not to hold worker_connections slots idle.",
    check: keepalive_timeout,
};

fn keepalive_timeout(ctx: &Context) -> Vec<Finding> {
    let Some(http) = ctx.http() else {
        return Vec::new();
    };
    all_named(std::slice::from_ref(http), "keepalive_timeout")
        .into_iter()
        .filter(|n| seconds(n.arg0()) == Some(0.0))
        .map(|n| {
            let why = "keepalive_timeout 0 turns client keep-alive off: every request pays a TCP \
                       handshake and a connection teardown";
            Finding::new(
                "keepalive_timeout 65;",
                why,
                change(vec![replace(n, vec!["65".into()])]),
            )
            .at(Some(n))
        })
        .collect()
}

/// Seed 003's tuned value.
const REQUESTS: &str = "10000";

pub(super) const KEEPALIVE_REQUESTS: Rule = Rule {
    id: "keepalive-requests",
    priority: Priority::Medium,
    effect:
        "Seed 000 priority 5; seed 003 raises it from 100 to 10000 in the tuned config that \
             went from 12.5k to 32k QPS: a connection closed after N requests must be opened again.",
    check: keepalive_requests,
};

fn keepalive_requests(ctx: &Context) -> Vec<Finding> {
    let Some(http) = ctx.http() else {
        return Vec::new();
    };
    all_named(std::slice::from_ref(http), "keepalive_requests")
        .into_iter()
        .filter_map(|n| number(n.arg0()).filter(|&v| v < 1000).map(|v| (n, v)))
        .map(|(n, v)| {
            let why = format!(
                "keepalive_requests {v}: a client connection is closed after {v} requests and \
                 reopened (nginx's own default is 1000 since 1.19.10)"
            );
            Finding::new(
                format!("keepalive_requests {REQUESTS};"),
                why,
                change(vec![replace(n, vec![REQUESTS.into()])]),
            )
            .at(Some(n))
        })
        .collect()
}

pub(super) const ACCESS_LOG_BUFFERED: Rule = Rule {
    id: "access-log-buffered",
    priority: Priority::Medium,
    effect: "Seed 000 priority 6; it puts the access log at 15-20% of throughput (its Docker \
             host-network rows: 30k req/s with the log, 36.5k without). A buffer (seed 000: 32k, \
             flush 5 s; seed 003: 64k, flush 1 min) keeps the log but writes once per buffer \
             instead of once per request; `access_log off` removes the cost entirely.",
    check: access_log,
};

fn access_log(ctx: &Context) -> Vec<Finding> {
    let Some(http) = ctx.http() else {
        return Vec::new();
    };
    let logs = all_named(std::slice::from_ref(http), "access_log");
    if logs.is_empty() {
        let why =
            "no access_log anywhere: nginx logs every request, unbuffered, to its compiled-in \
                   path; add `access_log PATH combined buffer=32k flush=5s;` (or `off`) to http";
        return vec![Finding::new(
            "access_log ... buffer=32k flush=5s;",
            why,
            change(Vec::new()),
        )
        .at(Some(http))];
    }
    logs.into_iter()
        .filter(|n| {
            let a = n.args();
            let target = n.arg0();
            !(target == "off"
                || target.starts_with("syslog:")
                || a.iter()
                    .any(|x| x.starts_with("buffer=") || x == "gzip" || x.starts_with("gzip=")))
        })
        .map(|n| {
            let mut args = n.args().to_vec();
            if args.len() == 1 {
                args.push("combined".into());
            }
            args.push("buffer=32k".into());
            args.push("flush=5s".into());
            let why = format!("access_log {} writes to disk once per request", n.arg0());
            Finding::new(
                format!("access_log {};", args.join(" ")),
                why,
                change(vec![replace(n, args)]),
            )
            .at(Some(n))
        })
        .collect()
}

pub(super) const GZIP_LEVEL: Rule = Rule {
    id: "gzip-level",
    priority: Priority::Low,
    effect: "Seed 000 priority 7: gzip trades CPU for bandwidth; its tuned config uses level 2. \
             That higher levels cost more CPU for little further saving is tare's \
             expectation, not a seed's: `tare tune` measures it.",
    check: gzip_level,
};

fn gzip_enabled(http: &Node) -> bool {
    all_named(std::slice::from_ref(http), "gzip")
        .into_iter()
        .any(is_on)
}

fn gzip_level(ctx: &Context) -> Vec<Finding> {
    let Some(http) = ctx.http() else {
        return Vec::new();
    };
    if !gzip_enabled(http) {
        return Vec::new();
    }
    all_named(std::slice::from_ref(http), "gzip_comp_level")
        .into_iter()
        .filter_map(|n| number(n.arg0()).filter(|&v| v >= 5).map(|v| (n, v)))
        .map(|(n, v)| {
            let why = format!("gzip_comp_level {v} spends CPU, which a loaded server lacks, for little gain over level 2");
            Finding::new("gzip_comp_level 2;", why, change(vec![replace(n, vec!["2".into()])])).at(Some(n))
        })
        .collect()
}

/// Seed 000's list.
const TYPES: &[&str] = &[
    "text/plain",
    "text/css",
    "application/json",
    "application/javascript",
];

pub(super) const GZIP_TYPES: Rule = Rule {
    id: "gzip-types",
    priority: Priority::Low,
    effect: "Seed 000 priority 7: with gzip on, its tuned config compresses text/plain, text/css, \
             application/json and application/javascript; without gzip_types only text/html is.",
    check: gzip_types,
};

fn gzip_types(ctx: &Context) -> Vec<Finding> {
    let Some(http) = ctx.http() else {
        return Vec::new();
    };
    if !gzip_enabled(http) || !all_named(std::slice::from_ref(http), "gzip_types").is_empty() {
        return Vec::new();
    }
    let why = "gzip is on but gzip_types is unset: only text/html is compressed, CSS, JavaScript \
               and JSON go out uncompressed";
    let edit = set(Some(http), "gzip_types", TYPES);
    vec![Finding::new(
        format!("gzip_types {};", TYPES.join(" ")),
        why,
        change(vec![edit]),
    )
    .at(Some(http))]
}
