//! The judge of every interval tare prints: simulated runs with a known
//! truth go through the same public entry points the report uses
//! (`Run::from_trials`, `Run::cells`, `attribution`, `cell_contrast` for
//! the "vs ref" column, `compare`), and each kind of interval must cover
//! its truth 95% ± 3% of the time, at 3, 5 and 10 rounds.
//!
//! The simulated machine (docs/analysis.md, "Coverage"):
//! - 2 to 5 cells in a chain, each step changing throughput by a random
//!   factor in [0.97, 1.45] (some steps are near zero, most are not), the
//!   first cell at 10k;
//! - round drift shared by every cell of a round: iid uniform ±15%, or a
//!   random walk (log steps with sd 6%), both as this 2-core VM shows;
//! - per-trial noise: log-normal, sd 3%; one trial in 50 is an outlier
//!   (a stall: 25% slower); one in 40 fails (unbalanced rounds);
//! - p99 latency = 100 connections / throughput × 2.26 (the synthetic
//!   runs' log-normal latency) × its own 2% sampling noise.
//!
//! The truth of each interval:
//! - a cell's throughput: its true level × the run's realised geometric
//!   mean drift over the rounds it ran (the interval is this run's
//!   machine, drift removed: docs/analysis.md);
//! - a cell's p99: 226 / (that same throughput truth)... as p99 = c / x;
//! - a step's change, the overall gap's change, "vs ref": the ratio of the
//!   true levels (drift cancels within a round);
//! - a share of the gap: (L_i - L_{i-1}) / (L_last - L_first), counted as
//!   covered when Fieller's set is unbounded (it is then the whole line;
//!   the report prints no interval);
//! - compare: two independent runs with iid drift (a random walk makes a
//!   run's trials dependent, which no unpaired interval can see) and new
//!   levels = old × a random factor; the truth is that factor.

use std::collections::BTreeMap;

use tare_analysis::stats::bootstrap::SplitMix64;
use tare_analysis::stats::Contrast;
use tare_analysis::{attribution, cell_contrast, compare, parts_of_gap, Metric, Run};
use tare_record::{LoadResult, TrialRecord};

const RUNS_PER_CONFIG: usize = 150;
const NOISE_SD: f64 = 0.03;
const P99_NOISE_SD: f64 = 0.02;
const OUTLIER_P: f64 = 0.02;
const OUTLIER_FACTOR: f64 = 0.75;
const FAIL_P: f64 = 0.025;
const P99_PER_RPS: f64 = 226.0 * 1e6 / 100.0;

#[derive(Clone, Copy, PartialEq)]
enum Drift {
    Iid,
    Walk,
}

