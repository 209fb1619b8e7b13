//! Keep a change only when it helps beyond the noise.

use serde::Serialize;
use tare_analysis::stats::contrast::{contrast, Contrast};
use tare_analysis::{CellStats, Run};

/// One change measured against the baseline.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    pub level: String,
    pub rule: String,
    pub priority: String,
    /// Throughput of the change over the baseline's.
    pub throughput: Option<Contrast>,
    /// p99 latency of the change over the baseline's.
    pub p99: Option<Contrast>,
    pub baseline_error_rate: f64,
    pub error_rate: f64,
    pub kept: bool,
    /// Why, in words.
    pub reason: String,
}

fn cell<'a>(cells: &'a [CellStats], config: &str) -> Option<&'a CellStats> {
    cells
        .iter()
        .find(|c| c.factors.get("config").map(String::as_str) == Some(config))
}

/// Judges the cell whose `config` level is `level` against `baseline`.
/// Kept when it significantly raises throughput, or significantly lowers p99
/// or the error rate without significantly lowering throughput.
pub(crate) fn judge(run: &Run, level: &str, rule: &str, priority: &str) -> Verdict {
    let cells = run.cells();
    let (Some(base), Some(cand)) = (cell(&cells, "baseline"), cell(&cells, level)) else {
        return Verdict {
            level: level.into(),
            rule: rule.into(),
            priority: priority.into(),
            throughput: None,
            p99: None,
            baseline_error_rate: 0.0,
            error_rate: 0.0,
            kept: false,
            reason: "not measured (no successful trial)".into(),
        };
    };
    let thr = contrast(&base.throughput_samples, &cand.throughput_samples);
    let p99 = contrast(&base.p99_samples_us, &cand.p99_samples_us);
    let up = |c: &Option<Contrast>| c.is_some_and(|c| c.is_significant() && c.ratio > 1.0);
    let down = |c: &Option<Contrast>| c.is_some_and(|c| c.is_significant() && c.ratio < 1.0);
    let fewer_errors = base.error_rate > 0.001 && cand.error_rate < base.error_rate * 0.5;
    let (kept, reason) = if down(&thr) {
        (false, "throughput significantly lower".to_string())
    } else if up(&thr) {
        (true, "throughput significantly higher".to_string())
    } else if down(&p99) {
        (
            true,
            "p99 significantly lower, throughput no worse".to_string(),
        )
    } else if fewer_errors {
        (
            true,
            format!(
                "errors {:.2}% -> {:.2}%, throughput no worse",
                base.error_rate * 100.0,
                cand.error_rate * 100.0
            ),
        )
    } else {
        (false, "no difference beyond the noise".to_string())
    };
    Verdict {
        level: level.into(),
        rule: rule.into(),
        priority: priority.into(),
        throughput: thr,
        p99,
        baseline_error_rate: base.error_rate,
        error_rate: cand.error_rate,
        kept,
        reason,
    }
}
