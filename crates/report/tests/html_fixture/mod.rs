//! Run directories for the HTML tests, written the way the runner writes
//! them (`trials.jsonl`, `plan.json`, `provenance.json`, `findings.json`),
//! from tare-analysis's synthetic trials: real encoded HDR histograms and
//! per-second timelines, deterministic for a given seed.

#![allow(dead_code)] // each test file uses some of these

use std::path::Path;

use serde_json::json;
use tare_analysis::stats::bootstrap::SplitMix64;
use tare_analysis::synthetic::{self, SynthCell};
use tare_record::{Latency, TrialRecord};

/// Seed 000's chain (9.9k → 27.5k → 30k → 36.5k → 39k req/s: docs/studies.md,
/// seed 000), five trials each, one trial with a warm-up ramp and one with a
/// stall.
pub(crate) fn seed000(dir: &Path) {
    let cells = synthetic::seed000_cells(0.03);
    let mut trials = synthetic::trials("seed000", &cells, 5, 7);
    // Trial 2 of the host-network cell starts slow; trial 4 of the native
    // cell stalls in its third second.
    for t in &mut trials {
        let r = t.result.as_mut().unwrap();
        if t.cell == cells[1].id() && t.trial == 2 {
            r.timeline[0] /= 2;
        }
        if t.cell == cells[4].id() && t.trial == 4 {
            r.timeline[2] /= 5;
        }
    }
    let chain: Vec<String> = cells.iter().map(SynthCell::id).collect();
    let plan = synthetic::plan("seed000", &cells, &chain);
    synthetic::write_run_dir(dir, &trials, Some(&plan)).unwrap();
    write_json(dir, "provenance.json", &provenance("seed000"));
    write_json(
        dir,
        "findings.json",
        &json!([{"fact": "log_fs", "values": [["placement=native", "ext4"], ["placement=docker-host", "overlay"]],
                 "message": "log_fs differs: ext4 (native) vs overlay (docker-host); access_log writes land on different filesystems"}]),
    );
    std::fs::write(dir.join("experiment.toml"), "name = \"seed000\"\n").unwrap();
}

/// Seed 001's client sweep over the Unix socket, `select 1` with pgbench
/// `-M prepared`: native and Docker at 16, 48 and 96 clients (271k/336k/304k
/// and 257k/265k/180k tps in the seed, whose Docker "48" was run with 40
/// clients: docs/studies.md, seed 001), three trials each.
pub(crate) fn seed001(dir: &Path) {
    let sweep = [
        ("native", "16", 271_232.0),
        ("native", "48", 335_531.0),
        ("native", "96", 303_622.0),
        ("docker", "16", 257_437.0),
        ("docker", "48", 265_112.0),
        ("docker", "96", 180_038.0),
    ];
    let cells: Vec<SynthCell> = sweep
        .iter()
        .map(|(p, c, tps)| SynthCell::new(&[("placement", p), ("clients", c)], *tps, 0.02))
        .collect();
    let mut trials = synthetic::trials("seed001", &cells, 3, 11);
    let mut rng = SplitMix64::new(1);
    for t in &mut trials {
        as_pgbench(t, &mut rng);
    }
    let plan = synthetic::plan("seed001", &cells, &[]);
    synthetic::write_run_dir(dir, &trials, Some(&plan)).unwrap();
    let mut p = provenance("seed001");
    p["cpu_count"] = json!(48);
    write_json(dir, "provenance.json", &p);
    write_json(dir, "findings.json", &json!([]));
}

/// Seed 002's TCP_RR chain (docs/studies.md, seed 002: netperf `-r 100,200`,
/// native 37.6 µs per round trip, "NAT doubles latency"), as `tare net rr`
/// records it: one connection, transactions per second, µs per round trip
/// = 10⁶ / tps. native 37.6 µs → docker-host 38.5 → docker-bridge 45.0 →
/// docker-publish 75.2, five trials each.
pub(crate) fn seed002_net(dir: &Path) {
    let chain = [
        ("native", 37.6),
        ("docker-host", 38.5),
        ("docker-bridge", 45.0),
        ("docker-publish", 75.2),
    ];
    let cells: Vec<SynthCell> = chain
        .iter()
        .map(|(p, us)| SynthCell::new(&[("placement", p)], 1e6 / us, 0.02))
        .collect();
    let mut trials = synthetic::trials("seed002-net", &cells, 5, 5);
    let mut rng = SplitMix64::new(2);
    for t in &mut trials {
        as_net_rr(t, &mut rng);
    }
    let ids: Vec<String> = cells.iter().map(SynthCell::id).collect();
    let plan = synthetic::plan("seed002-net", &cells, &ids);
    synthetic::write_run_dir(dir, &trials, Some(&plan)).unwrap();
    write_json(dir, "provenance.json", &provenance("seed002-net"));
    write_json(dir, "findings.json", &json!([]));
}

