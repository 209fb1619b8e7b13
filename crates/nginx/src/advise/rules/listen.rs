//! The listen queue: nginx's backlog against the kernel's `net.core.somaxconn`.

use super::{change, number, replace, Context, Finding, Rule};
use crate::advise::change::Sysctl;
use crate::advise::view::{walk_blocks, Node};
use crate::advise::Priority;

/// nginx's backlog when `listen` gives none (`NGX_LISTEN_BACKLOG`, 511 on Linux).
const NGINX_DEFAULT: u64 = 511;
/// What tare suggests: the kernel's own default somaxconn since Linux 5.4, enough
/// for the seeds' 1000 connections opened at once (seed 000's wrk -c1000, seed
/// 003's 1000 JMeter threads: docs/studies.md). (Seed 003 uses 65535.)
const SUGGESTED: u64 = 4096;

pub(super) const LISTEN_BACKLOG: Rule = Rule {
    id: "listen-backlog",
    priority: Priority::Medium,
    effect: "Seed 003's tuned config raises the backlog (backlog=65535, \"longer listen \
             queue\"), but credits its 0.5% -> 0 errors (connection resets) to \
             worker_connections and worker_rlimit_nofile, not to the backlog. tare's reasoning: \
             with 1000 clients connecting at once (seed 000: wrk -c1000; seed 003: 1000 \
             threads) a short accept queue can overflow, and the kernel then drops or resets \
             connections.",
    check: listen_backlog,
};

/// `listen` addresses that share one socket compare equal: `80`, `*:80` and
/// `0.0.0.0:80` are the same.
fn address(arg: &str) -> String {
    if arg.starts_with("unix:") {
        return arg.to_string();
    }
    if arg.chars().all(|c| c.is_ascii_digit()) {
        return format!("*:{arg}");
    }
    if let Some(rest) = arg.strip_prefix('[') {
        return match rest.split_once("]:") {
            Some(_) => arg.to_string(),
            None => format!("{arg}:80"),
        };
    }
    match arg.rsplit_once(':') {
        Some(("0.0.0.0", port)) => format!("*:{port}"),
        Some(_) => arg.to_string(),
        None if arg == "*" => "*:80".into(),
        None => format!("{arg}:80"),
    }
}

fn backlog(n: &Node) -> Option<u64> {
    n.args()
        .iter()
        .find_map(|a| a.strip_prefix("backlog="))
        .and_then(number)
}

fn listen_backlog(ctx: &Context) -> Vec<Finding> {
    let Some(http) = ctx.http() else {
        return Vec::new();
    };
    // Listening sockets in order of first appearance, with every listen naming each.
    let mut sockets: Vec<(String, Vec<&Node>)> = Vec::new();
    for (_, server) in walk_blocks(std::slice::from_ref(http), "server") {
        for listen in server.children_named("listen") {
            let key = address(listen.arg0());
            match sockets.iter_mut().find(|(k, _)| *k == key) {
                Some((_, all)) => all.push(listen),
                None => sockets.push((key, vec![listen])),
            }
        }
    }
    let somaxconn = ctx.host.somaxconn;
    let mut findings = Vec::new();
    let mut defaults = Vec::new();
    for (addr, listens) in &sockets {
        match listens.iter().find_map(|n| backlog(n).map(|b| (n, b))) {
            Some((node, b)) => {
                if let Some(max) = somaxconn.filter(|&m| b > m) {
                    let why = format!(
                        "listen {addr} asks for backlog={b} but net.core.somaxconn is {max}: the \
                         kernel silently caps the queue at {max}"
                    );
                    let mut c = change(Vec::new());
                    c.sysctls.push(Sysctl {
                        name: "net.core.somaxconn".into(),
                        value: b.to_string(),
                    });
                    findings.push(
                        Finding::new(format!("sysctl net.core.somaxconn={b}"), why, c)
                            .at(Some(node)),
                    );
                }
            }
            None => defaults.push((addr, listens[0])),
        }
    }
    if !defaults.is_empty() {
        let addrs: Vec<&str> = defaults.iter().map(|(a, _)| a.as_str()).collect();
        let edits = defaults
            .iter()
            .map(|(_, n)| {
                let mut args = n.args().to_vec();
                args.push(format!("backlog={SUGGESTED}"));
                replace(n, args)
            })
            .collect();
        let mut c = change(edits);
        let mut why = format!(
            "listen {} use{} nginx's default backlog of {NGINX_DEFAULT}",
            addrs.join(", "),
            if addrs.len() == 1 { "s" } else { "" }
        );
        if let Some(max) = somaxconn.filter(|&m| m < SUGGESTED) {
            why.push_str(&format!("; net.core.somaxconn is {max}, so raise it too"));
            c.sysctls.push(Sysctl {
                name: "net.core.somaxconn".into(),
                value: SUGGESTED.to_string(),
            });
        }
        findings.push(
            Finding::new(format!("listen ... backlog={SUGGESTED};"), why, c)
                .at(Some(defaults[0].1)),
        );
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::address;

    #[test]
    fn addresses_sharing_a_socket_compare_equal() {
        assert_eq!(address("80"), address("*:80"));
        assert_eq!(address("0.0.0.0:80"), "*:80");
        assert_eq!(address("[::]:80"), "[::]:80");
        assert_eq!(address("127.0.0.1"), "127.0.0.1:80");
    }
}
