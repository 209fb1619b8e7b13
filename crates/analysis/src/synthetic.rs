//! Synthetic, deterministic runs for tests: realistic [`TrialRecord`]s whose
//! [`LoadResult`]s carry real HDR histograms (encoded, decodable), a
//! per-second timeline, errors and generator CPU, built from a few numbers,
//! so fixtures are code that says what it means rather than JSON blobs.
//!
//! Closed-loop physics keeps them consistent: with `c` connections and `r`
//! requests per second, Little's law puts the mean latency at `c / r`; the
//! latency distribution is log-normal around it (σ = 0.35 gives a p99 near
//! 2.3× the median, in the range wrk reports for nginx on loopback).

use std::collections::BTreeMap;
use std::path::Path;

use tare_record::{Latency, LoadResult, TrialRecord};

use crate::plan::{AttributionChain, PlanView, PlannedCellView};
use crate::stats::bootstrap::SplitMix64;

/// One synthetic cell: its factor levels and its true throughput.
#[derive(Clone, Debug)]
pub struct SynthCell {
    pub factors: Vec<(String, String)>,
    /// True requests per second; each trial draws around it.
    pub rps: f64,
    /// Relative trial-to-trial spread: each trial is `rps × (1 ± spread)`.
    pub spread: f64,
    /// Trials (1-based) that fail instead of producing a result.
    pub failing_trials: Vec<u32>,
}

impl SynthCell {
    pub fn new(factors: &[(&str, &str)], rps: f64, spread: f64) -> Self {
        SynthCell {
            factors: factors
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            rps,
            spread,
            failing_trials: Vec::new(),
        }
    }

    pub fn failing(mut self, trial: u32) -> Self {
        self.failing_trials.push(trial);
        self
    }

