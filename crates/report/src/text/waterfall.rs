//! The attribution table, seed 000's waterfall with numbers you can trust:
//! each step of the chain with its throughput and p99 (levels or medians,
//! with intervals), the change it makes, the change's interval (paired on
//! the round), the smallest change the run could have detected, its share of
//! the total gap with Fieller's interval, and the p-value against the step
//! before;
//! then the waterfall on one line, as docs/studies.md (seed 000, "The post's
//! attribution") writes seed 000's results by hand.

use tare_analysis::stats::{Contrast, MedianCi, Method, Significance, ALPHA};
use tare_analysis::{Attribution, CellStats, Step};

use super::notes::Notes;
use super::{factor_order, interval_header, levels, with_interval};
use crate::report::{AttributionOutcome, PartsOutcome, Report, SplitOutcome};
use crate::table::{Align, Table};
use crate::units;

pub(super) fn section(r: &Report, notes: &mut Notes) -> String {
    match &r.attribution {
        AttributionOutcome::NoChain => {
            "attribution: no chain (declare `[attribution] chain` in the \
             experiment, or pass --chain CELL for each step)\n"
                .into()
        }
        AttributionOutcome::Refused {
            dropped, reason, ..
        } => {
            let mut out = format!("attribution: not computed: {reason}\n");
            if !dropped.is_empty() {
                out.push_str(&format!(
                    "  chain cells skipped on this machine: {}\n",
                    dropped.join("; ")
                ));
            }
            out
        }
        AttributionOutcome::Computed {
            attribution,
            dropped,
            splits,
            hidden,
            ..
        } => {
            if !dropped.is_empty() {
                notes.add(format!(
                    "attribution: chain cells skipped on this machine, so the chain goes around \
                     them: {}",
                    dropped.join("; ")
                ));
            }
            let mut out = table(attribution, &r.cells, notes);
            for split in splits {
                out.push_str(&parts(attribution, split, notes));
            }
            for h in hidden {
                let facts: Vec<String> = h
                    .facts
                    .iter()
                    .map(|(f, from, to)| format!("{f} {from} → {to}"))
                    .collect();
                notes.add(format!(
                    "step {} ({}) also changes {} (fairness): add `split = true` under \
                     [attribution] to measure each part with its own interval",
                    h.step,
                    step_label(attribution, h.step),
                    facts.join(", ")
                ));
            }
            out
        }
    }
}

fn table(a: &Attribution, cells: &[CellStats], notes: &mut Notes) -> String {
    let order = factor_order(cells);
    let cell_of = |id: &str| cells.iter().find(|c| c.cell == id);
    let mut out = title(a, notes);
    // Round trips (tare net): each step's time per round trip and what the
    // step adds to it ("+30.3 µs per round trip").
    let rt: Vec<Option<f64>> = a
        .steps
        .iter()
        .map(|s| {
            cell_of(&s.cell)
                .and_then(CellStats::round_trip_us)
                .map(|m| m.median)
        })
        .collect();
    out.push_str(&steps(a, cells, &order, &rt, notes).render(2));

    // The waterfall on one line, as docs/studies.md writes seed 000's.
    let line: Vec<String> = a
        .steps
        .iter()
        .map(|s| {
            let what = match &s.change {
                None => cell_of(&s.cell).map_or(s.cell.clone(), |c| levels(c, &order)),
                Some(ch) => format!("{}={}", ch.factor, ch.to),
            };
            format!("{} ({what})", units::si(s.throughput_shown().median))
        })
        .collect();
    out.push_str(&format!("  {}\n", line.join(" → ")));
    if let (Some(Some(from)), Some(Some(to))) = (rt.first(), rt.last()) {
        if rt.len() > 1 {
            out.push_str(&format!(
                "  per round trip: {from:.1} µs → {to:.1} µs ({:+.1} µs per round trip)\n",
                to - from
            ));
        }
    }
    out
}

/// The table's title line: the gap from the first step to the last, with
/// its change, interval and verdict.
fn title(a: &Attribution, notes: &mut Notes) -> String {
    let first = &a.steps[0];
    let last = &a.steps[a.steps.len() - 1];
    let what = if a.metric == "throughput" {
        a.unit.clone()
    } else {
        format!("{} ({}, {})", a.metric, a.unit, a.better.words())
    };
    if a.better == tare_record::Better::Lower {
        notes.add(format!(
            "{} is lower-is-better: a step with a positive change makes it worse, and a step's share is of the gap as measured (last - first), whichever way it runs",
            a.metric
        ));
    }
    let mut out = format!(
        "attribution of the {} gap: {} → {} = {}",
        what,
        units::si(first.throughput_shown().median),
        units::si(last.throughput_shown().median),
        units::si_signed(a.gap)
    );
    if let Some(o) = &a.overall {
        out.push_str(&format!(" ({}", units::change(o.change())));
        if let Some((lo, hi)) = o.change_ci() {
            out.push_str(&format!(" [{}, {}]", units::change(lo), units::change(hi)));
        }
        out.push_str(&format!(", {})", verdict(o, notes)));
        if o.significance == Significance::NotSignificant {
            notes.add(
                "the total gap itself is not significant, so no step has a share of it \
                 (`n/a`): a share of noise is not an effect; each step's own change and \
                 interval stand",
            );
        }
    }
    out.push('\n');
    out
}

