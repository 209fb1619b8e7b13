//! Per-trial timelines: each trial's completions per second, one small
//! chart per cell with every trial as a line, so a stall, a warm-up ramp or
//! a trial that ran on a busy machine shows as a dip in one line among
//! flat ones. Seconds that fall far below the trial's own median are
//! flagged in words as well (the page lists them with the noise warnings).

use serde::Serialize;
use tare_analysis::stats::median;
use tare_analysis::Run;

use super::axis::{px, ticks, Linear};
use super::escape::html;
use super::svg::{self, Frame};
use super::waterfall::clip;
use super::Naming;
use crate::units;

/// A first second below 80% of the trial's median second is a warm-up
/// effect; any later second below 50% is a stall. Both thresholds are tare's
/// choice, meant to stay far outside the second-to-second jitter of a healthy
/// loopback run. docs/studies.md gives no per-second figure for tare's
/// machines: seed 000's wrk `Req/Sec` stdev (1.37k of 5.74k per thread) is
/// another machine and load, and "Reference measurements" give run-to-run
/// variation (about 15% within minutes), not second-to-second.
const WARMUP: f64 = 0.8;
const STALL: f64 = 0.5;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Timelines {
    pub unit: String,
    pub cells: Vec<CellTimeline>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CellTimeline {
    pub cell: String,
    pub label: String,
    pub trials: Vec<TrialLine>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrialLine {
    pub trial: u32,
    /// Requests (or transactions) per second, second by second; a trailing
    /// partial second is scaled to a rate.
    pub rate: Vec<f64>,
    /// What looks wrong in this trial, in words.
    pub flags: Vec<String>,
}

impl Timelines {
    pub fn new(run: &Run, cell_ids: &[String], naming: &Naming, unit: &str) -> Timelines {
        let cells = cell_ids
            .iter()
            .filter_map(|id| {
                let mut label = id.clone();
                let trials: Vec<TrialLine> = run
                    .trials
                    .iter()
                    .filter(|t| &t.cell == id)
                    .filter_map(|t| {
                        label = naming.label_of(&t.factors, id);
                        let r = t.usable()?;
                        let rate = rates(&r.timeline, r.duration_s);
                        (!rate.is_empty()).then(|| TrialLine {
                            trial: t.trial,
                            flags: flags(&rate),
                            rate,
                        })
                    })
                    .collect();
                (!trials.is_empty()).then(|| CellTimeline {
                    cell: id.clone(),
                    label,
                    trials,
                })
            })
            .collect();
        Timelines {
            unit: unit.to_string(),
            cells,
        }
    }

    /// Flags in words, one per trial that has any.
    pub fn warnings(&self) -> Vec<String> {
        self.cells
            .iter()
            .flat_map(|c| {
                c.trials
                    .iter()
                    .filter(|t| !t.flags.is_empty())
                    .map(move |t| {
                        format!("cell {} trial {}: {}", c.cell, t.trial, t.flags.join("; "))
                    })
            })
            .collect()
    }

    /// One small chart per cell, all on the same y scale so cells compare.
    pub(crate) fn svgs(&self) -> Vec<String> {
        let max_y = self
            .cells
            .iter()
            .flat_map(|c| &c.trials)
            .flat_map(|t| &t.rate)
            .fold(0.0_f64, |a, b| a.max(*b));
        let max_x = self
            .cells
            .iter()
            .flat_map(|c| &c.trials)
            .map(|t| t.rate.len())
            .max()
            .unwrap_or(1);
        self.cells
            .iter()
            .map(|c| self.svg(c, max_x, max_y))
            .collect()
    }

    fn svg(&self, c: &CellTimeline, max_x: usize, max_y: f64) -> String {
        const WIDTH: f64 = 280.0;
        let f = Frame {
            left: 48.0,
            top: 24.0,
            right: WIDTH - 10.0,
            bottom: 150.0,
        };
        let yt = ticks(0.0, max_y, 4);
        let xt = ticks(0.0, max_x as f64, 4);
        let x = Linear::new((0.0, *xt.last().unwrap_or(&1.0)), (f.left, f.right));
        let y = Linear::new((0.0, *yt.last().unwrap_or(&1.0)), (f.bottom, f.top));
        let mut out = svg::open(
            "timeline",
            WIDTH,
            f.bottom + 40.0,
            &format!("{} per second, {}", self.unit, c.cell),
        );
        out.push_str(&format!(
            "<text class=\"panel-title\" x=\"4\" y=\"14\">{}</text>\n",
            html(&clip(&c.label, 40))
        ));
        svg::x_grid(&mut out, &f, &x, &xt, |v| format!("{v}s"));
        svg::y_grid(&mut out, &f, &y, &yt, units::si);
        for (i, t) in c.trials.iter().enumerate() {
            // Each second's rate is drawn at the middle of its second.
            let pts: Vec<(f64, f64)> = t
                .rate
                .iter()
                .enumerate()
                .map(|(s, r)| (x.map(s as f64 + 0.5), y.map(*r)))
                .collect();
            let mut title = format!("trial {}", t.trial);
            if !t.flags.is_empty() {
                title.push_str(&format!(": {}", t.flags.join("; ")));
            }
            out.push_str(&format!(
                "<g class=\"series\"><title>{}</title>",
                html(&title)
            ));
            out.push_str(&svg::polyline(&pts, svg::colour(i), svg::dash(i)));
            for (px_, py_) in &pts {
                out.push_str(&format!(
                    "<circle cx=\"{}\" cy=\"{}\" r=\"1.8\" fill=\"{}\"/>",
                    px(*px_),
                    px(*py_),
                    svg::colour(i)
                ));
            }
            out.push_str("</g>\n");
        }
        out.push_str(&format!(
            "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{} trial{}</text>\n",
            px(f.right),
            px(f.bottom + 32.0),
            c.trials.len(),
            if c.trials.len() == 1 { "" } else { "s" }
        ));
        out.push_str(svg::close());
        out
    }
}

/// Per-second rates from completions per second: the last entry covers
/// only the fraction of a second the run lasted past its whole seconds.
fn rates(timeline: &[u64], duration_s: f64) -> Vec<f64> {
    let n = timeline.len();
    timeline
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let part = duration_s - (n - 1) as f64;
            if i + 1 == n && part > 0.05 && part < 1.0 {
                c as f64 / part
            } else {
                c as f64
            }
        })
        .collect()
}

