//! What to do about a step's cost (docs/profiles.md, "What removes it"):
//! where a step's differential profile puts its largest move on a cause
//! whose remedy is known, the report names the change that removes it
//! and the experiment lines that would measure that change. The causes
//! and remedies are data ([`RULES`]); each comes from the study that found
//! it (docs/studies.md).

use serde::Serialize;

use crate::resources::StepProfile;

/// Where a cause shows in a differential profile.
#[derive(Clone, Copy, Debug)]
enum Sign {
    /// A component's samples, all subsystems (`docker-proxy`).
    Component(&'static str),
    /// A kernel subsystem over every component (`seccomp`).
    Subsystem(&'static str),
    /// A function, or a process's user space (`[fuse-overlayfs]`).
    Function(&'static str),
}

/// A known cause and what removes it.
struct Rule {
    cause: &'static str,
    signs: &'static [Sign],
    change: &'static str,
    /// The experiment lines that measure the change; `None` when no factor
    /// tare varies can (then `change` says how to measure by hand).
    experiment: Option<&'static str>,
}

const RULES: &[Rule] = &[
    Rule {
        cause: "docker-proxy",
        signs: &[Sign::Component("docker-proxy"), Sign::Function("[docker-proxy]")],
        change: "Docker's user-space proxy relays every request to a published port on loopback: set \"userland-proxy\": false in /etc/docker/daemon.json (the port is then reached through iptables DNAT), or reach the container at its own address",
        experiment: Some("[factors]\nplacement = [\"docker-publish\", \"lab-nat\", \"docker-bridge\"]  # lab-nat: the published port by kernel DNAT, without the proxy"),
    },
    Rule {
        cause: "fuse-overlayfs",
        signs: &[
            Sign::Function("[fuse-overlayfs]"),
            Sign::Subsystem("FUSE"),
            Sign::Subsystem("overlayfs"),
        ],
        change: "the image's layers are served through the overlay filesystem (in user space with fuse-overlayfs): put the content on a volume or a host directory, or use Docker's overlay2 storage driver",
        experiment: Some("[factors]\nstorage = [\"image\", \"volume\", \"host-path\"]"),
    },
    Rule {
        cause: "seccomp",
        signs: &[Sign::Subsystem("seccomp")],
        change: "the container's seccomp profile filters every system call: a shorter profile, or --security-opt seccomp=unconfined where the container is trusted",
        experiment: Some("[factors]\nseccomp = [\"default\", \"unconfined\"]"),
    },
    Rule {
        cause: "conntrack",
        signs: &[Sign::Subsystem("conntrack")],
        change: "connection tracking follows every connection: exempt the benchmark's port (nft add rule inet raw prerouting tcp dport PORT notrack, and the same in output), or size the table (net.netfilter.nf_conntrack_max); tare varies neither: run the experiment before and after the rule and `tare compare` the two runs",
        experiment: None,
    },
];

/// A step's known cause and its remedy.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Remedy {
    /// The cause (`docker-proxy`, `fuse-overlayfs`, `seccomp`, `conntrack`).
    pub cause: String,
    /// The cell that carries it (the step's first or second).
    pub cell: String,
    /// How many µs per unit more that cell spends on it.
    pub extra_us: f64,
    /// What removes it.
    pub change: String,
    /// Experiment lines that measure the change; absent when no factor does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experiment: Option<String>,
}

/// A cause counts when it moved at least this much (µs per unit)...
const MIN_US: f64 = 0.2;
/// ...and surely (its interval excludes no change) or, without an
/// interval, by at least this share of the step's largest subsystem move.
/// Not a share alone: on a shared machine other processes' user space can
/// be the largest move of every step.
const MIN_SHARE: f64 = 0.3;

fn moved(p: &StepProfile, sign: Sign) -> Option<(f64, Option<(f64, f64)>)> {
    match sign {
        Sign::Component(c) => {
            let rows: Vec<_> = p.components_us.iter().filter(|r| r.0 == c).collect();
            (!rows.is_empty()).then(|| (rows.iter().map(|r| r.3 - r.2).sum(), None))
        }
        Sign::Subsystem(s) => p
            .subsystems_us
            .iter()
            .find(|r| r.0 == s)
            .map(|r| (r.2 - r.1, p.subsystems_moved_ci_us.get(s).copied())),
        Sign::Function(f) => p
            .functions_us
            .iter()
            .find(|r| r.0 == f)
            .map(|r| (r.2 - r.1, p.functions_moved_ci_us.get(f).copied())),
    }
}

/// The remedy of the step `from → to`: its largest known cause that
/// moved enough (`MIN_US`, `MIN_SHARE`).
pub(crate) fn of(p: &StepProfile, from: &str, to: &str) -> Option<Remedy> {
    let largest = p
        .subsystems_us
        .iter()
        .map(|r| (r.2 - r.1).abs())
        .fold(0.0, f64::max);
    let mut best: Option<(&Rule, f64)> = None;
    for rule in RULES {
        // Each sign on its own: a process's user space may be unsure where
        // its kernel subsystem is sure.
        for (m, ci) in rule.signs.iter().filter_map(|s| moved(p, *s)) {
            let counts = match ci {
                Some((lo, hi)) => lo > 0.0 || hi < 0.0,
                None => m.abs() >= MIN_SHARE * largest,
            };
            if counts && m.abs() >= MIN_US && best.is_none_or(|(_, b)| m.abs() > b.abs()) {
                best = Some((rule, m));
            }
        }
    }
    let (rule, m) = best?;
    Some(Remedy {
        cause: rule.cause.into(),
        cell: if m > 0.0 { to } else { from }.into(),
        extra_us: m.abs(),
        change: rule.change.into(),
        experiment: rule.experiment.map(String::from),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(rows: &[(&str, &str, f64, f64)]) -> StepProfile {
        let mut p = StepProfile {
            components_us: rows
                .iter()
                .map(|(c, s, x, y)| (c.to_string(), s.to_string(), *x, *y))
                .collect(),
            ..Default::default()
        };
        let mut subs = std::collections::BTreeMap::<String, (f64, f64)>::new();
        for (_, s, x, y) in rows {
            let e = subs.entry(s.to_string()).or_default();
            e.0 += x;
            e.1 += y;
        }
        p.subsystems_us = subs.into_iter().map(|(s, (x, y))| (s, x, y)).collect();
        p
    }

    #[test]
    fn the_largest_known_cause_is_named_with_the_cell_that_carries_it() {
        // docker-publish → docker-host: the proxy's 12 µs leave.
        let p = step(&[
            ("docker-proxy", "user space", 7.0, 0.0),
            ("docker-proxy", "TCP/IP", 5.0, 0.0),
            ("server", "seccomp", 1.0, 1.0),
        ]);
        let r = of(&p, "docker-publish", "docker-host").unwrap();
        assert_eq!(
            (r.cause.as_str(), r.cell.as_str()),
            ("docker-proxy", "docker-publish")
        );
        assert!((r.extra_us - 12.0).abs() < 1e-9);
        assert!(r.change.contains("userland-proxy"));
        assert!(r.experiment.unwrap().contains("lab-nat"));
        // native → docker-host: seccomp appears.
        let p = step(&[
            ("server", "seccomp", 0.0, 2.0),
            ("server", "TCP/IP", 10.0, 10.5),
        ]);
        let r = of(&p, "native", "docker-host").unwrap();
        assert_eq!(
            (r.cause.as_str(), r.cell.as_str()),
            ("seccomp", "docker-host")
        );
        assert_eq!(
            r.experiment.as_deref(),
            Some("[factors]\nseccomp = [\"default\", \"unconfined\"]")
        );
        // conntrack: named, with no factor to measure it.
        let r = of(&step(&[("generator", "conntrack", 0.0, 1.0)]), "a", "b").unwrap();
        assert!(r.experiment.is_none() && r.change.contains("notrack"));
    }

    #[test]
    fn a_small_or_unsure_or_unknown_move_names_nothing() {
        // Under MIN_US.
        assert!(of(&step(&[("server", "seccomp", 0.0, 0.1)]), "a", "b").is_none());
        // A small share of a step whose largest move is elsewhere.
        let p = step(&[
            ("server", "seccomp", 0.0, 0.5),
            ("server", "TCP/IP", 0.0, 5.0),
        ]);
        assert!(of(&p, "a", "b").is_none());
        // An interval that spans no change.
        let mut p = step(&[("server", "seccomp", 0.0, 2.0)]);
        p.subsystems_moved_ci_us
            .insert("seccomp".into(), (-0.5, 4.5));
        assert!(of(&p, "a", "b").is_none());
        // A cause with no known remedy.
        assert!(of(&step(&[("server", "bridge", 0.0, 3.0)]), "a", "b").is_none());
    }

    /// A sure move counts beside a larger one elsewhere (other processes'
    /// user space on a shared machine), and a cause's sure sign counts
    /// where its larger sign is unsure.
    #[test]
    fn a_sure_move_counts_beside_larger_noise() {
        let mut p = step(&[
            ("rest of the machine", "user space", 200.0, 100.0),
            ("server", "FUSE", 15.0, 0.2),
        ]);
        p.subsystems_moved_ci_us
            .insert("FUSE".into(), (-19.0, -10.0));
        p.functions_us.push(("[fuse-overlayfs]".into(), 40.0, 10.0));
        p.functions_moved_ci_us
            .insert("[fuse-overlayfs]".into(), (-90.0, 30.0));
        let r = of(&p, "storage=image", "storage=volume").unwrap();
        assert_eq!(
            (r.cause.as_str(), r.cell.as_str()),
            ("fuse-overlayfs", "storage=image")
        );
        assert!((r.extra_us - 14.8).abs() < 1e-9, "{r:?}");
    }
}
