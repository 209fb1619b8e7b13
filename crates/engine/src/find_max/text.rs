//! The text of a search: one row per probe, then the answer and its bracket.
//! Numbers are written in each engine's own style (wrk's units for http,
//! pgbench's milliseconds for pg), so the table reads like the rest of its output.

use std::fmt::Write as _;

use super::FindMax;

/// How an engine writes its numbers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Style {
    /// Throughput unit: `req/s`, `tps`.
    pub unit: &'static str,
    /// A latency in microseconds as text.
    pub time: fn(f64) -> String,
}

/// Text summary of a search.
pub(crate) fn render(f: &FindMax, style: Style) -> String {
    let time = style.time;
    let mut out = String::new();
    let slo: Vec<String> = f
        .slo
        .iter()
        .map(|o| {
            if o.metric == "errors" {
                format!("errors<{}%", o.below * 100.0)
            } else {
                format!("{}<{}", o.metric, time(o.below))
            }
        })
        .collect();
    let _ = writeln!(out, "Highest rate meeting {}:", slo.join(", "));
    let _ = writeln!(
        out,
        "  {:>12} {:>10} {:>10} {:>10} {:>8}  result",
        "rate", style.unit, "p50", "p99", "errors"
    );
    for p in &f.probes {
        let rate = p.rate.map_or("closed".to_string(), |r| format!("{r:.0}/s"));
        let verdict = if p.passed {
            "ok".to_string()
        } else {
            p.failures.join("; ")
        };
        let _ = writeln!(
            out,
            "  {:>12} {:>10.0} {:>10} {:>10} {:>7.2}%  {}",
            rate,
            p.rps,
            time(p.p50_us),
            time(p.p99_us),
            p.error_rate * 100.0,
            verdict
        );
    }
    let unit = style.unit;
    match f.best_rate {
        Some(r) => {
            let _ = writeln!(
                out,
                "Max rate: {r:.0} {unit} (closed-loop capacity {:.0} {unit}; bracket {}..{}, resolution {:.1}%)",
                f.capacity_rps,
                f.bracket.0.map_or("-".into(), |v| format!("{v:.0}")),
                f.bracket.1.map_or("-".into(), |v| format!("{v:.0}")),
                f.resolution * 100.0
            );
        }
        None => {
            let _ = writeln!(
                out,
                "No rate met the objectives (lowest tried: {:.0} {unit}).",
                f.bracket.1.unwrap_or(0.0)
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::find_max::slo::parse_slo;
    use crate::find_max::Probe;

    #[test]
    fn names_the_answer_its_bracket_and_each_failure() {
        let f = FindMax {
            slo: parse_slo("p99<10ms").unwrap(),
            best_rate: Some(700.0),
            capacity_rps: 1000.0,
            bracket: (Some(700.0), Some(730.0)),
            resolution: 730.0 / 700.0 - 1.0,
            probes: vec![Probe {
                rate: Some(730.0),
                passed: false,
                failures: vec!["p99 50000us >= 10000us".into()],
                rps: 729.0,
                p50_us: 900.0,
                p99_us: 50_000.0,
                p999_us: 60_000.0,
                error_rate: 0.0,
            }],
            best: None,
        };
        let style = Style {
            unit: "tps",
            time: |us| format!("{:.3}ms", us / 1e3),
        };
        let t = render(&f, style);
        assert!(t.starts_with("Highest rate meeting p99<10.000ms:\n"), "{t}");
        assert!(t.contains("p99 50000us >= 10000us"), "{t}");
        assert!(
            t.contains("Max rate: 700 tps (closed-loop capacity 1000 tps; bracket 700..730, resolution 4.3%)"),
            "{t}"
        );
    }
}