fn flags(rate: &[f64]) -> Vec<String> {
    if rate.len() < 3 {
        return Vec::new();
    }
    let typical = median(rate);
    if typical <= 0.0 {
        return vec!["no completions".into()];
    }
    let mut out = Vec::new();
    if rate[0] < WARMUP * typical {
        out.push(format!(
            "first second at {} of the trial's median (warm-up?)",
            units::percent(rate[0] / typical)
        ));
    }
    let stalls: Vec<String> = rate
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, r)| **r < STALL * typical)
        .map(|(s, _)| format!("{}s", s))
        .collect();
    if !stalls.is_empty() {
        out.push(format!(
            "stall at {} (below half the trial's median rate)",
            stalls.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_trials_are_not_flagged() {
        assert!(flags(&[10_000.0, 10_200.0, 9_900.0, 10_050.0]).is_empty());
    }

    #[test]
    fn warm_up_and_stall_are_flagged() {
        let f = flags(&[4_000.0, 10_000.0, 3_000.0, 10_000.0, 10_000.0]);
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(f[0].contains("warm-up"));
        assert!(f[1].contains("stall at 2s"), "{f:?}");
    }

    #[test]
    fn a_trailing_partial_second_is_a_rate() {
        assert_eq!(rates(&[100, 100, 50], 2.5), vec![100.0, 100.0, 100.0]);
        assert_eq!(rates(&[100, 100], 2.0), vec![100.0, 100.0]);
    }
}
