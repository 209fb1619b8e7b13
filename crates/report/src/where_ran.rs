//! Where each process ran: the monitor's `Summary::cpus_seen` (group → CPU →
//! share of its CPU time, sampled from `/proc/<pid>/stat`'s `processor`)
//! merged over a cell's trials, written compactly
//! (`server CPU 1; docker-proxy CPU 0 (70%), 1 (30%)`), and the helpers
//! that shared the server's CPU said in words: tare pins the server and the
//! generator (`[cpus]`) but not the helpers it does not start.

use std::collections::{BTreeMap, BTreeSet};

use tare_monitor::MonitorRecord;

/// Group → CPU → share of the group's CPU time seen there.
pub(crate) type CpusSeen = BTreeMap<String, BTreeMap<u32, f64>>;

/// A server CPU is one where the server spent at least this share of its
/// time; below it, a CPU it passed through (tick sampling's noise).
const SERVER_CPU_MIN: f64 = 0.05;

/// A helper is said to share the server's CPU when at least this share of
/// its time was there.
const SHARED_MIN: f64 = 0.10;

/// Adds one trial's record, each group weighed by the CPU seconds it used
/// in the trial (its summary), so a busy trial counts for more than an
/// idle one; a group whose time is unknown counts as one second.
pub(crate) fn add(sum: &mut CpusSeen, m: &MonitorRecord) {
    let c = &m.summary.cpu_s;
    for (group, shares) in &m.summary.cpus_seen {
        let weight = match group.as_str() {
            "server" => c.server,
            "generator" => c.generator,
            w => c.watched.get(w).copied().unwrap_or(0.0),
        };
        let weight = if weight > 0.0 { weight } else { 1.0 };
        let e = sum.entry(group.clone()).or_default();
        for (&cpu, &s) in shares {
            *e.entry(cpu).or_default() += s * weight;
        }
    }
}

/// Turns sums from [`add`] into shares again.
pub(crate) fn normalize(sum: CpusSeen) -> CpusSeen {
    sum.into_iter()
        .filter_map(|(g, cpus)| {
            let total: f64 = cpus.values().sum();
            (total > 0.0).then(|| (g, cpus.into_iter().map(|(c, v)| (c, v / total)).collect()))
        })
        .collect()
}

/// The groups in reading order: the server, the generator, then the rest
/// by name.
fn ordered(seen: &CpusSeen) -> Vec<(&str, &BTreeMap<u32, f64>)> {
    let rank = |g: &str| match g {
        "server" => 0,
        "generator" => 1,
        _ => 2,
    };
    let mut v: Vec<_> = seen.iter().map(|(g, c)| (g.as_str(), c)).collect();
    v.sort_by_key(|(g, _)| rank(g));
    v
}

/// `server CPU 1; generator CPU 0; docker-proxy CPU 0 (70%), 1 (30%)`.
pub(crate) fn line(seen: &CpusSeen) -> String {
    ordered(seen)
        .into_iter()
        .map(|(g, cpus)| format!("{g} CPU {}", cpus_text(cpus)))
        .collect::<Vec<_>>()
        .join("; ")
}