    /// The cell id as the runner writes it: `key=value` joined by `,` in
    /// factor order.
    pub fn id(&self) -> String {
        self.factors
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Connections of every synthetic load run (wrk -c100, as in docs/studies.md,
/// "nginx by placement (seed 000 redone)").
const CONNECTIONS: u64 = 100;
/// Seconds of every synthetic load run.
const DURATION_S: u64 = 4;
/// Latency values recorded per trial: enough for a stable p99.
const LATENCY_SAMPLES: usize = 4_000;
/// Generator CPU per request (µs): wrk's figure in docs/studies.md, "Load
/// generators: CPU per request".
const CPU_US_PER_REQUEST: f64 = 21.2;

/// Trials for `cells`, `trials` rounds, interleaved as the runner does
/// (round r runs trial r of every cell, in a seeded order), on a steady
/// machine.
pub fn trials(run_id: &str, cells: &[SynthCell], trials: u32, seed: u64) -> Vec<TrialRecord> {
    drifting_trials(run_id, cells, trials, seed, 0.0)
}

/// As [`trials`], on a machine whose speed drifts from round to round: a
/// random walk whose log steps are uniform in ±`drift` (0.05: a few minutes
/// of this project's 2-core VM, which moves 15% within minutes), shared by
/// every cell of a round.
pub fn drifting_trials(
    run_id: &str,
    cells: &[SynthCell],
    trials: u32,
    seed: u64,
    drift: f64,
) -> Vec<TrialRecord> {
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::new();
    let mut order = 0u64;
    let mut speed = 0.0f64;
    for round in 1..=trials {
        if drift > 0.0 {
            speed += drift * (2.0 * rng.next_f64() - 1.0);
        }
        let mut idx: Vec<usize> = (0..cells.len()).collect();
        for i in (1..idx.len()).rev() {
            idx.swap(i, rng.below(i + 1));
        }
        for &c in &idx {
            let mut cell = cells[c].clone();
            cell.rps *= speed.exp();
            out.push(trial(run_id, &cell, round, order, &mut rng));
            order += 1;
        }
    }
    out
}

fn trial(
    run_id: &str,
    cell: &SynthCell,
    trial: u32,
    order: u64,
    rng: &mut SplitMix64,
) -> TrialRecord {
    let started = 1_790_000_000.0 + order as f64 * 6.0;
    let mut record = TrialRecord {
        run_id: run_id.to_string(),
        cell: cell.id(),
        factors: cell.factors.iter().cloned().collect::<BTreeMap<_, _>>(),
        trial,
        order,
        started_unix_s: started,
        ..TrialRecord::default()
    };
    if cell.failing_trials.contains(&trial) {
        record.error = Some("target did not become ready within 10s".into());
        return record;
    }
    let rps = cell.rps * (1.0 + cell.spread * (2.0 * rng.next_f64() - 1.0));
    record.result = Some(load_result(rps, started, rng));
    record
}

/// A closed-loop HTTP result at `rps`.
pub(crate) fn load_result(rps: f64, started_unix_s: f64, rng: &mut SplitMix64) -> LoadResult {
    let median_ns = CONNECTIONS as f64 / rps * 1e9;
    let mut latency = Latency::new();
    for _ in 0..LATENCY_SAMPLES {
        latency.record_ns((median_ns * (0.35 * normal(rng)).exp()) as u64);
    }
    let requests = (rps * DURATION_S as f64).round() as u64;
    let per_second = requests / DURATION_S;
    let mut timeline = vec![per_second; DURATION_S as usize];
    timeline[0] += requests - per_second * DURATION_S;
    let cpu_s = requests as f64 * CPU_US_PER_REQUEST / 1e6;
    LoadResult {
        engine: "http".into(),
        unit: Some(tare_record::Unit::Requests),
        attempts: Some(requests),
        target: "http://127.0.0.1:8080/".into(),
        transport: "tcp".into(),
        started_unix_s,
        duration_s: DURATION_S as f64,
        connections: CONNECTIONS,
        threads: 2,
        keepalive: true,
        requests,
        in_flight: CONNECTIONS,
        rps: Some(requests as f64 / DURATION_S as f64),
        bytes_read: requests * 850,
        latency_us: latency.summary(),
        hdr: latency.encode().expect("a fresh histogram encodes"),
        timeline,
        generator_cpu_s: cpu_s,
        generator_cpu_user_s: cpu_s * 0.3,
        generator_cpu_system_s: cpu_s * 0.7,
        generator_cpus: 0,
        status_codes: [("200".to_string(), requests)].into(),
        metrics: Vec::new(),
        primary: None,
        tool: None,
        generators: Vec::new(),
        tare_version: "0.1.0".into(),
        ..LoadResult::default()
    }
}

/// Standard normal by Box-Muller.
fn normal(rng: &mut SplitMix64) -> f64 {
    let u1 = rng.next_f64().max(f64::MIN_POSITIVE);
    let u2 = rng.next_f64();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// The plan the runner would write for `cells` and `chain`.
pub fn plan(run_id: &str, cells: &[SynthCell], chain: &[String]) -> PlanView {
    PlanView {
        run_id: run_id.to_string(),
        experiment: "synthetic".into(),
        target: None,
        load: None,
        cells: cells
            .iter()
            .map(|c| PlannedCellView {
                id: c.id(),
                factors: c.factors.iter().cloned().collect(),
                skipped: None,
            })
            .collect(),
        attribution: AttributionChain {
            chain: chain.to_vec(),
            dropped: Vec::new(),
            splits: Vec::new(),
        },
        // As the runner picks it: the first cell in the reference placement.
        reference: cells
            .iter()
            .find(|c| {
                c.factors
                    .iter()
                    .any(|(k, v)| k == "placement" && v == "native")
            })
            .map(SynthCell::id),
        cpus: Default::default(),
        trials: Default::default(),
    }
}

/// Writes a run directory: `trials.jsonl` and, when given, `plan.json`.
pub fn write_run_dir(
    dir: &Path,
    trials: &[TrialRecord],
    plan: Option<&PlanView>,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut lines = String::new();
    for t in trials {
        lines.push_str(&serde_json::to_string(t).map_err(std::io::Error::other)?);
        lines.push('\n');
    }
    std::fs::write(dir.join("trials.jsonl"), lines)?;
    if let Some(plan) = plan {
        let text = serde_json::to_string_pretty(plan).map_err(std::io::Error::other)?;
        std::fs::write(dir.join("plan.json"), text)?;
    }
    Ok(())
}

/// Seed 000's waterfall as five cells: bridge + published port with the
/// default config and access log → host network → tuned config → access_log
/// off → native (~9.9k → 27.5k → 30k → 36.5k → 39k req/s: seed 000's results
/// table read as a chain, docs/studies.md, seed 000).
pub fn seed000_cells(spread: f64) -> Vec<SynthCell> {
    let cell = |placement, config, log, rps| {
        SynthCell::new(
            &[
                ("placement", placement),
                ("config", config),
                ("access_log", log),
            ],
            rps,
            spread,
        )
    };
    vec![
        cell("docker-publish", "default", "on", 9_900.0),
        cell("docker-host", "default", "on", 27_500.0),
        cell("docker-host", "tuned", "on", 30_000.0),
        cell("docker-host", "tuned", "off", 36_500.0),
        cell("native", "tuned", "off", 39_000.0),
    ]
}
