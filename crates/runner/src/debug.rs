//! [`DebugExecutor`]: `tare run --debug-mode`, as hyperfine's `--debug-mode`:
//! every part of a run is real except the two that touch the machine. Cells
//! become deployment specs as in a real run ([`RealExecutor::spec`]) and the
//! real fairness check compares their facts; but the deployment is a mock
//! placement that starts nothing and describes the spec it was given, and
//! the load is a mock engine whose throughput comes from a fixed model of
//! the cell's levels. So `tare run` → records → `tare report` runs end to end
//! in a second, deterministically, on any machine (`crates/cli/tests/it/debug_mode.rs`).

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use tare_deploy::{DeploySpec, Facts, ProcessFacts, SpecOption, Storage};
use tare_record::{Latency, LoadResult, Unit};

use crate::executor::{ExecError, Executor, Finding, RunningCell};
use crate::experiment::{Cell, Experiment, FactorKind, LoadSettings};
use crate::real::RealExecutor;

/// Throughput of a cell at every factor's default level, per second.
const BASE_RATE: f64 = 40_000.0;

pub struct DebugExecutor {
    real: RealExecutor,
    /// Measured trials so far, per cell (a deployment may last one trial):
    /// the jitter of a cell's trial *n* is fixed.
    trials: Trials,
}

type Trials = Arc<Mutex<BTreeMap<String, u32>>>;

impl DebugExecutor {
    pub fn new(exp: &Experiment, run_dir: &std::path::Path) -> DebugExecutor {
        DebugExecutor {
            real: RealExecutor::new(exp, run_dir, Arc::new(AtomicBool::new(false))),
            trials: Trials::default(),
        }
    }
}

impl Executor for DebugExecutor {
    /// Every cell runs: nothing here depends on the machine.
    fn can_run(&mut self, cell: &Cell) -> Result<(), String> {
        self.real.spec(cell).map(drop).map_err(|e| e.to_string())
    }

    fn deploy(&mut self, cell: &Cell) -> Result<Box<dyn RunningCell>, ExecError> {
        let spec = self.real.spec(cell)?;
        Ok(Box::new(DebugCell {
            facts: facts(&spec),
            rate: rate(cell),
            cell: cell.id.clone(),
            trials: self.trials.clone(),
        }))
    }

    fn fairness(&mut self, facts: &[(Cell, serde_json::Value)]) -> Vec<Finding> {
        self.real.fairness(facts)
    }
}

struct DebugCell {
    cell: String,
    facts: Facts,
    rate: f64,
    trials: Trials,
}

impl RunningCell for DebugCell {
    fn facts(&self) -> serde_json::Value {
        serde_json::to_value(&self.facts).unwrap_or_default()
    }

    fn load(&mut self, settings: &LoadSettings, measure: bool) -> Result<LoadResult, ExecError> {
        let n = {
            let mut trials = self.trials.lock().unwrap_or_else(|e| e.into_inner());
            let n = trials.entry(self.cell.clone()).or_default();
            if measure {
                *n += 1;
            }
            *n
        };
        let rate = self.rate * (1.0 + jitter(&self.cell, n));
        let mut r = result(rate, settings);
        r.target = format!("{} (debug mode)", self.facts.endpoint);
        Ok(r)
    }

    fn stop(self: Box<Self>) -> Result<(), ExecError> {
        Ok(())
    }
}

/// The model: every level other than its factor's default scales the
/// throughput by a fixed factor between 0.55 and 0.98 drawn from its name,
/// so cells differ, steps of a chain have shares, and nothing depends on
/// the machine or the clock.
fn rate(cell: &Cell) -> f64 {
    cell.levels
        .iter()
        .filter(|(k, v)| {
            FactorKind::from_name(k).and_then(FactorKind::default_level) != Some(v.as_str())
        })
        .map(|(k, v)| 0.55 + 0.43 * unit(&format!("{k}={v}")))
        .product::<f64>()
        * BASE_RATE
}

/// Trial `n`'s relative deviation from the cell's rate, within ±3%.
fn jitter(cell: &str, n: u32) -> f64 {
    0.06 * (unit(&format!("{cell}#{n}")) - 0.5)
}

