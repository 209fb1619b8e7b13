//! `tare compare`: two runs side by side, as benchstat compares two sets of
//! benchmark results: per cell present in both, old and new levels with
//! their intervals, the change with its interval, the p-value, and `~` when
//! the difference is not significant.
//!
//! Two runs share no rounds, so nothing pairs: the change is the ratio of
//! geometric means with Welch's t interval on log values, whose spread
//! includes each run's drift (a re-run lands on another day's machine).

use serde::{Deserialize, Serialize};

use crate::cell::CellStats;
use crate::run::Run;
use crate::stats::{welch_contrast, Contrast};

/// One cell measured in both runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompareRow {
    pub cell: String,
    pub old: CellStats,
    pub new: CellStats,
    /// New throughput relative to old (Welch, unpaired).
    pub throughput: Contrast,
    /// New p99 latency relative to old.
    pub p99: Contrast,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub old_run: String,
    pub new_run: String,
    /// Cells in both runs, in the old run's order.
    pub rows: Vec<CompareRow>,
    /// Cells with results in only one of the runs.
    pub only_old: Vec<String>,
    pub only_new: Vec<String>,
    /// Geometric means over `rows` of each cell's printed throughput (its
    /// level, else its median; benchstat's `geomean` line): one number for
    /// "did the whole run move"; `None` when the rows' primary metrics
    /// differ (IOPS beside GFLOP/s).
    pub throughput_geomean: Option<(f64, f64)>,
    pub p99_geomean: Option<(f64, f64)>,
}

/// Why `old` and `new` do not measure the same thing, one reason each
/// (empty: comparable): a different target, different load settings (each
/// setting named with both values), or a `--debug-mode` run beside a real
/// one. `tare compare` refuses such runs unless forced (docs/analysis.md,
/// "Compare").
pub fn incomparable(old: &Run, new: &Run) -> Vec<String> {
    let mut why = Vec::new();
    let plan = |r: &Run| r.plan.clone().unwrap_or_default();
    let (a, b) = (plan(old), plan(new));
    if let (Some(x), Some(y)) = (&a.target, &b.target) {
        if x != y {
            why.push(format!("different targets ({x} vs {y})"));
        }
    }
    let (differ, _) = load_differences(old, new);
    if !differ.is_empty() {
        why.push(format!("different loads ({})", differ.join(", ")));
    }
    match (debug_mode(old), debug_mode(new)) {
        (true, false) => why.push(format!("{} is a --debug-mode run", old.run_id)),
        (false, true) => why.push(format!("{} is a --debug-mode run", new.run_id)),
        _ => {}
    }
    why
}

/// Load settings that differ between two comparable runs without changing
/// what a second of load measures: the measured window's length, the
/// warm-up and the ramp before it. `tare compare` prints them as a note
/// (docs/analysis.md, "Compare").
pub fn load_notes(old: &Run, new: &Run) -> Vec<String> {
    let (_, notes) = load_differences(old, new);
    if notes.is_empty() {
        return notes;
    }
    vec![format!("different load windows ({})", notes.join(", "))]
}

/// Keys of `[load]` whose difference leaves a rate comparable.
const WINDOW_KEYS: [&str; 3] = ["duration", "warmup", "ramp"];

/// The differing load settings of two runs: those that change what is
/// measured, and those of the window only ([`WINDOW_KEYS`]).
fn load_differences(old: &Run, new: &Run) -> (Vec<String>, Vec<String>) {
    let plan = |r: &Run| r.plan.clone().unwrap_or_default();
    let (a, b) = (plan(old), plan(new));
    let mut differ = Vec::new();
    if let (Some(x), Some(y)) = (&a.load, &b.load) {
        settings_differ("", x, y, &mut differ);
    }
    differ
        .into_iter()
        .partition(|d| !WINDOW_KEYS.iter().any(|k| d.starts_with(&format!("{k} "))))
}

/// Whether `run` was made by `tare run --debug-mode` (mock placements and
/// engine), as its provenance's command line says.
fn debug_mode(run: &Run) -> bool {
    let lines = run.provenance.iter().flat_map(|p| {
        std::iter::once(&p["command_line"]).chain(
            p["resumed"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| &r["command_line"]),
        )
    });
    lines
        .filter_map(|l| l.as_array())
        .flatten()
        .any(|a| a.as_str() == Some("--debug-mode"))
}

/// The settings of two load snapshots that differ, `key a vs b`, nested
/// tables as `http.path`.
fn settings_differ(
    prefix: &str,
    a: &serde_json::Value,
    b: &serde_json::Value,
    out: &mut Vec<String>,
) {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let null = Value::Null;
                let key = format!("{prefix}{k}");
                let (va, vb) = (x.get(k).unwrap_or(&null), y.get(k).unwrap_or(&null));
                settings_differ(&format!("{key}."), va, vb, out);
            }
        }
        _ if a != b => out.push(format!("{} {a} vs {b}", prefix.trim_end_matches('.'))),
        _ => {}
    }
}

/// Compares `new` against `old`, matching cells by id.
pub fn compare(old: &Run, new: &Run) -> Comparison {
    let old_cells = old.cells();
    let new_cells = new.cells();
    let mut rows = Vec::new();
    let mut only_old = Vec::new();
    for o in &old_cells {
        let Some(n) = new_cells.iter().find(|n| n.cell == o.cell) else {
            only_old.push(o.cell.clone());
            continue;
        };
        let (Some(throughput), Some(p99)) = (
            welch_contrast(&o.throughput_samples, &n.throughput_samples),
            welch_contrast(&o.p99_samples_us, &n.p99_samples_us),
        ) else {
            continue;
        };
        rows.push(CompareRow {
            cell: o.cell.clone(),
            old: o.clone(),
            new: n.clone(),
            throughput,
            p99,
        });
    }
    let only_new = new_cells
        .iter()
        .filter(|n| !old_cells.iter().any(|o| o.cell == n.cell))
        .map(|n| n.cell.clone())
        .collect();
    let geomean_of = |f: fn(&CellStats) -> f64| {
        Some((
            geomean(rows.iter().map(|r| f(&r.old)))?,
            geomean(rows.iter().map(|r| f(&r.new)))?,
        ))
    };
    // A geomean over IOPS and GFLOP/s (or over a rate and a latency,
    // which move in opposite directions) says nothing: one metric only.
    let one_metric = rows.iter().all(|r| {
        r.old.measure() == rows[0].old.measure() && r.new.measure() == rows[0].old.measure()
    });
    Comparison {
        old_run: old.run_id.clone(),
        new_run: new.run_id.clone(),
        throughput_geomean: if one_metric {
            geomean_of(|c| c.throughput_shown().median)
        } else {
            None
        },
        p99_geomean: geomean_of(|c| c.p99_shown().median),
        rows,
        only_old,
        only_new,
    }
}

/// Geometric mean of positive values; `None` if there are none or any is
/// not positive (a zero throughput has no logarithm).
fn geomean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0usize);
    for v in values {
        if v <= 0.0 || !v.is_finite() {
            return None;
        }
        sum += v.ln();
        n += 1;
    }
    (n > 0).then(|| (sum / n as f64).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geomean_of_ratios() {
        assert!((geomean([2.0, 8.0].into_iter()).unwrap() - 4.0).abs() < 1e-12);
        assert!(geomean([2.0, 0.0].into_iter()).is_none());
        assert!(geomean(std::iter::empty()).is_none());
    }
}
