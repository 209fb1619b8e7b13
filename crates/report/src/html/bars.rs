//! Throughput and p99 per cell: horizontal bars (long cell names stay
//! readable), grouped under the levels of the experiment's first factor,
//! each with its median's interval as a whisker and every trial as a dot,
//! so a reader sees both the estimate and the spread it came from.

use serde::Serialize;
use tare_analysis::CellStats;

use super::axis::{px, ticks, Linear};
use super::escape::html;
use super::svg::{self, Frame};
use super::waterfall::clip;
use super::{Interval, Naming};
use crate::units;

/// Which per-cell number a chart shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Throughput,
    P99,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bars {
    pub metric: Metric,
    /// `req/s`, `tps` or `µs`.
    pub unit: String,
    /// The factor rows are grouped by (`None`: one group, no factors).
    pub group_by: Option<String>,
    pub groups: Vec<BarGroup>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BarGroup {
    /// The grouping factor's level (empty for the single group).
    pub level: String,
    pub bars: Vec<Bar>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bar {
    pub cell: String,
    /// The other factors' levels.
    pub label: String,
    pub value: Interval,
    /// Every successful trial's value.
    pub samples: Vec<f64>,
    pub noisy: bool,
}

impl Bars {
    pub fn new(cells: &[CellStats], naming: &Naming, metric: Metric) -> Bars {
        // Grouping by the only factor would put one bar in each group.
        let group_by = naming
            .order
            .first()
            .filter(|_| naming.order.len() > 1)
            .cloned();
        let mut groups: Vec<BarGroup> = Vec::new();
        for c in cells {
            let level = group_by
                .as_ref()
                .and_then(|k| c.factors.get(k).cloned())
                .unwrap_or_default();
            let (value, samples) = match metric {
                Metric::Throughput => (c.throughput_shown(), &c.throughput_samples),
                Metric::P99 => (c.p99_shown(), &c.p99_samples_us),
            };
            let bar = Bar {
                cell: c.cell.clone(),
                label: naming.label_without(c, group_by.as_deref()),
                value: Interval::from(&value),
                samples: samples.clone(),
                noisy: c.is_noisy(),
            };
            match groups.iter_mut().find(|g| g.level == level) {
                Some(g) => g.bars.push(bar),
                None => groups.push(BarGroup {
                    level,
                    bars: vec![bar],
                }),
            }
        }
        let unit = match metric {
            Metric::Throughput => cells.first().map_or("req/s", |c| c.unit.as_str()),
            Metric::P99 => "µs",
        };
        Bars {
            metric,
            unit: unit.to_string(),
            group_by,
            groups,
        }
    }

    fn fmt(&self, v: f64) -> String {
        match self.metric {
            Metric::Throughput => units::si(v),
            Metric::P99 => units::latency_us(v),
        }
    }

    pub fn svg(&self) -> String {
        const BAR: f64 = 24.0;
        const HEAD: f64 = 22.0;
        const WIDTH: f64 = 860.0;
        let n_bars: usize = self.groups.iter().map(|g| g.bars.len()).sum();
        let headed = self.group_by.is_some();
        let f = Frame {
            left: 230.0,
            top: 8.0,
            right: WIDTH - 130.0,
            bottom: 8.0
                + BAR * n_bars as f64
                + if headed {
                    HEAD * self.groups.len() as f64
                } else {
                    0.0
                },
        };
        let max = self
            .groups
            .iter()
            .flat_map(|g| &g.bars)
            .flat_map(|b| {
                b.samples
                    .iter()
                    .copied()
                    .chain([b.value.hi, b.value.median])
            })
            .fold(0.0, f64::max);
        let t = ticks(0.0, max, 5);
        let x = Linear::new((0.0, *t.last().unwrap_or(&1.0)), (f.left, f.right));
        let (kind, what) = match self.metric {
            Metric::Throughput => ("throughput", format!("throughput ({}, median)", self.unit)),
            Metric::P99 => ("p99", "p99 latency (median of trials)".to_string()),
        };
        let mut out = svg::open(kind, WIDTH, f.bottom + 44.0, &format!("{what} per cell"));
        svg::x_grid(&mut out, &f, &x, &t, |v| self.fmt(v));
        svg::axis_title(&mut out, &f, &what, true);
        let mut y = f.top;
        for (gi, g) in self.groups.iter().enumerate() {
            if let (true, Some(k)) = (headed, &self.group_by) {
                out.push_str(&format!(
                    "<text class=\"group\" x=\"4\" y=\"{}\" dy=\"0.32em\">{}</text>\n",
                    px(y + HEAD / 2.0 + 2.0),
                    html(&clip(&format!("{k} = {}", g.level), 60))
                ));
                y += HEAD;
            }
            for b in &g.bars {
                let mid = y + BAR / 2.0;
                out.push_str(&format!(
                    "<g class=\"cell\"><title>{}: {} [{}, {}], {} trials</title><rect class=\"bar s{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></g>\n",
                    html(&b.cell),
                    html(&self.fmt(b.value.median)),
                    html(&self.fmt(b.value.lo)),
                    html(&self.fmt(b.value.hi)),
                    b.samples.len(),
                    gi % svg::PALETTE.len(),
                    px(f.left),
                    px(y + 4.0),
                    px((x.map(b.value.median) - f.left).max(1.0)),
                    px(BAR - 8.0)
                ));
                if b.value.hi > b.value.lo {
                    svg::h_whisker(&mut out, x.map(b.value.lo), x.map(b.value.hi), mid, 5.0);
                }
                for s in &b.samples {
                    out.push_str(&format!(
                        "<circle class=\"sample\" cx=\"{}\" cy=\"{}\" r=\"2.2\"/>",
                        px(x.map(*s)),
                        px(mid)
                    ));
                }
                let label = if b.label.is_empty() {
                    &b.cell
                } else {
                    &b.label
                };
                out.push_str(&format!(
                    "\n<text class=\"label\" x=\"{}\" y=\"{}\" dy=\"0.32em\" text-anchor=\"end\">{}</text><text class=\"value\" x=\"{}\" y=\"{}\" dy=\"0.32em\">{}{}</text>\n",
                    px(f.left - 8.0),
                    px(mid),
                    html(&clip(label, 31)),
                    px(f.right + 8.0),
                    px(mid),
                    html(&self.fmt(b.value.median)),
                    if b.noisy { " (noisy)" } else { "" }
                ));
                y += BAR;
            }
        }
        out.push_str(svg::close());
        out
    }
}