/// A number in [0, 1) from `text` alone (FNV-1a, then SplitMix64 to spread it).
fn unit(text: &str) -> f64 {
    let h = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (tare_record::splitmix::SplitMix64::new(h).next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// What the mock placement says a deployment of `spec` is: the spec's own
/// settings, and for a container what a container on overlayfs would show,
/// so the fairness check finds what it finds in a real run.
fn facts(spec: &DeploySpec) -> Facts {
    let container = spec.placement.accepts(SpecOption::Container);
    let storage = if container {
        spec.container.storage
    } else {
        Storage::HostPath
    };
    let fs = match storage {
        Storage::Image => "overlay",
        Storage::Volume | Storage::HostPath => "ext4",
        Storage::Tmpfs => "tmpfs",
    };
    let seccomp = if container && !spec.container.seccomp_unconfined {
        "filter"
    } else {
        "disabled"
    };
    let access_log = spec
        .target
        .access_log
        .map_or_else(|| "default".to_string(), |l| l.to_string());
    Facts {
        target: spec.target.target.name().to_string(),
        placement: spec.placement.to_string(),
        variant: spec.target.variant.to_string(),
        transport: spec.transport.to_string(),
        endpoint: format!("mock:{}", spec.placement),
        image: container.then(|| format!("tare/{}:debug", spec.target.target.name())),
        process: ProcessFacts {
            binary_path: format!("/debug/{}", spec.target.target.name()),
            binary_sha256: Some("0".repeat(64)),
            server_version: Some("debug".into()),
            config_sha256: format!("{}/{access_log}", spec.target.variant),
            nofile_soft: Some(1024),
            nofile_hard: Some(524_288),
            cpus_allowed: Some("0-1".into()),
            cpus_visible: Some(2),
            cpu_limit: spec.container.cpus,
            memory_limit: spec.container.memory,
            seccomp: Some(seccomp.into()),
        },
        access_log,
        storage: storage.to_string(),
        log_fs: Some(fs.into()),
        content_fs: Some(fs.into()),
        server_pid: None,
        rootfs_sha256: None,
        root_fs: None,
        cgroup: None,
        backend: None,
        guest: None,
        helpers: Vec::new(),
    }
}

/// A plausible result at `rps` for `settings.duration`, in the engine's
/// unit, with a histogram of the matching closed-loop latency (Little's
/// law: connections / rps). The mock executor's results too.
pub(crate) fn result(rps: f64, settings: &LoadSettings) -> LoadResult {
    let load = &settings.shared;
    let secs = settings.duration().as_secs_f64();
    let requests = (rps * secs).round() as u64;
    let unit = settings.engine.unit();
    let mut lat = Latency::new();
    let mean_ns = (load.connections as f64 / rps.max(1.0) * 1e9) as u64;
    for i in 0..100u64 {
        lat.record_ns(mean_ns / 2 + mean_ns * i / 100);
    }
    LoadResult {
        engine: settings.engine.name().into(),
        target: "http://mock/".into(),
        transport: "tcp".into(),
        started_unix_s: 0.0,
        duration_s: secs,
        connections: load.connections as u64,
        threads: load.threads as u64,
        keepalive: true,
        requests,
        unit: Some(unit),
        attempts: Some(requests),
        rps: (unit != Unit::Transactions).then_some(requests as f64 / secs),
        tps: (unit == Unit::Transactions).then_some(requests as f64 / secs),
        latency_us: lat.summary(),
        hdr: lat.encode().unwrap_or_default(),
        timeline: vec![requests / secs.max(1.0) as u64; secs.ceil() as usize],
        metrics: Vec::new(),
        primary: None,
        tool: None,
        external: None,
        generators: Vec::new(),
        tare_version: env!("CARGO_PKG_VERSION").into(),
        ..LoadResult::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_is_fixed_and_defaults_cost_nothing() {
        let native = Cell::new(vec![("placement".into(), "native".into())]).unwrap();
        assert_eq!(rate(&native), BASE_RATE);
        let other = Cell::new(vec![("placement".into(), "docker-publish".into())]).unwrap();
        let r = rate(&other);
        assert!((0.55 * BASE_RATE..0.98 * BASE_RATE).contains(&r), "{r}");
        assert_eq!(r, rate(&other));
        for n in 1..50 {
            assert!(jitter("a", n).abs() <= 0.03);
        }
        assert_ne!(jitter("a", 1), jitter("a", 2));
    }
}
