//! `tare doctor`: which placements this machine can run, and what would make
//! its measurements noisy.

use std::fmt;

use serde::Serialize;

use crate::placements;
use crate::placements::PlacementKind;
use crate::targets;
use crate::targets::TargetKind;

#[derive(Debug, Clone, Serialize)]
pub struct PlacementCheck {
    pub placement: String,
    pub available: bool,
    /// Why not, or what it relies on.
    pub detail: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct DoctorReport {
    pub placements: Vec<PlacementCheck>,
    /// Facts about the machine (root, tools, versions, cores).
    pub facts: Vec<(String, String)>,
    /// Things that make measurements noisy or unfair, with what to do.
    pub warnings: Vec<String>,
    /// The Debian packages that would make every placement and target
    /// above available, in the order the report names them (empty: none).
    pub install: Vec<String>,
}

/// What this machine can run (each placement and target) and what
/// would make it noisy.
pub fn doctor() -> DoctorReport {
    let mut facts = Vec::new();
    let mut warnings = Vec::new();
    // SAFETY: plain syscall.
    let root = unsafe { libc::geteuid() } == 0;
    facts.push(("root".into(), root.to_string()));
    let placements = placement_checks(&mut facts, &mut warnings);
    target_versions(&mut facts, &mut warnings);
    machine_noise(&mut facts, &mut warnings);
    facts.push(("cgroup".into(), cgroup_version().into()));
    let install = packages_named(
        placements
            .iter()
            .filter(|p| !p.available)
            .map(|p| p.detail.as_str())
            .chain(warnings.iter().map(String::as_str)),
    );
    DoctorReport {
        placements,
        facts,
        warnings,
        install,
    }
}

/// Every placement, available or why not (its mechanism's and its own
/// needs); each mechanism's facts and warnings.
fn placement_checks(
    facts: &mut Vec<(String, String)>,
    warnings: &mut Vec<String>,
) -> Vec<PlacementCheck> {
    let mut availability = Vec::new();
    for m in placements::mechanisms() {
        availability.push((m.name(), m.available()));
        facts.extend(m.facts());
        warnings.extend(m.warnings());
    }
    PlacementKind::all()
        .map(|p| {
            let (available, detail) = match availability.iter().find(|(m, _)| *m == p.mechanism()) {
                Some((_, Ok(detail))) => match p.requires() {
                    Ok(()) => (true, detail.clone()),
                    Err(why) => (false, why),
                },
                Some((_, Err(why))) => (false, why.clone()),
                None => (false, "no mechanism".into()),
            };
            PlacementCheck {
                placement: p.to_string(),
                available,
                detail,
            }
        })
        .collect()
}

/// Each built-in target's server version, or why it cannot run here.
fn target_versions(facts: &mut Vec<(String, String)>, warnings: &mut Vec<String>) {
    // A user's service or image names its own program in its experiment.
    for t in TargetKind::all().map(TargetKind::target) {
        if t.service.is_some() || t.oci.is_some() {
            continue;
        }
        match targets::binary(&t) {
            Ok(bin) => facts.push((
                t.name().to_string(),
                t.kind
                    .get()
                    .version(&bin)
                    .unwrap_or_else(|| bin.display().to_string()),
            )),
            Err(e) => warnings.push(match target_package(t.name()) {
                Some(pkg) => format!(
                    "the {} target cannot run here: {e} (Debian: apt-get install {pkg})",
                    t.name()
                ),
                None => format!("the {} target cannot run here: {e}", t.name()),
            }),
        }
    }
}

/// What on this machine moves results: too few CPUs, the frequency
/// governor, turbo, other load, a hypervisor's steal time.
fn machine_noise(facts: &mut Vec<(String, String)>, warnings: &mut Vec<String>) {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    facts.push(("cpus".into(), cores.to_string()));
    if cores < 2 {
        warnings.push(
            "one CPU: generator and server share it, so every result measures both; use a machine with 2+ cores".into(),
        );
    } else if cores == 2 {
        warnings.push(
            "2 CPUs: the server and the generator fight for cores unless each has its own; `tare run` pins them apart by default (experiment key [cpus], default auto: generator on CPU 0, server on CPU 1), `tare http`/`tare pg` with --cpus (docs/experiments.md, \"[cpus]\")".into(),
        );
    }
    match governors() {
        Some(g) if g.iter().any(|g| g != "performance") => warnings.push(format!(
            "CPU frequency governor is {} (not performance): clock speed varies with load; set it with cpupower frequency-set -g performance",
            g.join(",")
        )),
        Some(_) => {}
        None => facts.push(("cpu governor".into(), "not exposed (virtual machine?)".into())),
    }
    if std::fs::read_to_string("/sys/devices/system/cpu/intel_pstate/no_turbo")
        .is_ok_and(|s| s.trim() == "0")
    {
        warnings.push(
            "turbo boost is on: clock speed depends on temperature and other cores' load".into(),
        );
    }
    if let Some(load) = std::fs::read_to_string("/proc/loadavg").ok().and_then(|s| {
        s.split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
    }) {
        facts.push(("load average (1 min)".into(), format!("{load:.2}")));
        // More than a quarter of a core busy on average before tare starts:
        // something else competes for the CPUs being measured.
        if load > 0.25 * cores as f64 {
            warnings.push(format!(
                "load average {load:.2} on {cores} CPUs: other work is running; results will be noisy"
            ));
        }
    }
    if let Some(steal) = steal_fraction(std::time::Duration::from_millis(500)) {
        facts.push((
            "steal time".into(),
            format!("{:.1}% of CPU time (0.5 s sample)", steal * 100.0),
        ));
        // A hypervisor giving this guest's CPUs to others: the same trial
        // runs slower or faster with the neighbours' load, whatever tare does.
        if steal > 0.02 {
            warnings.push(format!(
                "steal time {:.1}%: the hypervisor runs other guests on these CPUs, so results move with their load; raise [trials] count and max (interleaved rounds share the drift)",
                steal * 100.0
            ));
        }
    }
}

/// The Debian packages of a built-in target's server (scripts/setup.sh
/// installs the same).
fn target_package(target: &str) -> Option<&'static str> {
    Some(match target {
        "nginx" | "nginx-proxy" => "nginx-light",
        "postgres" => "postgresql",
        "redis" => "redis-server",
        "mariadb" => "mariadb-server",
        "tool" => "fio hpcc sysbench",
        _ => return None,
    })
}