/// `0 (70%), 1 (30%)`, most used first: a CPU under 0.5% of the group's
/// time is left out; one alone has no share.
pub(crate) fn cpus_text(cpus: &BTreeMap<u32, f64>) -> String {
    let mut kept: Vec<(u32, f64)> = cpus
        .iter()
        .map(|(&c, &s)| (c, s))
        .filter(|(_, s)| *s >= 0.005)
        .collect();
    kept.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    match kept.as_slice() {
        [(c, _)] => c.to_string(),
        _ => kept
            .iter()
            .map(|(c, s)| format!("{c} ({:.0}%)", s * 100.0))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Every group of any cell, in reading order (the HTML table's columns).
pub(crate) fn groups<'a>(cells: impl Iterator<Item = &'a CpusSeen>) -> Vec<String> {
    let mut all = CpusSeen::new();
    for c in cells {
        for g in c.keys() {
            all.entry(g.clone()).or_default();
        }
    }
    ordered(&all)
        .into_iter()
        .map(|(g, _)| g.to_string())
        .collect()
}

/// The CPUs the server ran on (at least [`SERVER_CPU_MIN`] of its time).
fn server_cpus(seen: &CpusSeen) -> BTreeSet<u32> {
    seen.get("server")
        .map(|c| {
            c.iter()
                .filter(|(_, &s)| s >= SERVER_CPU_MIN)
                .map(|(&c, _)| c)
                .collect()
        })
        .unwrap_or_default()
}

/// Each other group that spent at least [`SHARED_MIN`] of its time on the
/// server's CPUs, in words (`docker-proxy ran on the server's CPU 1 for 80%
/// of its time`). Nothing when the server ran on every CPU seen: then no
/// placement kept anything apart from it.
pub(crate) fn shared_with_server(seen: &CpusSeen) -> Vec<String> {
    let server = server_cpus(seen);
    let all: BTreeSet<u32> = seen.values().flat_map(|c| c.keys().copied()).collect();
    if server.is_empty() || server == all {
        return Vec::new();
    }
    let list = server
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let cpu = if server.len() == 1 { "CPU" } else { "CPUs" };
    ordered(seen)
        .into_iter()
        .filter(|(g, _)| *g != "server")
        .filter_map(|(g, cpus)| {
            let on: f64 = server.iter().filter_map(|c| cpus.get(c)).sum();
            (on >= SHARED_MIN).then(|| {
                format!(
                    "{g} ran on the server's {cpu} {list} for {:.0}% of its time",
                    on * 100.0
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(groups: &[(&str, &[(u32, f64)])]) -> CpusSeen {
        groups
            .iter()
            .map(|(g, c)| (g.to_string(), c.iter().copied().collect()))
            .collect()
    }

    #[test]
    fn a_helper_on_the_servers_cpu_is_said() {
        let s = seen(&[
            ("docker-proxy", &[(0, 0.2), (1, 0.8)]),
            ("generator", &[(0, 1.0)]),
            ("ksoftirqd/*", &[(1, 0.998), (0, 0.002)]),
            ("server", &[(1, 0.99), (0, 0.01)]),
        ]);
        assert_eq!(
            line(&s),
            "server CPU 1 (99%), 0 (1%); generator CPU 0; docker-proxy CPU 1 (80%), 0 (20%); ksoftirqd/* CPU 1"
        );
        assert_eq!(
            shared_with_server(&s),
            [
                "docker-proxy ran on the server's CPU 1 for 80% of its time",
                "ksoftirqd/* ran on the server's CPU 1 for 100% of its time"
            ]
        );
        // A server free on every CPU keeps nothing apart: nothing to say.
        let free = seen(&[
            ("server", &[(0, 0.5), (1, 0.5)]),
            ("docker-proxy", &[(0, 1.0)]),
        ]);
        assert!(shared_with_server(&free).is_empty());
    }

    #[test]
    fn trials_are_weighed_by_the_cpu_each_group_used() {
        let mut a = MonitorRecord::default();
        a.summary.cpu_s.server = 3.0;
        a.summary.cpus_seen = seen(&[("server", &[(1, 1.0)])]);
        let mut b = MonitorRecord::default();
        b.summary.cpu_s.server = 1.0;
        b.summary.cpus_seen = seen(&[("server", &[(0, 1.0)])]);
        let mut sum = CpusSeen::new();
        add(&mut sum, &a);
        add(&mut sum, &b);
        let s = normalize(sum);
        assert!((s["server"][&1] - 0.75).abs() < 1e-12, "{s:?}");
        assert_eq!(line(&s), "server CPU 1 (75%), 0 (25%)");
    }
}
