//! The attribution waterfall (seed 000's chain, computed: docs/studies.md,
//! seed 000, "The post's attribution"): one row per chain cell, top to
//! bottom. The baseline is a bar from zero; each later row floats from the
//! previous cell's median to its own, so the bars' lengths are the steps'
//! deltas and add up to the gap. A whisker on each bar's end is that cell's
//! throughput interval; the text on the right is the step's share of the gap
//! with its bootstrap interval.

use serde::Serialize;
use tare_analysis::stats::Significance;
use tare_analysis::Attribution;

use super::axis::{px, ticks, Linear};
use super::escape::html;
use super::svg::{self, Frame};
use super::Interval;
use crate::units;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Waterfall {
    pub unit: String,
    /// Last cell's median minus the first's.
    pub gap: f64,
    /// Whether the gap itself is significant (otherwise shares split noise).
    pub gap_significant: bool,
    pub rows: Vec<WaterfallRow>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WaterfallRow {
    pub cell: String,
    /// `baseline` or `factor: from → to`.
    pub label: String,
    /// Where the bar starts: 0 for the baseline, else the previous median.
    pub from: f64,
    /// Where it ends: this cell's median.
    pub to: f64,
    pub throughput: Interval,
    pub delta: f64,
    pub share: Option<f64>,
    pub share_ci: Option<(f64, f64)>,
    /// The step against the previous one: `None` for the baseline or when
    /// too few trials to test.
    pub significant: Option<bool>,
}

impl Waterfall {
    pub(crate) fn new(a: &Attribution) -> Waterfall {
        let mut prev = 0.0;
        let rows = a
            .steps
            .iter()
            .map(|s| {
                let label = match &s.change {
                    None => "baseline".to_string(),
                    Some(c) => format!("{}: {} → {}", c.factor, c.from, c.to),
                };
                let row = WaterfallRow {
                    cell: s.cell.clone(),
                    label,
                    from: prev,
                    to: s.throughput_shown().median,
                    throughput: Interval::from(&s.throughput_shown()),
                    delta: s.delta,
                    share: s.share,
                    share_ci: s.share_ci,
                    significant: s.vs_previous.and_then(|c| match c.significance {
                        Significance::TooFewTrials { .. } => None,
                        _ => Some(c.is_significant()),
                    }),
                };
                prev = s.throughput_shown().median;
                row
            })
            .collect();
        Waterfall {
            unit: a.unit.clone(),
            gap: a.gap,
            gap_significant: a.gap_is_significant(),
            rows,
        }
    }

    /// The share text on a row's right: `+17.6k · 60.4% [55.1%, 64.8%]`;
    /// only the change where the gap is not significant, as the table's
    /// shares are then n/a (docs/analysis.md).
    fn annotation(row: &WaterfallRow, gap_significant: bool) -> String {
        let Some(share) = row.share else {
            return units::si(row.to);
        };
        if !gap_significant {
            let mut s = units::si_signed(row.delta);
            if row.significant == Some(false) {
                s.push_str(" ~");
            }
            return s;
        }
        let mut s = format!(
            "{} · {} of gap",
            units::si_signed(row.delta),
            units::percent(share)
        );
        if let Some((lo, hi)) = row.share_ci {
            s.push_str(&format!(
                " [{}, {}]",
                units::percent(lo),
                units::percent(hi)
            ));
        }
        if row.significant == Some(false) {
            s.push_str(" ~");
        }
        s
    }

    pub(crate) fn svg(&self) -> String {
        let rows: Vec<FloatRow> = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| FloatRow {
                label: &r.label,
                from: r.from,
                to: r.to,
                lo: r.throughput.lo,
                hi: r.throughput.hi,
                class: FloatRow::class(i, r.delta >= 0.0),
                tooltip: format!(
                    "{}: {} {} [{}, {}]",
                    r.cell,
                    units::si(r.to),
                    self.unit,
                    units::si(r.throughput.lo),
                    units::si(r.throughput.hi)
                ),
                annotation: Self::annotation(r, self.gap_significant),
            })
            .collect();
        float_bars(
            "waterfall",
            &format!("Attribution waterfall, {}", self.unit),
            &format!("throughput ({}, median)", self.unit),
            &rows,
            units::si,
        )
    }
}

/// One row of a floating-bar chart (a waterfall): a bar from `from` to
/// `to`, a whisker over `lo..hi`, a label on the left and an annotation
/// on the right.
pub(super) struct FloatRow<'a> {
    pub label: &'a str,
    pub from: f64,
    pub to: f64,
    pub lo: f64,
    pub hi: f64,
    /// `bar base`, `bar up` or `bar down`.
    pub class: &'static str,
    pub tooltip: String,
    pub annotation: String,
}