/// Every package named by a reason's "apt-get install a b c" (up to its
/// closing parenthesis or `;`), once each, in the order first named.
fn packages_named<'a>(reasons: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for reason in reasons {
        for part in reason.split("apt-get install ").skip(1) {
            let list = part.split([')', ';', ':', ',']).next().unwrap_or_default();
            for pkg in list.split_whitespace() {
                let plain = pkg
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+-.".contains(c));
                if plain && !out.iter().any(|p| p == pkg) {
                    out.push(pkg.to_string());
                }
            }
        }
    }
    out
}

/// The share of CPU time stolen by the hypervisor over `sample`, from the
/// `cpu` line of /proc/stat (its 8th value is steal).
fn steal_fraction(sample: std::time::Duration) -> Option<f64> {
    fn read() -> Option<Vec<u64>> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        line.split_whitespace()
            .skip(1)
            .map(|v| v.parse().ok())
            .collect()
    }
    let a = read()?;
    std::thread::sleep(sample);
    let b = read()?;
    let d: Vec<u64> = b
        .iter()
        .zip(&a)
        .map(|(b, a)| b.saturating_sub(*a))
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is in user).
    let total: u64 = d.iter().take(8).sum();
    let steal = *d.get(7)?;
    (total > 0).then(|| steal as f64 / total as f64)
}

/// `v2` (unified hierarchy) or `v1`: which files say a server's limits
/// (`cgroup.rs` reads both).
fn cgroup_version() -> &'static str {
    if std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        "v2 (unified)"
    } else {
        "v1"
    }
}

fn governors() -> Option<Vec<String>> {
    let mut g: Vec<String> = std::fs::read_dir("/sys/devices/system/cpu")
        .ok()?
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("cpufreq/scaling_governor")).ok())
        .map(|s| s.trim().to_string())
        .collect();
    if g.is_empty() {
        return None;
    }
    g.sort();
    g.dedup();
    Some(g)
}

impl fmt::Display for DoctorReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "placements:")?;
        for p in &self.placements {
            let mark = if p.available { "yes" } else { "no " };
            writeln!(f, "  {mark} {:<23} {}", p.placement, p.detail)?;
        }
        writeln!(f, "machine:")?;
        for (k, v) in &self.facts {
            writeln!(f, "  {k:<22} {v}")?;
        }
        if self.warnings.is_empty() {
            writeln!(f, "noise: nothing found")?;
        } else {
            writeln!(f, "noise and fairness:")?;
            for w in &self.warnings {
                writeln!(f, "  ! {w}")?;
            }
        }
        if !self.install.is_empty() {
            writeln!(
                f,
                "to run everything above here: sudo apt-get install {}",
                self.install.join(" ")
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_line_gathers_each_named_package_once() {
        let reasons = [
            "missing ip (Debian: apt-get install iproute2 nftables)",
            "no qemu-system-x86_64 (Debian: apt-get install qemu-system-x86)",
            "podman is not installed (Debian: apt-get install podman netavark aardvark-dns; or scripts/setup.sh)",
            "the nginx target cannot run here: no nginx (Debian: apt-get install nginx-light)",
            "no mkfs.ext4: storage = \"volume\" fails (Debian: apt-get install e2fsprogs)",
            "again (Debian: apt-get install nftables)",
            "2 CPUs: nothing to install",
        ];
        assert_eq!(
            packages_named(reasons.into_iter()),
            [
                "iproute2",
                "nftables",
                "qemu-system-x86",
                "podman",
                "netavark",
                "aardvark-dns",
                "nginx-light",
                "e2fsprogs"
            ]
        );
    }

    #[test]
    fn every_built_in_server_target_names_its_package() {
        for t in TargetKind::all().map(TargetKind::target) {
            if t.service.is_some() || t.oci.is_some() || ["tare-serve", "net"].contains(&t.name()) {
                continue;
            }
            assert!(target_package(t.name()).is_some(), "{}", t.name());
        }
    }
}
