//! Provenance (`provenance.json`): what produced a run, so that a number
//! read a year later can be trusted or explained (after
//! ripgrep's `benchsuite/runs/<date-host>/`). Every probe is best-effort: a
//! missing tool is recorded as `null`, never an error.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// What `tare --version` prints: the version and, when tare was built from
/// a git checkout, the commit (`git describe`, `-dirty` with local changes).
pub const VERSION: &str = env!("TARE_VERSION_LINE");

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Provenance {
    pub tare_version: String,
    /// `git describe` of the source tree tare was built from, when known.
    pub tare_commit: Option<String>,
    pub command_line: Vec<String>,
    /// RFC 3339 UTC time the run (or this resume) started.
    pub started_utc: String,
    pub hostname: String,
    pub kernel: Option<String>,
    pub cpu_model: Option<String>,
    /// Logical CPUs online.
    pub cpu_count: usize,
    /// cpufreq governor of cpu0 (`performance`, `powersave`, ...), if exposed.
    pub governor: Option<String>,
    pub memory_total_kib: Option<u64>,
    pub docker_version: Option<String>,
    /// Each target's host binary version, by target name (`null`: not
    /// installed); the servers a run could deploy.
    #[serde(default)]
    pub server_versions: std::collections::BTreeMap<String, Option<String>>,
    /// Remote hosts (`[hosts.NAME]`): each one's system, the tare copied
    /// there and its clock offset (`crate::remote::HostFacts`).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub hosts: serde_json::Value,
    /// The files the run was made from, by their place in the run
    /// directory (`experiment.toml`, `configs/NAME`, `inputs/KEY`: each a
    /// verbatim copy), with their sha256 (hex).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub inputs: std::collections::BTreeMap<String, String>,
    /// Times this run was resumed, with when and by which command.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumed: Vec<Resume>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Resume {
    pub started_utc: String,
    pub command_line: Vec<String>,
    pub tare_version: String,
}

impl Provenance {
    /// Probes this machine now.
    pub fn collect() -> Provenance {
        Provenance {
            tare_version: env!("CARGO_PKG_VERSION").to_string(),
            tare_commit: option_env!("TARE_COMMIT")
                .filter(|s| !s.is_empty())
                .map(String::from),
            command_line: crate::provenance::command_line(),
            started_utc: now_utc(),
            hostname: hostname(),
            kernel: read_trim("/proc/sys/kernel/osrelease"),
            cpu_model: cpu_model(),
            cpu_count: std::thread::available_parallelism().map_or(1, |n| n.get()),
            governor: read_trim("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            memory_total_kib: meminfo_total(),
            docker_version: tool(&["docker", "version", "--format", "{{.Server.Version}}"]),
            server_versions: tare_deploy::TargetKind::all()
                .map(|k| (k.name().to_string(), k.target().host_version()))
                .collect(),
            hosts: serde_json::Value::Null,
            inputs: Default::default(),
            resumed: Vec::new(),
        }
    }
}

/// The command line as text: an argument that is not UTF-8 (a path) is
/// recorded lossily, never a panic (`std::env::args` panics on one).
pub(crate) fn command_line() -> Vec<String> {
    std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

pub(crate) fn now_utc() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

pub fn hostname() -> String {
    read_trim("/proc/sys/kernel/hostname").unwrap_or_else(|| "host".into())
}

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

fn meminfo_total() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("MemTotal:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// First line of a tool's output (stdout, or stderr as `nginx -v` prints),
/// or `None` if it is missing, fails, or takes more than 5 seconds (a
/// hung Docker daemon must not hang the run).
fn tool(argv: &[&str]) -> Option<String> {
    if argv[0].contains('/') && !Path::new(argv[0]).exists() {
        return None;
    }
    let mut child = Command::new(argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let out = child.wait_with_output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = if out.stdout.is_empty() {
        out.stderr
    } else {
        out.stdout
    };
    String::from_utf8_lossy(&text)
        .lines()
        .next()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
}

/// sha256 of `bytes`, in hex (the provenance's `inputs`).
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_this_machine() {
        let p = Provenance::collect();
        assert!(p.cpu_count >= 1);
        assert!(
            p.kernel.is_some(),
            "Linux exposes /proc/sys/kernel/osrelease"
        );
        assert!(p.started_utc.ends_with('Z'));
        assert!(!p.command_line.is_empty());
    }

    #[test]
    fn a_missing_tool_is_none() {
        assert_eq!(tool(&["tare-no-such-tool-xyz"]), None);
        assert_eq!(tool(&["/no/such/path", "-v"]), None);
    }
}
