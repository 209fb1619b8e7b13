//! What each change did, as a table (seed 003's before/after list, measured:
//! docs/studies.md, seed 003, "Results").

use std::fmt::Write as _;

use crate::decide::Verdict;
use crate::Tuning;

fn pct(c: &Option<tare_analysis::stats::contrast::Contrast>) -> String {
    match c {
        None => "-".into(),
        Some(c) => match c.change_ci() {
            Some((lo, hi)) => format!(
                "{:+.1}% [{:+.1}%, {:+.1}%]",
                c.change() * 100.0,
                lo * 100.0,
                hi * 100.0
            ),
            None => format!("{:+.1}%", c.change() * 100.0),
        },
    }
}

fn p(c: &Option<tare_analysis::stats::contrast::Contrast>) -> String {
    c.and_then(|c| c.p_value())
        .map_or("-".into(), |p| format!("{p:.3}"))
}

fn row(out: &mut String, v: &Verdict) {
    let _ = writeln!(
        out,
        "  {:<26} {:<8} {:<28} {:<28} {:>6.2}% {:>7}  {} ({})",
        v.rule,
        v.priority,
        pct(&v.throughput),
        pct(&v.p99),
        v.error_rate * 100.0,
        p(&v.throughput),
        if v.kept { "kept" } else { "dropped" },
        v.reason
    );
}

pub fn render(t: &Tuning) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "tare tune {}: each change alone against the baseline, then the kept ones together",
        t.baseline.display()
    );
    if t.target == crate::TuneTarget::NginxProxy {
        let _ = writeln!(
            out,
            "measured as a reverse proxy (nginx-proxy): nginx in front of a tare serve backend, its upstreams pointed there"
        );
    }
    for (i, r) in t.rounds.iter().enumerate() {
        let _ = writeln!(
            out,
            "round {} (baseline: {})",
            i + 1,
            if i == 0 {
                "the given config".to_string()
            } else {
                format!("round {} tuned", i)
            }
        );
        let _ = writeln!(
            out,
            "  {:<26} {:<8} {:<28} {:<28} {:>7} {:>7}  decision",
            "change", "priority", "req/s change [95% CI]", "p99 change [95% CI]", "errors", "p"
        );
        for v in &r.verdicts {
            row(&mut out, v);
        }
        if let Some(c) = &r.combined {
            row(&mut out, c);
        }
    }
    for m in &t.manual {
        let _ = writeln!(out, "needs a person: {m}");
    }
    match &t.tuned {
        Some(p) => {
            let _ = writeln!(out, "kept: {}", t.kept.join(", "));
            let _ = writeln!(out, "tuned config: {}", p.display());
        }
        None => {
            let _ = writeln!(
                out,
                "no change helped beyond the noise: the baseline stands"
            );
        }
    }
    out
}