/// One row per step: its level, what it changes and by how much, with
/// its interval, detectable change, share of the gap and p-value.
fn steps(
    a: &Attribution,
    cells: &[CellStats],
    order: &[String],
    rt: &[Option<f64>],
    notes: &mut Notes,
) -> Table {
    let cell_of = |id: &str| cells.iter().find(|c| c.cell == id);
    let shares_mean_something = a.shares_mean_something();
    let tp_shown: Vec<MedianCi> = a.steps.iter().map(|s| s.throughput_shown()).collect();
    let p99_shown: Vec<MedianCi> = a.steps.iter().map(|s| s.p99_shown()).collect();
    let tp: Vec<&MedianCi> = tp_shown.iter().collect();
    let p99: Vec<&MedianCi> = p99_shown.iter().collect();
    let tp_header = interval_header(&a.unit, &tp);
    let p99_header = interval_header("p99", &p99);
    let per_rt = rt.iter().any(Option::is_some);
    let mut columns = vec![
        ("#", Align::Right),
        ("step", Align::Left),
        (tp_header.as_str(), Align::Left),
    ];
    if per_rt {
        columns.push(("µs/round trip", Align::Left));
    }
    columns.extend([
        (p99_header.as_str(), Align::Left),
        ("change", Align::Right),
        ("[95% CI]", Align::Left),
        ("detectable", Align::Left),
        ("share of gap [95% CI]", Align::Left),
        ("p", Align::Left),
    ]);
    let mut t = Table::new(&columns);
    for (i, s) in a.steps.iter().enumerate() {
        let label = match &s.change {
            None => format!(
                "baseline: {}",
                cell_of(&s.cell).map_or(s.cell.clone(), |c| levels(c, order))
            ),
            Some(ch) => format!("{}: {} → {}", ch.factor, ch.from, ch.to),
        };
        let mut row = vec![i.to_string(), label, with_interval(&tp_shown[i], units::si)];
        if per_rt {
            row.push(match (rt[i], i.checked_sub(1).and_then(|p| rt[p])) {
                (Some(now), Some(before)) => format!("{now:.1} ({:+.1})", now - before),
                (Some(now), None) => format!("{now:.1}"),
                _ => "-".into(),
            });
        }
        row.push(with_interval(&p99_shown[i], units::latency_us));
        if let Some(v) = &s.vs_previous {
            change_cells(&mut row, i, s, v, shares_mean_something, notes);
        }
        t.row(row);
    }
    t
}

/// A step's change from the one before: the change, its interval, the
/// detectable change, its share of the gap and its p-value.
fn change_cells(
    row: &mut Vec<String>,
    i: usize,
    s: &Step,
    v: &Contrast,
    shares_mean_something: bool,
    notes: &mut Notes,
) {
    row.push(format!(
        "{} {}",
        units::si_signed(s.delta),
        units::change(v.change())
    ));
    row.push(v.change_ci().map_or(String::new(), |(lo, hi)| {
        format!("[{}, {}]", units::change(lo), units::change(hi))
    }));
    row.push(detectable(v, notes));
    row.push(share(s, shares_mean_something));
    row.push(verdict(v, notes));
    if v.significance == Significance::NotSignificant {
        notes.add(format!(
            "step {i} ({}): its {} change is within the noise (this run could only \
             detect ±{}); it cannot be told apart from no change",
            s.change.as_ref().map_or(String::new(), |c| format!(
                "{}: {} → {}",
                c.factor, c.from, c.to
            )),
            units::change(v.change()),
            v.detectable.map_or("-".into(), units::percent),
        ));
    }
}

/// The p column: the p-value when significant, `~ p` when not, `~ (n=3+3)`
/// when it cannot be, with the matching note.
pub(super) fn verdict(c: &Contrast, notes: &mut Notes) -> String {
    let p = c.p_value().map_or("-".into(), units::p_value);
    let test = match c.method {
        Method::PairedT => "paired t test on within-round log ratios",
        Method::WelchT => "Welch's t test on log values, unpaired",
        Method::MannWhitneyBootstrap => "Mann-Whitney U",
    };
    match c.significance {
        // `units::p_value` writes `<0.001` for tiny p: then `p<0.001`.
        Significance::Significant if p.starts_with('<') => format!("p{p}"),
        Significance::Significant => format!("p={p}"),
        Significance::NotSignificant => {
            notes.add(format!(
                "`~`: not significant ({test}, two-sided, p > {ALPHA}): the trials' noise is \
                 too wide to separate the two"
            ));
            if p.starts_with('<') {
                format!("~ p{p}")
            } else {
                format!("~ p={p}")
            }
        }
        Significance::TooFewTrials { recommended, .. }
            if c.method != Method::MannWhitneyBootstrap =>
        {
            notes.add(format!(
                "`~ (n=…)`: with {} vs {} trials ({test}) there is no spread to test against: \
                 run ≥ {recommended} rounds to test a difference",
                c.n.0, c.n.1
            ));
            format!("~ (n={}+{})", c.n.0, c.n.1)
        }
        Significance::TooFewTrials { min_p, recommended } => {
            notes.add(format!(
                "`~ (n=…)`: with {} vs {} trials no outcome can reach p ≤ {ALPHA} (the smallest \
                 possible two-sided p is {}): run ≥ {recommended} trials per cell to test a \
                 difference",
                c.n.0,
                c.n.1,
                units::p_value(min_p)
            ));
            format!("~ (n={}+{})", c.n.0, c.n.1)
        }
    }
}