/// Turns a synthetic HTTP trial into a `tare net rr` one: one connection,
/// its latency around 1/tps.
fn as_net_rr(t: &mut TrialRecord, rng: &mut SplitMix64) {
    let r = t.result.as_mut().unwrap();
    let tps = r.rps.take().unwrap();
    r.engine = "net".into();
    r.unit = Some(tare_record::Unit::RoundTrips);
    r.target = "127.0.0.1:12865".into();
    r.connections = 1;
    r.threads = 1;
    r.in_flight = 1;
    r.status_codes.clear();
    r.tps = Some(tps);
    let median_ns = 1e9 / tps;
    let mut h = Latency::new();
    for _ in 0..4_000 {
        h.record_ns((median_ns * (0.1 * normal(rng)).exp()) as u64);
    }
    r.latency_us = h.summary();
    r.hdr = h.encode().unwrap();
    r.net = Some(tare_record::NetDetails {
        test: "rr".into(),
        request_bytes: 100,
        response_bytes: 200,
        round_trip_us: Some(1e6 / tps),
        ..Default::default()
    });
}

/// Turns a synthetic HTTP trial into a pgbench-style one with as many
/// clients as its `clients` factor says, re-drawing the latency histogram
/// so Little's law holds (mean latency = clients / tps).
fn as_pgbench(t: &mut TrialRecord, rng: &mut SplitMix64) {
    let clients: u64 = t.factors["clients"].parse().unwrap();
    let r = t.result.as_mut().unwrap();
    let tps = r.rps.take().unwrap();
    r.engine = "pg".into();
    r.unit = Some(tare_record::Unit::Transactions);
    r.target = "host=/var/run/postgresql dbname=postgres".into();
    r.transport = "unix".into();
    r.tps = Some(tps);
    r.connections = clients;
    r.in_flight = clients;
    let median_ns = clients as f64 / tps * 1e9;
    let mut h = Latency::new();
    for _ in 0..4_000 {
        h.record_ns((median_ns * (0.35 * normal(rng)).exp()) as u64);
    }
    r.latency_us = h.summary();
    r.hdr = h.encode().unwrap();
}

fn normal(rng: &mut SplitMix64) -> f64 {
    let u = |rng: &mut SplitMix64| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let u1 = u(rng).max(f64::MIN_POSITIVE);
    let u2 = u(rng);
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A run whose every recorded string is hostile markup: factor names and
/// levels, the experiment's name, the target, an error, a skipped cell's
/// reason, findings and provenance values (a server's version header).
pub(crate) const HOSTILE: &str = "<script>document.title='pwned'</script>";
pub(crate) const HOSTILE_ATTR: &str = "\"><img src=x onerror=\"document.title='pwned'\">";

pub(crate) fn hostile(dir: &Path) {
    let level = format!("tuned{HOSTILE}");
    let cells = vec![
        SynthCell::new(&[("config", "default")], 20_000.0, 0.02),
        SynthCell::new(&[("config", level.as_str())], 25_000.0, 0.02),
        SynthCell::new(&[("config", HOSTILE_ATTR)], 22_000.0, 0.02)
            .failing(1)
            .failing(2)
            .failing(3),
    ];
    let mut trials = synthetic::trials("hostile", &cells, 3, 3);
    for t in &mut trials {
        if let Some(r) = t.result.as_mut() {
            r.target = format!("http://127.0.0.1:8080/{HOSTILE}");
        } else {
            t.error = Some(format!("server said {HOSTILE}"));
        }
    }
    let chain: Vec<String> = cells[..2].iter().map(SynthCell::id).collect();
    let mut plan = synthetic::plan("hostile", &cells, &chain);
    plan.experiment = format!("exp{HOSTILE}");
    let mut skipped = plan.cells[0].clone();
    skipped.id = format!("config={HOSTILE_ATTR}x");
    skipped.skipped = Some(format!("docker said {HOSTILE}"));
    plan.cells.push(skipped);
    synthetic::write_run_dir(dir, &trials, Some(&plan)).unwrap();
    let mut p = provenance("hostile");
    p["nginx_version"] = json!(format!("nginx/1.22 {HOSTILE}"));
    p["hostname"] = json!(HOSTILE_ATTR);
    p["command_line"] = json!(["tare", "run", format!("{HOSTILE}.toml")]);
    write_json(dir, "provenance.json", &p);
    write_json(
        dir,
        "findings.json",
        &json!([{"fact": HOSTILE_ATTR, "message": format!("Server header differs: {HOSTILE}")}]),
    );
}

/// `provenance.json` as `tare_runner::provenance::Provenance` writes it.
fn provenance(run: &str) -> serde_json::Value {
    json!({
        "tare_version": "0.1.0",
        "tare_commit": null,
        "command_line": ["tare", "run", format!("experiments/{run}.toml"), "--out", format!("runs/{run}")],
        "started_utc": "2026-11-22T02:30:00Z",
        "hostname": "bench-1",
        "kernel": "6.1.0-27-amd64",
        "cpu_model": "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz",
        "cpu_count": 2,
        "governor": "performance",
        "memory_total_kib": 25165824,
        "docker_version": "27.3.1",
        "nginx_version": "1.22.1",
        "postgres_version": "15.8"
    })
}

fn write_json(dir: &Path, name: &str, v: &serde_json::Value) {
    std::fs::write(dir.join(name), serde_json::to_string_pretty(v).unwrap()).unwrap();
}
