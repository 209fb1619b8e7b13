//! Latency percentile curves, HDR-style (Gil Tene's HdrHistogram plots):
//! the x axis is `1 / (1 - q)` on a log scale, so 90%, 99%, 99.9% and
//! 99.99% are evenly spaced and the tail, where placements differ most,
//! gets as much room as the median. One curve per cell, from the exact
//! merge of its trials' histograms (HDR histograms add without error, so
//! this is the cell's true distribution, never an average of percentiles).

use serde::Serialize;
use tare_analysis::Run;
use tare_record::Latency;

use super::axis::{ticks, Linear};
use super::escape::html;
use super::svg::{self, Frame};
use super::Naming;
use crate::units;

/// Points per decade of `1 / (1 - q)`: enough for a smooth curve.
const PER_DECADE: u32 = 5;
/// The deepest tail drawn: 99.999%.
const MAX_DECADES: u32 = 5;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Percentiles {
    pub series: Vec<PercentileSeries>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PercentileSeries {
    pub cell: String,
    pub label: String,
    /// Latency values behind the curve (all successful trials).
    pub count: u64,
    /// `(percentile, latency µs)`: percentile as 0..100.
    pub points: Vec<(f64, f64)>,
    pub max_us: f64,
}

impl Percentiles {
    /// Curves for every cell with a decodable histogram; cells whose
    /// histograms do not decode are listed in `warnings`.
    pub(crate) fn new(
        run: &Run,
        cell_ids: &[String],
        naming: &Naming,
        warnings: &mut Vec<String>,
    ) -> Percentiles {
        let mut series = Vec::new();
        for id in cell_ids {
            let mut merged = Latency::new();
            let mut label = id.clone();
            for t in run.trials.iter().filter(|t| &t.cell == id) {
                label = naming.label_of(&t.factors, id);
                let Some(r) = t.usable() else { continue };
                if r.hdr.is_empty() {
                    continue;
                }
                match Latency::decode(&r.hdr) {
                    Ok(h) => merged.merge(&h),
                    Err(e) => warnings.push(format!(
                        "cell {id} trial {}: latency histogram does not decode ({e}); left out of the percentile curve",
                        t.trial
                    )),
                }
            }
            if merged.is_empty() {
                continue;
            }
            series.push(PercentileSeries {
                cell: id.clone(),
                label,
                count: merged.count(),
                points: curve(&merged),
                max_us: merged.summary().max,
            });
        }
        Percentiles { series }
    }

    pub(crate) fn svg(&self) -> String {
        const WIDTH: f64 = 860.0;
        let f = Frame {
            left: 76.0,
            top: 12.0,
            right: WIDTH - 20.0,
            bottom: 332.0,
        };
        let decades = self
            .series
            .iter()
            .flat_map(|s| s.points.last())
            .map(|p| decade(p.0))
            .fold(2.0_f64, f64::max);
        let max_y = self
            .series
            .iter()
            .flat_map(|s| &s.points)
            .map(|p| p.1)
            .fold(0.0, f64::max);
        let yt = ticks(0.0, max_y, 6);
        let x = Linear::new((0.0, decades), (f.left, f.right));
        let y = Linear::new((0.0, *yt.last().unwrap_or(&1.0)), (f.bottom, f.top));
        let labels: Vec<String> = self.series.iter().map(|s| s.label.clone()).collect();
        let mut body = String::new();
        // The axis ends where the deepest curve does; ticks at whole decades.
        let xt: Vec<f64> = (0..=decades.floor() as u32).map(f64::from).collect();
        svg::x_grid(&mut body, &f, &x, &xt, |d| {
            percentile_label(100.0 * (1.0 - 10f64.powf(-d)))
        });
        svg::y_grid(&mut body, &f, &y, &yt, units::latency_us);
        svg::axis_title(&mut body, &f, "percentile (log scale of 1/(1−q))", true);
        svg::axis_title(&mut body, &f, "latency", false);
        for (i, s) in self.series.iter().enumerate() {
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .map(|(p, v)| (x.map(decade(*p)), y.map(*v)))
                .collect();
            body.push_str(&format!(
                "<g class=\"series\"><title>{}: p50 {}, p99 {}, max {} ({} requests)</title>",
                html(&s.cell),
                units::latency_us(at(s, 50.0)),
                units::latency_us(at(s, 99.0)),
                units::latency_us(s.max_us),
                s.count
            ));
            body.push_str(&svg::polyline(&pts, svg::colour(i), svg::dash(i)));
            body.push_str("</g>\n");
        }
        let legend_h = {
            let mut l = String::new();
            let h = svg::legend(&mut l, f.left, f.bottom + 56.0, f.width(), &labels);
            body.push_str(&l);
            h
        };
        let mut out = svg::open(
            "percentiles",
            WIDTH,
            f.bottom + 56.0 + legend_h,
            "Latency percentile distribution per cell",
        );
        out.push_str(&body);
        out.push_str(svg::close());
        out
    }
}

/// `log10(1 / (1 - q))` for a percentile `p` (0..100).
fn decade(p: f64) -> f64 {
    let rest = (1.0 - p / 100.0).max(1e-12);
    -rest.log10()
}

/// `99.9%`, `90%`, `0%`.
fn percentile_label(p: f64) -> String {
    let s = format!("{p:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

/// The latency at percentile `p` from a series' points (nearest at or
/// above), for tooltips.
fn at(s: &PercentileSeries, p: f64) -> f64 {
    s.points
        .iter()
        .find(|(q, _)| *q >= p - 1e-9)
        .map_or(s.max_us, |(_, v)| *v)
}

/// The curve of one histogram: `PER_DECADE` points per decade of
/// `1 / (1 - q)`, stopping where the histogram runs out of samples (no
/// point claims a tail the data cannot resolve: 99.99% needs ≥ 10⁴ values).
fn curve(h: &Latency) -> Vec<(f64, f64)> {
    let n = h.count() as f64;
    // The even grid, plus the median and p75, which readers look up.
    let mut decades: Vec<f64> = (0..=(MAX_DECADES * PER_DECADE))
        .map(|k| f64::from(k) / f64::from(PER_DECADE))
        .chain([2f64.log10(), 4f64.log10()])
        .filter(|d| 10f64.powf(*d) <= n)
        .collect();
    decades.sort_by(f64::total_cmp);
    decades
        .into_iter()
        .map(|d| {
            let q = 1.0 - 10f64.powf(-d);
            ((q * 100.0 * 1e4).round() / 1e4, h.quantile_us(q))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curve_stops_where_the_samples_do() {
        let mut h = Latency::new();
        for v in 1..=1000u64 {
            h.record_ns(v * 1000);
        }
        let c = curve(&h);
        assert_eq!(c.first().map(|p| p.0), Some(0.0));
        // 1000 values resolve 99.9% and nothing deeper.
        assert_eq!(c.last().map(|p| p.0), Some(99.9));
        assert!(c.windows(2).all(|w| w[1].1 >= w[0].1), "monotone: {c:?}");
        // p50 of 1..=1000 µs is ~500 µs (HDR's 3 significant digits).
        let p50 = c.iter().find(|p| p.0 == 50.0).unwrap().1;
        assert!((p50 - 500.0).abs() < 2.0, "{p50}");
    }

    #[test]
    fn percentile_labels_read_as_people_write_them() {
        assert_eq!(percentile_label(99.9), "99.9%");
        assert_eq!(percentile_label(90.0), "90%");
        assert_eq!(percentile_label(0.0), "0%");
    }
}