/// The detectable column: `±2.4%`, the smallest true change this step's
/// comparison finds 4 times in 5 at α = 0.05, with its note.
fn detectable(c: &Contrast, notes: &mut Notes) -> String {
    let Some(d) = c.detectable else {
        return "-".into();
    };
    notes.add(
        "detectable: the smallest change the run could have detected (two-sided α = 0.05, 80% \
         power, from the comparison's standard error); a smaller true effect would often be \
         called `~`: add rounds to shrink it (it falls as 1/√rounds)",
    );
    format!("±{}", units::percent(d))
}

/// `factor: from → to` of step `i` of `a`.
fn step_label(a: &Attribution, i: usize) -> String {
    a.steps
        .get(i)
        .and_then(|s| s.change.as_ref())
        .map_or(format!("step {i}"), |c| {
            format!("{}: {} → {}", c.factor, c.from, c.to)
        })
}

/// One split step: each part's change, interval, detectable effect, share
/// of the step and p, the part that changes the step's own factor named
/// "the rest".
fn parts(a: &Attribution, split: &SplitOutcome, notes: &mut Notes) -> String {
    let label = step_label(a, split.step);
    let sub = match &split.parts {
        PartsOutcome::Refused { reason } => {
            return format!(
                "  step {} ({label}) in parts: not computed: {reason}\n",
                split.step
            );
        }
        PartsOutcome::Computed { attribution } => attribution,
    };
    let own = a
        .steps
        .get(split.step)
        .and_then(|s| s.change.as_ref())
        .map(|c| c.factor.clone());
    let mut out = format!("  step {} ({label}) in parts", split.step);
    if let Some(o) = &sub.overall {
        out.push_str(&format!(": {}", units::change(o.change())));
        if let Some((lo, hi)) = o.change_ci() {
            out.push_str(&format!(" [{}, {}]", units::change(lo), units::change(hi)));
        }
    }
    out.push('\n');
    let shares = sub.shares_mean_something();
    let mut t = Table::new(&[
        ("part", Align::Left),
        ("change", Align::Right),
        ("[95% CI]", Align::Left),
        ("detectable", Align::Left),
        ("share of step [95% CI]", Align::Left),
        ("share of gap [95% CI]", Align::Left),
        ("p", Align::Left),
    ]);
    let of_gap = |k: usize| -> String {
        let g = split.gap_shares.as_ref().and_then(|g| g.get(k));
        match g {
            _ if !a.shares_mean_something() => "n/a".into(),
            Some(g) => share_text(g.share, g.ci),
            None => "-".into(),
        }
    };
    for (k, s) in sub.steps.iter().skip(1).enumerate() {
        let (Some(ch), Some(v)) = (&s.change, &s.vs_previous) else {
            continue;
        };
        let what = format!("{}: {} → {}", ch.factor, ch.from, ch.to);
        t.row(vec![
            if own.as_deref() == Some(ch.factor.as_str()) {
                format!("the rest ({what})")
            } else {
                what
            },
            units::change(v.change()),
            v.change_ci().map_or(String::new(), |(lo, hi)| {
                format!("[{}, {}]", units::change(lo), units::change(hi))
            }),
            detectable(v, notes),
            share(s, shares),
            of_gap(k),
            verdict(v, notes),
        ]);
    }
    notes.add(
        "in parts: a split step runs through intermediate cells that change one container \
         option at a time (seccomp, then storage = host-path, the files native serves); the \
         part that changes the step's own factor is what remains of it, `the rest`",
    );
    out.push_str(&t.render(4));
    out
}

/// A step's share with its interval; `n/a` when shares mean nothing (the
/// gap they would divide is not significant).
fn share(s: &Step, shares_mean_something: bool) -> String {
    match s.share {
        _ if !shares_mean_something => "n/a".into(),
        Some(sh) => share_text(sh, s.share_ci),
        None => "-".into(),
    }
}

/// `78.2% [76.6%, 79.6%]`, or the share alone without an interval.
fn share_text(share: f64, ci: Option<(f64, f64)>) -> String {
    match ci {
        Some((lo, hi)) => format!(
            "{} [{}, {}]",
            units::percent(share),
            units::percent(lo),
            units::percent(hi)
        ),
        None => units::percent(share),
    }
}