fn normal(rng: &mut SplitMix64) -> f64 {
    let u1 = rng.next_f64().max(f64::MIN_POSITIVE);
    let u2 = rng.next_f64();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A simulated run: its trials and, per round, the drift factor.
struct Sim {
    trials: Vec<TrialRecord>,
    drift: BTreeMap<u32, f64>,
}

fn cell_id(i: usize) -> String {
    format!("step={i}")
}

fn simulate(levels: &[f64], rounds: u32, drift: Drift, rng: &mut SplitMix64) -> Sim {
    simulate_with(levels, &vec![NOISE_SD; levels.len()], rounds, drift, rng)
}

/// `simulate` with each cell's own noise `sd[c]`.
fn simulate_with(
    levels: &[f64],
    sd: &[f64],
    rounds: u32,
    drift: Drift,
    rng: &mut SplitMix64,
) -> Sim {
    let mut trials = Vec::new();
    let mut d = BTreeMap::new();
    let mut walk = 0.0;
    let mut order = 0u64;
    for round in 1..=rounds {
        let factor = match drift {
            Drift::Iid => 0.85 + 0.30 * rng.next_f64(),
            Drift::Walk => {
                walk += 0.06 * normal(rng);
                walk.exp()
            }
        };
        d.insert(round, factor);
        let mut idx: Vec<usize> = (0..levels.len()).collect();
        for i in (1..idx.len()).rev() {
            idx.swap(i, rng.below(i + 1));
        }
        for &c in &idx {
            let mut t = TrialRecord {
                run_id: "sim".into(),
                cell: cell_id(c),
                factors: [("step".to_string(), c.to_string())].into(),
                trial: round,
                order,
                ..TrialRecord::default()
            };
            order += 1;
            let noise = (sd[c] * normal(rng)).exp();
            let outlier = if rng.next_f64() < OUTLIER_P {
                OUTLIER_FACTOR
            } else {
                1.0
            };
            let x = levels[c] * factor * noise * outlier;
            let p99 = P99_PER_RPS / x * (P99_NOISE_SD * normal(rng)).exp();
            if rng.next_f64() < FAIL_P {
                t.error = Some("simulated failure".into());
            } else {
                let mut r = LoadResult {
                    rps: Some(x),
                    requests: x as u64,
                    ..LoadResult::default()
                };
                r.latency_us.p50 = p99 / 2.26;
                r.latency_us.p99 = p99;
                t.result = Some(r);
            }
            trials.push(t);
        }
    }
    Sim { trials, drift: d }
}

/// Coverage tallies per (interval kind, rounds).
#[derive(Default)]
struct Tally {
    hits: BTreeMap<(&'static str, u32), (usize, usize, f64)>,
    /// Intervals tare could not give (fallbacks), per kind.
    missing: BTreeMap<&'static str, usize>,
}

impl Tally {
    fn add(
        &mut self,
        kind: &'static str,
        rounds: u32,
        ci: Option<(f64, f64)>,
        truth: f64,
        est: f64,
    ) {
        let Some((lo, hi)) = ci else {
            *self.missing.entry(kind).or_default() += 1;
            return;
        };
        let e = self.hits.entry((kind, rounds)).or_default();
        e.0 += usize::from(lo <= truth && truth <= hi);
        e.1 += 1;
        if hi.is_finite() && lo.is_finite() {
            e.2 += (hi - lo) / 2.0 / est.abs();
        }
    }

    fn contrast(&mut self, kind: &'static str, rounds: u32, c: Option<Contrast>, truth: f64) {
        match c {
            Some(c) => self.add(kind, rounds, c.ratio_ci, truth, c.ratio),
            None => *self.missing.entry(kind).or_default() += 1,
        }
    }
}

#[test]
fn every_printed_interval_covers_its_truth_95_percent_of_the_time() {
    let mut rng = SplitMix64::new(0x5EED_C0DE);
    let mut tally = Tally::default();
    for rounds in [3u32, 5, 10] {
        for cells in 2..=5usize {
            for drift in [Drift::Iid, Drift::Walk] {
                for _ in 0..RUNS_PER_CONFIG {
                    one_run(&mut rng, &mut tally, rounds, cells, drift);
                }
            }
        }
    }
    let mut table = String::from("kind         rounds  coverage  intervals  mean ± (bounded)\n");
    for ((kind, rounds), (hit, n, width)) in &tally.hits {
        table.push_str(&format!(
            "{kind:<12} {rounds:>6}  {:>7.1}%  {n:>9}  {:>5.1}%\n",
            100.0 * *hit as f64 / *n as f64,
            100.0 * width / *n as f64
        ));
    }
    table.push_str(&format!("no interval (fallback): {:?}\n", tally.missing));
    eprintln!("{table}");
    for ((kind, rounds), (hit, n, _)) in &tally.hits {
        let cov = *hit as f64 / *n as f64;
        assert!(
            (0.92..=0.98).contains(&cov),
            "{kind} at {rounds} rounds covers {:.1}%\n{table}",
            100.0 * cov
        );
    }
    // Every kind was measured at every round count.
    for kind in [
        "cell",
        "p99",
        "step",
        "vs ref",
        "gap",
        "share",
        "part share",
        "compare",
        "compare p99",
    ] {
        for rounds in [3, 5, 10] {
            assert!(
                tally.hits.contains_key(&(kind, rounds)),
                "{kind} {rounds}\n{table}"
            );
        }
    }
}

fn one_run(rng: &mut SplitMix64, tally: &mut Tally, rounds: u32, cells: usize, drift: Drift) {
    let mut levels = vec![10_000.0];
    while levels.len() < cells {
        let step = 0.97 + 0.48 * rng.next_f64();
        levels.push(levels[levels.len() - 1] * step);
    }
    let sim = simulate(&levels, rounds, drift, rng);
    let run = Run::from_trials(sim.trials);
    let stats = run.cells();
    for (i, level) in levels.iter().enumerate() {
        let Some(c) = stats.iter().find(|c| c.cell == cell_id(i)) else {
            continue;
        };
        // The rounds this run has (any cell succeeded in them).
        let present: Vec<u32> = stats
            .iter()
            .flat_map(|c| c.rounds.clone().unwrap_or_default())
            .collect::<std::collections::BTreeSet<u32>>()
            .into_iter()
            .collect();
        let g =
            (present.iter().map(|r| sim.drift[r].ln()).sum::<f64>() / present.len() as f64).exp();
        let truth = level * g;
        let lv = c.level.map(|l| (l.lo, l.hi));
        tally.add("cell", rounds, lv, truth, truth);
        let p99 = c.p99_level.map(|l| (l.lo, l.hi));
        tally.add("p99", rounds, p99, P99_PER_RPS / truth, P99_PER_RPS / truth);
    }
    let chain: Vec<String> = (0..cells).map(cell_id).collect();
    if let Ok(a) = attribution(&run, &chain) {
        for (i, s) in a.steps.iter().enumerate().skip(1) {
            tally.contrast("step", rounds, s.vs_previous, levels[i] / levels[i - 1]);
            if let Some(share) = s.share {
                let truth = (levels[i] - levels[i - 1]) / (levels[cells - 1] - levels[0]);
                // Unbounded (None) is Fieller's whole line: it covers.
                let ci = s.share_ci.or(Some((f64::NEG_INFINITY, f64::INFINITY)));
                tally.add("share", rounds, ci, truth, share);
            }
        }
        tally.contrast("gap", rounds, a.overall, levels[cells - 1] / levels[0]);
    }
    // A split step: the chain skips cell 1, whose sub-chain 0 → 1 → 2
    // measures the first step in two parts, each a share of the whole gap.
    if cells >= 3 {
        let whole: Vec<String> = std::iter::once(0).chain(2..cells).map(cell_id).collect();
        let parts: Vec<String> = (0..3).map(cell_id).collect();
        if let Some(shares) = parts_of_gap(&stats, &whole, &parts) {
            let gap = levels[cells - 1] - levels[0];
            for (k, g) in shares.iter().enumerate() {
                let truth = (levels[k + 1] - levels[k]) / gap;
                let ci = g.ci.or(Some((f64::NEG_INFINITY, f64::INFINITY)));
                tally.add("part share", rounds, ci, truth, g.share);
            }
        }
    }
    let find = |i: usize| stats.iter().find(|c| c.cell == cell_id(i));
    if let Some(r) = find(cells - 1) {
        for (i, level) in levels.iter().enumerate().take(cells - 1) {
            if let Some(c) = find(i) {
                let k = cell_contrast(r, c, Metric::Throughput);
                tally.contrast("vs ref", rounds, k, level / levels[cells - 1]);
            }
        }
    }
    // compare: a second, independent run of the same cells, each moved by
    // a known factor; iid drift in both (see the module doc).
    let moved: Vec<f64> = levels
        .iter()
        .map(|l| l * (0.9 + 0.3 * rng.next_f64()))
        .collect();
    let old = Run::from_trials(simulate(&levels, rounds, Drift::Iid, rng).trials);
    let new = Run::from_trials(simulate(&moved, rounds, Drift::Iid, rng).trials);
    let diff = compare(&old, &new);
    for row in &diff.rows {
        let i: usize = row.cell.trim_start_matches("step=").parse().unwrap();
        let truth = moved[i] / levels[i];
        tally.contrast("compare", rounds, Some(row.throughput), truth);
        tally.contrast("compare p99", rounds, Some(row.p99), 1.0 / truth);
    }
}

/// Cells are not equally noisy (a Docker cell on fuse-overlayfs swings
/// while the native one holds): each cell's noise is 1%, 3%, 10% or 20%.
/// The cell levels (each with its own moderated variance) and the paired
/// steps must still cover 95% ± 3%, and a quiet cell's interval must not
/// take the noisy cells' width.
#[test]
fn unequal_cell_noise_is_covered_too() {
    const SD: [f64; 4] = [0.01, 0.03, 0.10, 0.20];
    let mut rng = SplitMix64::new(0xD0C_4E7);
    // (kind, rounds) -> (hits, n); and per noise class, mean half-width.
    let mut hits: BTreeMap<(&str, u32), (usize, usize)> = BTreeMap::new();
    let mut width: BTreeMap<(u32, usize), (f64, usize)> = BTreeMap::new();
    // Per noise class: (hits, n) of the cell levels.
    let mut by_class: BTreeMap<(u32, usize), (usize, usize)> = BTreeMap::new();
    for rounds in [3u32, 5, 10] {
        for cells in 3..=6usize {
            for drift in [Drift::Iid, Drift::Walk] {
                for _ in 0..RUNS_PER_CONFIG {
                    let mut levels = vec![10_000.0];
                    while levels.len() < cells {
                        let step = 0.97 + 0.48 * rng.next_f64();
                        levels.push(levels[levels.len() - 1] * step);
                    }
                    let class: Vec<usize> = (0..cells).map(|_| rng.below(SD.len())).collect();
                    let sd: Vec<f64> = class.iter().map(|k| SD[*k]).collect();
                    let sim = simulate_with(&levels, &sd, rounds, drift, &mut rng);
                    let run = Run::from_trials(sim.trials);
                    let stats = run.cells();
                    let present: std::collections::BTreeSet<u32> = stats
                        .iter()
                        .flat_map(|c| c.rounds.clone().unwrap_or_default())
                        .collect();
                    let g = (present.iter().map(|r| sim.drift[r].ln()).sum::<f64>()
                        / present.len() as f64)
                        .exp();
                    for (i, level) in levels.iter().enumerate() {
                        let Some(l) = stats
                            .iter()
                            .find(|c| c.cell == cell_id(i))
                            .and_then(|c| c.level)
                        else {
                            continue;
                        };
                        let truth = level * g;
                        let e = hits.entry(("cell", rounds)).or_default();
                        e.0 += usize::from(l.lo <= truth && truth <= l.hi);
                        e.1 += 1;
                        let k = by_class.entry((rounds, class[i])).or_default();
                        k.0 += usize::from(l.lo <= truth && truth <= l.hi);
                        k.1 += 1;
                        let w = width.entry((rounds, class[i])).or_default();
                        w.0 += l.relative_spread();
                        w.1 += 1;
                    }
                    let chain: Vec<String> = (0..cells).map(cell_id).collect();
                    if let Ok(a) = attribution(&run, &chain) {
                        for (i, s) in a.steps.iter().enumerate().skip(1) {
                            let Some((lo, hi)) = s.vs_previous.and_then(|c| c.ratio_ci) else {
                                continue;
                            };
                            let truth = levels[i] / levels[i - 1];
                            let e = hits.entry(("step", rounds)).or_default();
                            e.0 += usize::from(lo <= truth && truth <= hi);
                            e.1 += 1;
                        }
                    }
                }
            }
        }
    }
    let mut table = String::from("kind   rounds  coverage  intervals\n");
    for ((kind, rounds), (hit, n)) in &hits {
        table.push_str(&format!(
            "{kind:<6} {rounds:>6}  {:>7.1}%  {n:>9}\n",
            100.0 * *hit as f64 / *n as f64
        ));
    }
    table.push_str("rounds  noise  mean ± of the cell level\n");
    for ((rounds, class), (w, n)) in &width {
        table.push_str(&format!(
            "{rounds:>6}  {:>4.0}%  {:>5.1}%\n",
            100.0 * SD[*class],
            100.0 * w / *n as f64
        ));
    }
    for ((rounds, class), (hit, n)) in &by_class {
        table.push_str(&format!(
            "{rounds:>2} rounds, noise {:>3.0}%: cell levels cover {:.1}%\n",
            100.0 * SD[*class],
            100.0 * *hit as f64 / *n as f64
        ));
    }
    eprintln!("{table}");
    for ((kind, rounds), (hit, n)) in &hits {
        let cov = *hit as f64 / *n as f64;
        assert!(
            (0.92..=0.98).contains(&cov),
            "{kind} at {rounds} rounds covers {:.1}%\n{table}",
            100.0 * cov
        );
    }
    // Each noise class on its own, too, once there are rounds enough to
    // tell a cell's noise (10): one pooled variance would cover the quiet
    // cells always and the 20% ones 82% of the time. At 3 rounds a cell's
    // own variance has about one degree of freedom, the cells are rarely
    // told apart and the pooled variance mostly stands (docs/analysis.md).
    for ((rounds, _), (hit, n)) in &by_class {
        let cov = *hit as f64 / *n as f64;
        assert!(*rounds < 10 || (0.90..=0.985).contains(&cov), "{table}");
    }
    // At 10 rounds a 1% cell's interval is several times narrower than a
    // 20% cell's: each cell is judged by its own noise.
    let mean = |class: usize| {
        let (w, n) = width[&(10, class)];
        w / n as f64
    };
    assert!(mean(0) * 4.0 < mean(3), "{table}");
}
