//! Reverse-proxy settings (docs/studies.md, seed 003): keep-alive connections
//! to the upstream and response buffering.

use super::{change, replace, set, Context, Finding, Rule};
use crate::advise::change::Edit;
use crate::advise::view::{walk_blocks, Node};
use crate::advise::Priority;

/// Seed 003's pool size.
const POOL: &str = "100";

pub(super) const UPSTREAM_KEEPALIVE: Rule = Rule {
    id: "upstream-keepalive",
    priority: Priority::High,
    effect: "Seed 003 calls the upstream connection pool \"extremely important\" and credits \
             backend connection reuse, with worker_connections, for 12.5k -> 32k QPS, and the \
             pool, with tcp_nodelay and tcp_nopush, for mean latency 75 -> 29 ms (p99 \
             450 -> 120 ms it credits to buffering and connection management): without it \
             every proxied request opens and closes its own TCP connection to the backend.",
    check: upstream_keepalive,
};

/// A location that proxies, with the blocks above it (server, outer locations).
struct Proxying<'n, 'a> {
    chain: Vec<&'n Node<'a>>,
    location: &'n Node<'a>,
    /// The host part of `proxy_pass`: an upstream name or an address.
    target: String,
}

fn proxying<'n, 'a>(http: &'n Node<'a>) -> Vec<Proxying<'n, 'a>> {
    walk_blocks(&http.children, "location")
        .into_iter()
        .filter_map(|(chain, location)| {
            let pass = location.child("proxy_pass")?.arg0();
            let rest = pass.split_once("://").map(|(_, r)| r).unwrap_or(pass);
            let target = rest.split('/').next().unwrap_or(rest).to_string();
            Some(Proxying {
                chain,
                location,
                target,
            })
        })
        .collect()
}

/// The levels a location inherits from, nearest first: itself, outer blocks, http.
fn levels<'n, 'a>(http: &'n Node<'a>, p: &Proxying<'n, 'a>) -> Vec<&'n Node<'a>> {
    let mut out = vec![p.location];
    out.extend(p.chain.iter().rev().copied());
    out.push(http);
    out
}

/// The statement in effect for a directive that inherits (nearest level wins).
fn inherited<'n, 'a>(levels: &[&'n Node<'a>], name: &str) -> Option<&'n Node<'a>> {
    levels.iter().find_map(|l| l.child(name))
}

fn push_unique(edits: &mut Vec<Edit>, e: Edit) {
    if !edits.contains(&e) {
        edits.push(e);
    }
}

/// The edits a proxying location needs so upstream connections can be reused.
fn location_edits(http: &Node, p: &Proxying, edits: &mut Vec<Edit>, missing: &mut Vec<String>) {
    let levels = levels(http, p);
    if inherited(&levels, "proxy_http_version").map(|n| n.arg0()) != Some("1.1") {
        push_unique(edits, set(Some(p.location), "proxy_http_version", &["1.1"]));
        missing.push(format!(
            "location {} speaks HTTP/1.0 to the upstream",
            p.location.arg0()
        ));
    }
    // proxy_set_header is inherited only by levels that set none themselves.
    let defining = levels
        .iter()
        .copied()
        .find(|l| l.child("proxy_set_header").is_some());
    let cleared = defining.is_some_and(|l| {
        l.children_named("proxy_set_header").any(|h| {
            h.arg0().eq_ignore_ascii_case("connection")
                && h.args().get(1).is_some_and(|v| v.is_empty())
        })
    });
    if !cleared {
        let block = defining.unwrap_or(p.location);
        push_unique(
            edits,
            Edit::Set {
                block: Some(block.anchor()),
                directive: "proxy_set_header".into(),
                args: vec!["Connection".into(), String::new()],
                key_args: 1,
            },
        );
        missing.push(format!(
            "location {} passes \"Connection: close\" upstream",
            p.location.arg0()
        ));
    }
}

fn upstream_keepalive(ctx: &Context) -> Vec<Finding> {
    let Some(http) = ctx.http() else {
        return Vec::new();
    };
    let proxies = proxying(http);
    let mut findings = Vec::new();
    for upstream in http.children_named("upstream") {
        let name = upstream.arg0();
        let mut edits = Vec::new();
        let mut missing = Vec::new();
        let users: Vec<&Proxying> = proxies.iter().filter(|p| p.target == name).collect();
        if users.is_empty() {
            continue;
        }
        if upstream.child("keepalive").is_none() {
            edits.push(set(Some(upstream), "keepalive", &[POOL]));
            missing.push(format!("upstream {name} keeps no idle connections"));
        }
        for p in users {
            location_edits(http, p, &mut edits, &mut missing);
        }
        if edits.is_empty() {
            continue;
        }
        let why = format!(
            "{}: each request to {name} pays a TCP connect",
            missing.join("; ")
        );
        let title =
            format!("keepalive {POOL}; proxy_http_version 1.1; proxy_set_header Connection \"\";");
        findings.push(Finding::new(title, why, change(edits)).at(Some(upstream)));
    }
    let upstreams: Vec<&str> = http.children_named("upstream").map(|u| u.arg0()).collect();
    for p in proxies
        .iter()
        .filter(|p| !upstreams.contains(&p.target.as_str()) && !p.target.contains('$'))
    {
        let why = format!(
            "location {} proxies straight to {}: without an upstream block there is no \
             connection pool; define `upstream NAME {{ server {}; keepalive {POOL}; }}` and proxy to it",
            p.location.arg0(),
            p.target,
            p.target
        );
        findings.push(
            Finding::new("upstream with keepalive", why, change(Vec::new())).at(Some(p.location)),
        );
    }
    findings
}

pub(super) const PROXY_BUFFERING: Rule = Rule {
    id: "proxy-buffering",
    priority: Priority::Medium,
    effect: "Seed 003: buffering relieves the backend and lets nginx release the backend \
             connection sooner; recommended on for high-concurrency proxying. (tare's note, not \
             the seed's: nginx then feeds slow clients from its buffers; streaming responses \
             are the usual reason to turn it off.)",
    check: proxy_buffering,
};

fn proxy_buffering(ctx: &Context) -> Vec<Finding> {
    let Some(http) = ctx.http() else {
        return Vec::new();
    };
    let mut findings: Vec<Finding> = Vec::new();
    let mut seen = Vec::new();
    for p in proxying(http) {
        let levels = levels(http, &p);
        let Some(off) =
            inherited(&levels, "proxy_buffering").filter(|n| n.arg0().eq_ignore_ascii_case("off"))
        else {
            continue;
        };
        if seen.contains(&off.location()) {
            continue;
        }
        seen.push(off.location());
        let why = format!(
            "proxy_buffering off for location {}: the backend connection stays busy until the \
             slowest client has read the whole response",
            p.location.arg0()
        );
        findings.push(
            Finding::new(
                "proxy_buffering on;",
                why,
                change(vec![replace(off, vec!["on".into()])]),
            )
            .at(Some(off)),
        );
    }
    findings
}
