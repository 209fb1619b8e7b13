//! `tare doctor`: which placements this machine can run, and what would make
//! its measurements noisy.

use std::fmt;
use std::process::Command;

use serde::Serialize;

use crate::docker;
use crate::lab;
use crate::spec::PlacementKind;

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
}

pub fn doctor() -> DoctorReport {
    let mut facts = Vec::new();
    let mut warnings = Vec::new();
    // SAFETY: plain syscall.
    let root = unsafe { libc::geteuid() } == 0;
    facts.push(("root".into(), root.to_string()));
    let docker = docker::engine_version();
    facts.push((
        "docker".into(),
        match &docker {
            Ok(v) => v.clone(),
            Err(e) => e.to_string(),
        },
    ));
    for (tool, flag) in [
        ("nft", "--version"),
        ("tc", "-V"),
        ("ip", "-V"),
        ("nginx", "-v"),
    ] {
        facts.push((
            tool.into(),
            tool_version(tool, flag).unwrap_or_else(|| "not found".into()),
        ));
    }
    let lab = lab::available();
    let netem = lab::netem_available();
    facts.push((
        "netem".into(),
        match &netem {
            Ok(()) => "available".into(),
            Err(e) => e.clone(),
        },
    ));
    let nginx = crate::targets::binary(&crate::spec::TargetSpec::new(
        crate::spec::TargetKind::Nginx,
    ));
    let postgres = crate::targets::postgres::bin_dir();
    facts.push((
        "postgres".into(),
        postgres
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|e| e.to_string()),
    ));

    let mut placements = Vec::new();
    for p in PlacementKind::ALL {
        let (available, detail) = if p == PlacementKind::Native {
            (true, "plain processes on the host".to_string())
        } else if p.is_docker() {
            match &docker {
                Ok(v) => (true, format!("Docker Engine {v}")),
                Err(e) => (false, e.to_string()),
            }
        } else {
            match &lab {
                Ok(()) => (
                    true,
                    "root, ip, nft and tc present (--netem needs sch_netem)".into(),
                ),
                Err(e) => (false, e.clone()),
            }
        };
        placements.push(PlacementCheck {
            placement: p.to_string(),
            available,
            detail,
        });
    }
    if nginx.is_err() {
        warnings
            .push("nginx not found: the nginx target needs nginx-light (scripts/setup.sh)".into());
    }
    if postgres.is_err() {
        warnings.push(
            "postgres not found: the postgres target needs postgresql (scripts/setup.sh)".into(),
        );
    }

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
            "2 CPUs: pin the server to one (server_cpus = \"1\") and the generator to the other, or they fight for cores (DESIGN.md reference runs pin nginx to CPU 1)".into(),
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
    DoctorReport {
        placements,
        facts,
        warnings,
    }
}

fn tool_version(tool: &str, flag: &str) -> Option<String> {
    let out = Command::new(tool).arg(flag).output().ok()?;
    let text = if out.stdout.is_empty() {
        out.stderr
    } else {
        out.stdout
    };
    Some(
        String::from_utf8_lossy(&text)
            .lines()
            .next()?
            .trim()
            .to_string(),
    )
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
            writeln!(f, "  {mark} {:<15} {}", p.placement, p.detail)?;
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
        Ok(())
    }
}