impl FloatRow<'_> {
    /// The class of row `i`: the first is the base, each after it moves
    /// the chain the good way (`better`) or the bad way.
    pub(super) fn class(i: usize, better: bool) -> &'static str {
        match (i, better) {
            (0, _) => "bar base",
            (_, true) => "bar up",
            (_, false) => "bar down",
        }
    }
}

/// A waterfall's SVG: one row per step, top to bottom, each bar floating
/// from the previous row's end with a connector from it, so the chain
/// reads as one path. `kind` names the chart (`data-chart`).
pub(super) fn float_bars(
    kind: &str,
    title: &str,
    axis: &str,
    rows: &[FloatRow<'_>],
    tick: impl Fn(f64) -> String,
) -> String {
    const ROW: f64 = 38.0;
    const WIDTH: f64 = 860.0;
    let f = Frame {
        left: 230.0,
        top: 12.0,
        right: WIDTH - 250.0,
        bottom: 12.0 + ROW * rows.len() as f64,
    };
    let max = rows
        .iter()
        .map(|r| r.hi.max(r.to))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let t = ticks(0.0, max, 5);
    let x = Linear::new((0.0, *t.last().unwrap_or(&1.0)), (f.left, f.right));
    let mut out = svg::open(kind, WIDTH, f.bottom + 44.0, title);
    svg::x_grid(&mut out, &f, &x, &t, tick);
    svg::axis_title(&mut out, &f, axis, true);
    for (i, r) in rows.iter().enumerate() {
        let y = f.top + ROW * i as f64 + 7.0;
        let (a, b) = (x.map(r.from.min(r.to)), x.map(r.from.max(r.to)));
        out.push_str(&format!(
            "<g class=\"step\"><title>{}</title>",
            html(&r.tooltip)
        ));
        out.push_str(&format!(
            "<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
            r.class,
            px(a),
            px(y),
            px((b - a).max(1.0)),
            px(ROW - 14.0)
        ));
        if i > 0 {
            out.push_str(&format!(
                "<line class=\"connector\" x1=\"{xx}\" x2=\"{xx}\" y1=\"{}\" y2=\"{}\"/>",
                px(y - 14.0),
                px(y),
                xx = px(x.map(r.from))
            ));
        }
        out.push_str("</g>\n");
        if r.hi > r.lo && r.hi.is_finite() {
            svg::h_whisker(
                &mut out,
                x.map(r.lo),
                x.map(r.hi),
                y + (ROW - 14.0) / 2.0,
                5.0,
            );
        }
        let mid = px(y + (ROW - 14.0) / 2.0);
        out.push_str(&format!(
            "<text class=\"label\" x=\"{}\" y=\"{mid}\" dy=\"0.32em\" text-anchor=\"end\">{}</text>\n",
            px(f.left - 8.0),
            html(&clip(r.label, 31))
        ));
        out.push_str(&format!(
            "<text class=\"value\" x=\"{}\" y=\"{mid}\" dy=\"0.32em\">{}</text>\n",
            px(f.right + 8.0),
            html(&r.annotation)
        ));
    }
    out.push_str(svg::close());
    out
}

/// `s` cut to `n` characters with an ellipsis; the full text is in the
/// table beside the chart.
pub(crate) fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
    t.push('…');
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(share: Option<f64>, significant: Option<bool>) -> WaterfallRow {
        WaterfallRow {
            cell: "placement=native".into(),
            label: "placement: docker-host → native".into(),
            from: 11_400.0,
            to: 7_100.0,
            throughput: Interval {
                median: 7_100.0,
                lo: 5_510.0,
                hi: 9_150.0,
                confidence: 0.95,
            },
            delta: -3_620.0,
            share,
            share_ci: Some((-2.0, -0.5)),
            significant,
        }
    }

    /// A gap that is not significant has no shares (the table says n/a):
    /// the chart's labels must not show one either.
    #[test]
    fn no_share_on_the_chart_when_the_gap_is_not_significant() {
        let r = row(Some(-1.64), Some(true));
        assert!(Waterfall::annotation(&r, true).contains("of gap"));
        let text = Waterfall::annotation(&r, false);
        assert!(!text.contains("of gap"), "{text}");
        assert!(text.contains("3.62k"), "{text}");
        let r = row(Some(0.1), Some(false));
        assert!(Waterfall::annotation(&r, false).ends_with(" ~"));
    }
}
