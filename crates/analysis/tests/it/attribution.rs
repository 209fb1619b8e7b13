//! The attribution waterfall on seed 000's numbers (docs/studies.md, seed
//! 000), and the chains it must refuse. Snapshots pin every printed number
//! (insta), so a change in any statistic shows up as a reviewed diff.

use std::fmt::Write as _;

use tare_analysis::stats::Significance;
use tare_analysis::synthetic::{seed000_cells, trials, SynthCell};
use tare_analysis::{attribution, Attribution, AttributionError, Run};

fn chain_of(cells: &[SynthCell]) -> Vec<String> {
    cells.iter().map(|c| c.id()).collect()
}

/// A plain listing of every number, to snapshot (rendering proper is
/// tare-report's job).
fn listing(a: &Attribution) -> String {
    let mut s = format!("gap {:+.0} {}\n", a.gap, a.unit);
    for step in &a.steps {
        let change = step.change.as_ref().map_or("baseline".to_string(), |c| {
            format!("{}: {} -> {}", c.factor, c.from, c.to)
        });
        let t = &step.throughput;
        write!(
            s,
            "{change:<42} {:>7.0} [{:.0}, {:.0}] @{:.1}%  p99 {:.0}us",
            t.median,
            t.lo,
            t.hi,
            t.confidence * 100.0,
            step.p99_us.median
        )
        .unwrap();
        if let Some(l) = step.level {
            write!(s, "  level {:.0} [{:.0}, {:.0}]", l.estimate, l.lo, l.hi).unwrap();
        }
        if let Some(v) = step.vs_previous {
            let (lo, hi) = v.ratio_ci.unwrap_or((f64::NAN, f64::NAN));
            write!(
                s,
                "  ratio {:.4} [{lo:.4}, {hi:.4}] mde {:.2}%",
                v.ratio,
                v.detectable.unwrap_or(f64::NAN) * 100.0
            )
            .unwrap();
        }
        if let (Some(share), Some(v)) = (step.share, step.vs_previous) {
            let (lo, hi) = step.share_ci.unwrap();
            write!(
                s,
                "  delta {:+.0}  share {:.1}% [{:.1}, {:.1}]  p={:.4} {}",
                step.delta,
                share * 100.0,
                lo * 100.0,
                hi * 100.0,
                v.p_value().unwrap(),
                match v.significance {
                    Significance::Significant => "significant".to_string(),
                    Significance::NotSignificant => "~".to_string(),
                    Significance::TooFewTrials { min_p, recommended } =>
                        format!("too few (min p {min_p:.3}, use {recommended})"),
                }
            )
            .unwrap();
        }
        s.push('\n');
    }
    s
}

#[test]
fn seed000_waterfall_five_trials() {
    let cells = seed000_cells(0.02);
    let run = Run::from_trials(trials("seed000", &cells, 5, 42));
    let a = attribution(&run, &chain_of(&cells)).unwrap();

    // The shares telescope to exactly 100%.
    let total: f64 = a.steps.iter().filter_map(|s| s.share).sum();
    assert!((total - 1.0).abs() < 1e-12, "{total}");
    // The published port is most of the gap: (27.5 - 9.9) / (39 - 9.9) = 60%.
    let port = a.steps[1].share.unwrap();
    assert!((0.55..0.66).contains(&port), "{port}");
    // Every step's interval contains its estimate.
    for s in &a.steps[1..] {
        let (lo, hi) = s.share_ci.unwrap();
        assert!(lo <= s.share.unwrap() && s.share.unwrap() <= hi, "{s:?}");
    }
    assert!(a.gap_is_significant());
    insta::assert_snapshot!(listing(&a));
}

/// Three rounds were "too few" for Mann-Whitney (smallest p 0.1); paired
/// on the round, a step of 8% or more against ±2% noise is a clear call.
#[test]
fn three_rounds_pair_and_call_clear_steps() {
    let cells = seed000_cells(0.02);
    let run = Run::from_trials(trials("seed000-3", &cells, 3, 42));
    let a = attribution(&run, &chain_of(&cells)).unwrap();
    assert_eq!(a.complete_rounds, Some(3));
    for s in &a.steps[1..] {
        let v = s.vs_previous.unwrap();
        assert_eq!(v.method, tare_analysis::stats::Method::PairedT, "{s:?}");
        assert_eq!(v.n, (3, 3));
        assert!(v.is_significant(), "{s:?}");
        let (lo, hi) = v.ratio_ci.unwrap();
        assert!(lo < v.ratio && v.ratio < hi);
    }
    // Three trials: min..max of each cell, at 75% confidence.
    assert!((a.steps[0].throughput.confidence - 0.75).abs() < 1e-12);
    insta::assert_snapshot!(listing(&a));
}

#[test]
fn a_step_changing_two_factors_is_refused_naming_both() {
    let cells = seed000_cells(0.02);
    let run = Run::from_trials(trials("bad", &cells, 3, 1));
    // Skip "tuned config": host/default/on → host/tuned/off changes two factors.
    let chain = vec![cells[0].id(), cells[1].id(), cells[3].id(), cells[4].id()];
    let err = attribution(&run, &chain).unwrap_err();
    assert_eq!(
        err,
        AttributionError::NotOneFactor {
            step: 2,
            from: cells[1].id(),
            to: cells[3].id(),
            changed: vec!["access_log".into(), "config".into()],
        }
    );
    assert_eq!(
        err.to_string(),
        "attribution step 2 (placement=docker-host,config=default,access_log=on → \
         placement=docker-host,config=tuned,access_log=off) changes 2 factors \
         (access_log, config); each step must change exactly one"
    );
}

#[test]
fn unknown_repeated_short_and_failed_chains_are_refused() {
    let mut cells = seed000_cells(0.02);
    cells[4] = cells[4].clone().failing(1).failing(2);
    let run = Run::from_trials(trials("bad", &cells, 2, 1));
    let ids = chain_of(&cells);
    assert_eq!(
        attribution(&run, &[ids[0].clone()]).unwrap_err(),
        AttributionError::TooShort(1)
    );
    assert_eq!(
        attribution(&run, &[ids[0].clone(), "placement=vm".into()]).unwrap_err(),
        AttributionError::UnknownCell("placement=vm".into())
    );
    assert_eq!(
        attribution(&run, &[ids[0].clone(), ids[1].clone(), ids[0].clone()]).unwrap_err(),
        AttributionError::Repeated(ids[0].clone())
    );
    assert_eq!(
        attribution(&run, &[ids[3].clone(), ids[4].clone()]).unwrap_err(),
        AttributionError::NoResults(ids[4].clone())
    );
}

#[test]
fn no_gap_means_no_shares_and_an_insignificant_overall() {
    let cells = vec![
        SynthCell::new(&[("placement", "native")], 30_000.0, 0.03),
        SynthCell::new(&[("placement", "docker-host")], 30_000.0, 0.03),
    ];
    let run = Run::from_trials(trials("flat", &cells, 5, 3));
    let a = attribution(&run, &chain_of(&cells)).unwrap();
    assert!(!a.gap_is_significant(), "{:?}", a.overall);
}

#[test]
fn the_same_trials_in_another_line_order_give_the_same_numbers() {
    let cells = seed000_cells(0.02);
    let mut records = trials("seed000", &cells, 5, 42);
    let a = attribution(&Run::from_trials(records.clone()), &chain_of(&cells)).unwrap();
    records.reverse();
    let b = attribution(&Run::from_trials(records), &chain_of(&cells)).unwrap();
    assert_eq!(listing(&a), listing(&b));
}
