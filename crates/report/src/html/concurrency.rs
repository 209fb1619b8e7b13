//! Concurrency curves (seed 001's 16/48/96 client sweep: docs/studies.md,
//! seed 001): throughput and p99 against the number of connections or
//! clients, one line per combination of the other factors, with interval
//! whiskers, and a dashed line at the machine's CPU count, where seed 001 saw
//! Docker fall off (it says past the physical core count; its Docker runs
//! drop 32% from 40 to 96 clients on 48 logical CPUs).
//!
//! Drawn only when the experiment varies concurrency: a factor named for it
//! (`connections`, `clients`, ...) or a numeric factor whose levels are the
//! connections the load actually used.

use serde::Serialize;
use tare_analysis::{CellStats, Run};

use super::axis::{px, ticks, Linear};
use super::escape::html;
use super::svg::{self, Frame};
use super::{Interval, Naming};
use crate::units;

/// Factor names that mean "concurrency" in experiment files (tare's own,
/// wrk's `-c`, pgbench's `-c` clients).
const NAMES: [&str; 6] = [
    "connections",
    "conns",
    "clients",
    "concurrency",
    "c",
    "users",
];

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Concurrency {
    pub factor: String,
    pub unit: String,
    /// Logical CPUs of the machine, from the provenance.
    pub cpus: Option<f64>,
    pub series: Vec<ConcurrencySeries>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConcurrencySeries {
    /// The other factors' levels.
    pub label: String,
    pub points: Vec<ConcurrencyPoint>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConcurrencyPoint {
    pub level: f64,
    pub cell: String,
    pub throughput: Interval,
    pub p99_us: Interval,
}

impl Concurrency {
    /// `None` unless some factor is concurrency with at least two levels.
    pub(crate) fn new(run: &Run, cells: &[CellStats], naming: &Naming) -> Option<Concurrency> {
        let factor = naming
            .order
            .iter()
            .find(|k| is_concurrency(run, cells, k))?
            .clone();
        let mut series: Vec<ConcurrencySeries> = Vec::new();
        for c in cells {
            let Some(level) = c
                .factors
                .get(&factor)
                .and_then(|v| v.trim().parse::<f64>().ok())
            else {
                continue;
            };
            let label = naming.label_without(c, Some(&factor));
            let point = ConcurrencyPoint {
                level,
                cell: c.cell.clone(),
                throughput: Interval::from(&c.throughput),
                p99_us: Interval::from(&c.p99_us),
            };
            match series.iter_mut().find(|s| s.label == label) {
                Some(s) => s.points.push(point),
                None => series.push(ConcurrencySeries {
                    label,
                    points: vec![point],
                }),
            }
        }
        for s in &mut series {
            s.points.sort_by(|a, b| a.level.total_cmp(&b.level));
        }
        let cpus = run
            .provenance
            .as_ref()
            .and_then(|p| p.get("cpu_count").or_else(|| p.get("cpus")))
            .and_then(serde_json::Value::as_f64);
        Some(Concurrency {
            factor,
            unit: cells
                .first()
                .map_or("req/s", |c| c.unit.as_str())
                .to_string(),
            cpus,
            series,
        })
    }

    /// Two charts side by side: throughput, then p99.
    pub(crate) fn svgs(&self) -> [String; 2] {
        [
            self.svg(
                "concurrency-throughput",
                &format!("throughput ({})", self.unit),
                |p| p.throughput,
                units::si,
            ),
            self.svg(
                "concurrency-p99",
                "p99 latency",
                |p| p.p99_us,
                units::latency_us,
            ),
        ]
    }

    fn svg(
        &self,
        kind: &str,
        what: &str,
        value: fn(&ConcurrencyPoint) -> Interval,
        fmt: fn(f64) -> String,
    ) -> String {
        const WIDTH: f64 = 420.0;
        let f = Frame {
            left: 70.0,
            top: 12.0,
            right: WIDTH - 16.0,
            bottom: 252.0,
        };
        let points = || self.series.iter().flat_map(|s| &s.points);
        let max_x = points()
            .map(|p| p.level)
            .fold(0.0, f64::max)
            .max(self.cpus.unwrap_or(0.0));
        let max_y = points()
            .map(|p| value(p).hi.max(value(p).median))
            .fold(0.0, f64::max);
        let xt = ticks(0.0, max_x, 5);
        let yt = ticks(0.0, max_y, 5);
        let x = Linear::new((0.0, *xt.last().unwrap_or(&1.0)), (f.left, f.right));
        let y = Linear::new((0.0, *yt.last().unwrap_or(&1.0)), (f.bottom, f.top));
        let mut body = String::new();
        svg::x_grid(&mut body, &f, &x, &xt, units::si);
        svg::y_grid(&mut body, &f, &y, &yt, fmt);
        svg::axis_title(&mut body, &f, &self.factor, true);
        svg::axis_title(&mut body, &f, what, false);
        if let Some(cpus) = self.cpus {
            let xx = px(x.map(cpus));
            body.push_str(&format!(
                "<line class=\"cpus\" x1=\"{xx}\" x2=\"{xx}\" y1=\"{}\" y2=\"{}\"/><text class=\"tick\" x=\"{xx}\" y=\"{}\" dx=\"3\">{} CPUs</text>\n",
                px(f.top),
                px(f.bottom),
                px(f.top + 10.0),
                cpus
            ));
        }
        for (i, s) in self.series.iter().enumerate() {
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .map(|p| (x.map(p.level), y.map(value(p).median)))
                .collect();
            body.push_str(&format!(
                "<g class=\"series\"><title>{}</title>",
                html(&s.label)
            ));
            body.push_str(&svg::polyline(&pts, svg::colour(i), svg::dash(i)));
            for p in &s.points {
                let v = value(p);
                let (cx, cy) = (x.map(p.level), y.map(v.median));
                if v.hi > v.lo {
                    svg::v_whisker(&mut body, cx, y.map(v.lo), y.map(v.hi), 4.0);
                }
                body.push_str(&format!(
                    "<circle cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"{}\"><title>{} = {}: {} [{}, {}]</title></circle>",
                    px(cx),
                    px(cy),
                    svg::colour(i),
                    html(&self.factor),
                    p.level,
                    html(&fmt(v.median)),
                    html(&fmt(v.lo)),
                    html(&fmt(v.hi))
                ));
            }
            body.push_str("</g>\n");
        }
        let labels: Vec<String> = self.series.iter().map(|s| s.label.clone()).collect();
        let h = svg::legend(&mut body, 10.0, f.bottom + 54.0, WIDTH - 20.0, &labels);
        let mut out = svg::open(
            kind,
            WIDTH,
            f.bottom + 54.0 + h,
            &format!("{what} against {}", self.factor),
        );
        out.push_str(&body);
        out.push_str(svg::close());
        out
    }
}

/// A factor is concurrency when it has two or more numeric levels and is
/// named for it, or its levels are the connections every trial recorded.
fn is_concurrency(run: &Run, cells: &[CellStats], factor: &str) -> bool {
    let mut levels: Vec<f64> = cells
        .iter()
        .filter_map(|c| c.factors.get(factor)?.trim().parse::<f64>().ok())
        .collect();
    let numeric = cells.iter().all(|c| {
        c.factors
            .get(factor)
            .into_iter()
            .all(|v| v.trim().parse::<f64>().is_ok())
    });
    levels.sort_by(f64::total_cmp);
    levels.dedup();
    if !numeric || levels.len() < 2 {
        return false;
    }
    if NAMES.contains(&factor.to_ascii_lowercase().as_str()) {
        return true;
    }
    let mut any = false;
    let matches = run
        .trials
        .iter()
        .all(|t| match (t.usable(), t.factors.get(factor)) {
            (Some(r), Some(level)) => {
                any = true;
                level.trim().parse::<f64>().ok() == Some(r.connections as f64)
            }
            _ => true,
        });
    any && matches
}
