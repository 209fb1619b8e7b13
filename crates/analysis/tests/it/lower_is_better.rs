//! Cells whose primary metric is lower-is-better (a tool's completion
//! latency, a time): their levels come back in the metric's own units with
//! the interval the right way round, a slow round reads as slow in the
//! drift, attribution keeps the direction, and comparison reports the
//! change of the metric itself (docs/tools.md, "In the analysis").

use tare_analysis::synthetic::{trials, SynthCell};
use tare_analysis::{attribution, compare, levels_drift, Run};
use tare_record::{Better, Metric, TrialRecord};

const METRIC: &str = "write_clat_p99_us";

/// Cells whose latency is `k / rps`: a cell or round that runs slow has
/// fewer requests per second and a higher latency, as a real one does.
fn cells() -> Vec<SynthCell> {
    vec![
        SynthCell::new(&[("placement", "native")], 50_000.0, 0.02),
        SynthCell::new(&[("placement", "docker-host")], 40_000.0, 0.02),
        SynthCell::new(&[("placement", "vm-bridge")], 20_000.0, 0.02),
    ]
}

/// Microseconds of latency for a record at `rps` (5,000 µs at 1 req/s):
/// native 100 µs, docker-host 125 µs, vm-bridge 250 µs.
fn latency_of(rps: f64) -> f64 {
    5e6 / rps
}

/// `records` with the latency as their only metric and primary; the trials
/// of `slow_round` ran `slowdown` times slower.
fn as_latency(mut records: Vec<TrialRecord>, slow_round: u32, slowdown: f64) -> Vec<TrialRecord> {
    for t in &mut records {
        let r = t.result.as_mut().expect("every synthetic trial succeeds");
        let mut v = latency_of(r.rps.unwrap());
        if t.trial == slow_round {
            v *= slowdown;
        }
        r.metrics = vec![Metric::new(METRIC, v, "µs", Better::Lower)];
        r.primary = Some(METRIC.into());
    }
    records
}

/// The steady latency of a cell of [`cells`], in µs.
fn truth_of(cell: &str) -> f64 {
    let c = cells().into_iter().find(|c| c.id() == cell).unwrap();
    latency_of(c.rps)
}

fn run(seed: u64, scale: f64) -> Run {
    let mut cells = cells();
    for c in &mut cells {
        c.rps /= scale;
    }
    Run::from_trials(as_latency(trials("lat", &cells, 6, seed), 3, 1.3))
}

#[test]
fn levels_are_in_the_metric_units_with_the_interval_the_right_way_round() {
    let run = run(7, 1.0);
    let cells = run.cells();
    assert_eq!(cells.len(), 3);
    for c in &cells {
        let truth = truth_of(&c.cell);
        assert_eq!(c.better, Better::Lower, "{}", c.cell);
        assert_eq!(c.metric, METRIC);
        assert_eq!(c.unit, "µs");
        let l = c.level.expect("six rounds of three cells have a level");
        assert!(l.lo < l.estimate && l.estimate < l.hi, "{}: {l:?}", c.cell);
        // The slow round is a round effect, shared by every cell: levels
        // are at the run's average round (rounds' log effects sum to
        // zero), so each is its steady latency times 1.3^(1/6).
        let expected = truth * 1.3f64.powf(1.0 / 6.0);
        assert!(
            (l.estimate / expected - 1.0).abs() < 0.02,
            "{}: level {} against {expected}",
            c.cell,
            l.estimate
        );
        assert!(
            l.lo > truth * 0.9 && l.hi < truth * 1.1,
            "{}: {l:?}",
            c.cell
        );
    }
}

#[test]
fn a_round_with_higher_latency_is_a_slow_round() {
    let run = run(11, 1.0);
    let drift = levels_drift(&run.cells()).expect("six rounds can be modelled");
    let speed = |round: u32| drift.rounds.iter().find(|r| r.0 == round).unwrap().1;
    for r in [1, 2, 4, 5, 6] {
        assert!(
            speed(3) < speed(r),
            "round 3 ran 1.3x slower: {:?}",
            drift.rounds
        );
    }
    // 1 / 1.3 of the others, within the trials' own ±2%.
    let others: f64 = [1, 2, 4, 5, 6].iter().map(|&r| speed(r)).sum::<f64>() / 5.0;
    let ratio = speed(3) / others;
    assert!((ratio * 1.3 - 1.0).abs() < 0.04, "{ratio}");
    assert!(drift.min < -0.15, "{drift:?}");
}

#[test]
fn attribution_keeps_the_direction_and_the_shares_of_a_latency_gap() {
    let run = run(13, 1.0);
    let chain: Vec<String> = cells().iter().map(|c| c.id()).collect();
    let a = attribution(&run, &chain).unwrap();
    assert_eq!(a.better, Better::Lower);
    assert_eq!(a.metric, METRIC);
    // The gap is last minus first in the metric's units: 250 - 100 µs.
    assert!((a.gap - 150.0).abs() < 10.0, "{}", a.gap);
    assert!(a.gap_is_significant());
    let shares: Vec<f64> = a.steps.iter().filter_map(|s| s.share).collect();
    assert_eq!(shares.len(), 2);
    assert!(
        (shares.iter().sum::<f64>() - 1.0).abs() < 1e-9,
        "{shares:?}"
    );
    // 25 of 150 µs, then 125 of 150.
    assert!((shares[0] - 25.0 / 150.0).abs() < 0.05, "{shares:?}");
    for s in &a.steps[1..] {
        assert!(s.delta > 0.0, "each step raises the latency: {}", s.delta);
        let v = s.vs_previous.unwrap();
        assert!(v.ratio > 1.0 && v.is_significant(), "{v:?}");
    }
}

#[test]
fn comparison_reports_the_metric_itself_lower_after_a_gain() {
    let old = run(17, 1.0);
    // The new run is 20% faster: every latency is 0.8 of the old.
    let new = run(19, 0.8);
    let c = compare(&old, &new);
    assert_eq!(c.rows.len(), 3);
    for row in &c.rows {
        assert_eq!(row.new.better, Better::Lower);
        let t = row.throughput;
        assert!((t.ratio - 0.8).abs() < 0.05, "{}: {t:?}", row.cell);
        assert!(t.is_significant(), "{}: {t:?}", row.cell);
    }
    let (old_g, new_g) = c.throughput_geomean.expect("one metric in every row");
    assert!((new_g / old_g - 0.8).abs() < 0.05, "{old_g} -> {new_g}");
}
