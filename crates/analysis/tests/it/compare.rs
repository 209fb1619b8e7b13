//! `compare` on two synthetic runs: one cell really moved, one did not, one
//! exists only in each run.

use tare_analysis::stats::Significance;
use tare_analysis::synthetic::{trials, SynthCell};
use tare_analysis::{compare, Run};

fn runs(trials_per_cell: u32) -> (Run, Run) {
    let old = vec![
        SynthCell::new(&[("placement", "native")], 39_000.0, 0.02),
        SynthCell::new(&[("placement", "docker-publish")], 9_900.0, 0.02),
        SynthCell::new(&[("placement", "docker-bridge")], 28_000.0, 0.02),
    ];
    let new = vec![
        SynthCell::new(&[("placement", "native")], 39_000.0, 0.02),
        // docker-proxy replaced by DNAT: +80%.
        SynthCell::new(&[("placement", "docker-publish")], 17_800.0, 0.02),
        SynthCell::new(&[("placement", "lab-nat")], 20_000.0, 0.02),
    ];
    (
        Run::from_trials(trials("old", &old, trials_per_cell, 11)),
        Run::from_trials(trials("new", &new, trials_per_cell, 12)),
    )
}

#[test]
fn a_real_change_is_significant_and_no_change_is_not() {
    let (old, new) = runs(6);
    let c = compare(&old, &new);
    assert_eq!((c.old_run.as_str(), c.new_run.as_str()), ("old", "new"));
    assert_eq!(c.rows.len(), 2);
    assert_eq!(c.only_old, vec!["placement=docker-bridge".to_string()]);
    assert_eq!(c.only_new, vec!["placement=lab-nat".to_string()]);

    let row = |id: &str| c.rows.iter().find(|r| r.cell == id).unwrap();
    let native = row("placement=native");
    assert_eq!(native.throughput.significance, Significance::NotSignificant);
    let publish = row("placement=docker-publish");
    assert!(
        publish.throughput.is_significant(),
        "{:?}",
        publish.throughput
    );
    let (lo, hi) = publish.throughput.change_ci().unwrap();
    assert!(lo < 0.8 && 0.8 < hi && lo > 0.6 && hi < 1.0, "{lo} {hi}");
    // Closed loop: twice the rate, half the latency.
    assert!(publish.p99.is_significant() && publish.p99.change() < -0.3);

    let (g_old, g_new) = c.throughput_geomean.unwrap();
    assert!(g_new > g_old);
}

/// Welch's t needs two trials a side for a spread; with one it says so,
/// with a recommendation, instead of an interval.
#[test]
fn one_against_one_says_too_few() {
    let (old, new) = runs(1);
    let c = compare(&old, &new);
    assert!(!c.rows.is_empty());
    assert!(c.rows.iter().all(|r| r.throughput.ratio_ci.is_none()
        && matches!(
            r.throughput.significance,
            Significance::TooFewTrials { recommended: 3, .. }
        )));
    // Three against three can already call an 80% change (Mann-Whitney's
    // smallest p at 3+3 was 0.1).
    let (old, new) = runs(3);
    let c = compare(&old, &new);
    let publish = c.rows.iter().find(|r| r.cell == "placement=docker-publish");
    assert!(publish.unwrap().throughput.is_significant());
}

#[test]
fn a_run_compared_with_itself_changes_nothing() {
    let (old, _) = runs(5);
    let c = compare(&old, &old);
    for r in &c.rows {
        assert_eq!(r.throughput.ratio, 1.0);
        assert_eq!(r.throughput.p_value(), Some(1.0));
        assert!(!r.throughput.is_significant());
    }
}
