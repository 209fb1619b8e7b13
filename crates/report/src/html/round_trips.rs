//! The attribution waterfall in latency units, for round trips (`tare
//! net`): what each step of the chain adds to one round trip, in µs, as
//! seed 002 speaks ("NAT doubles latency", "KVM adds 30 µs of overhead to
//! each transaction": docs/studies.md, seed 002). One row per chain cell;
//! the baseline is a bar from zero to its time per round trip, each later
//! row floats from the previous cell's time to its own, so the bars add up
//! to the last cell's time. Whiskers are each cell's interval; the text on
//! the right is the step's change in µs with its interval.
//!
//! A cell's time per round trip is `1e6 × connections / throughput` (one
//! transaction in flight per connection: `CellStats::round_trip_us`), its
//! interval the throughput interval's ends swapped. A step's interval is
//! the paired within-round throughput ratio's interval carried onto the
//! previous cell's time: with ratio `r` in `[lo, hi]`, the time becomes
//! `before × k / r` (`k`: the connections' ratio, 1 unless the step changes
//! them), so the change lies in `[before × (k/hi − 1), before × (k/lo − 1)]`.

use serde::Serialize;
use tare_analysis::stats::Significance;
use tare_analysis::{Attribution, CellStats};

use super::waterfall::{float_bars, FloatRow};
use super::Interval;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RoundTrips {
    /// Last cell's µs per round trip minus the first's.
    pub gap_us: f64,
    pub rows: Vec<RoundTripRow>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RoundTripRow {
    pub cell: String,
    /// `baseline` or `factor: from → to`.
    pub label: String,
    /// Where the bar starts: 0 for the baseline, else the previous time.
    pub from_us: f64,
    /// This cell's µs per round trip, with its interval.
    pub round_trip_us: Interval,
    /// `round_trip_us.median - from_us` (0 for the baseline).
    pub delta_us: f64,
    /// The change's interval (paired on the round); `None` for the
    /// baseline or without a ratio interval.
    pub delta_ci_us: Option<(f64, f64)>,
    /// `None` for the baseline or with too few trials to test.
    pub significant: Option<bool>,
}

impl RoundTrips {
    /// `None` unless every chain cell's unit is round trips.
    pub fn new(a: &Attribution, cells: &[CellStats]) -> Option<RoundTrips> {
        let of = |id: &str| cells.iter().find(|c| c.cell == id);
        let mut rows: Vec<RoundTripRow> = Vec::new();
        let mut prev: Option<(f64, u64)> = None;
        for s in &a.steps {
            let cell = of(&s.cell)?;
            let rt = cell.round_trip_us()?;
            let conns = cell.round_trip_connections?;
            let label = match &s.change {
                None => "baseline".to_string(),
                Some(c) => format!("{}: {} → {}", c.factor, c.from, c.to),
            };
            let (from_us, delta_ci_us) = match prev {
                None => (0.0, None),
                Some((before, before_conns)) => {
                    let k = conns as f64 / before_conns.max(1) as f64;
                    let ci = s
                        .vs_previous
                        .and_then(|v| v.ratio_ci)
                        .filter(|(lo, hi)| *lo > 0.0 && *hi > 0.0)
                        .map(|(lo, hi)| (before * (k / hi - 1.0), before * (k / lo - 1.0)));
                    (before, ci)
                }
            };
            rows.push(RoundTripRow {
                cell: s.cell.clone(),
                label,
                from_us,
                round_trip_us: Interval::from(&rt),
                delta_us: if prev.is_some() {
                    rt.median - from_us
                } else {
                    0.0
                },
                delta_ci_us,
                significant: s.vs_previous.and_then(|c| match c.significance {
                    Significance::TooFewTrials { .. } => None,
                    _ => Some(c.is_significant()),
                }),
            });
            prev = Some((rt.median, conns));
        }
        if rows.iter().any(|r| !r.round_trip_us.median.is_finite()) || rows.is_empty() {
            return None;
        }
        Some(RoundTrips {
            gap_us: rows.last()?.round_trip_us.median - rows[0].round_trip_us.median,
            rows,
        })
    }

    /// The text on a row's right: `+30.3 µs [27.1, 33.6]`, the baseline's
    /// own time for the first row.
    fn annotation(row: &RoundTripRow, first: bool) -> String {
        if first {
            return format!("{} µs per round trip", us(row.round_trip_us.median));
        }
        let mut s = format!("{:+.1} µs", row.delta_us);
        if let Some((lo, hi)) = row.delta_ci_us {
            s.push_str(&format!(" [{:+.1}, {:+.1}]", lo, hi));
        }
        if row.significant == Some(false) {
            s.push_str(" ~");
        }
        s
    }

    pub fn svg(&self) -> String {
        let rows: Vec<FloatRow> = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| FloatRow {
                label: &r.label,
                from: r.from_us,
                to: r.round_trip_us.median,
                lo: r.round_trip_us.lo,
                hi: r.round_trip_us.hi,
                // Longer round trips are the cost: a step that adds time
                // is drawn as a throughput loss is in the other waterfall.
                class: FloatRow::class(i, r.delta_us <= 0.0),
                tooltip: format!(
                    "{}: {} µs per round trip [{}, {}]",
                    r.cell,
                    us(r.round_trip_us.median),
                    us(r.round_trip_us.lo),
                    us(r.round_trip_us.hi)
                ),
                annotation: Self::annotation(r, i == 0),
            })
            .collect();
        float_bars(
            "round-trips",
            "Attribution waterfall, µs per round trip",
            "µs per round trip (median)",
            &rows,
            |v| format!("{v:.0}"),
        )
    }
}

/// Microseconds as the text report prints round trips: one decimal.
pub fn us(v: f64) -> String {
    format!("{v:.1}")
}
