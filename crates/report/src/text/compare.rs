//! Two runs, as benchstat prints two sets of benchmarks: one table per
//! metric, a row per cell present in both, old and new medians with their
//! intervals, the change with its Welch t interval, and the p-value, `~`
//! when the difference is not significant; a geomean row at the bottom.

use tare_analysis::stats::MedianCi;
use tare_analysis::{CellStats, CompareRow, Comparison};

use super::notes::Notes;
use super::waterfall::verdict;
use super::{interval_header, with_interval};
use crate::table::{Align, Table};
use crate::units;

pub(super) fn section(c: &Comparison, notes: &mut Notes) -> String {
    let mut out = format!("old: {}\nnew: {}\n", c.old_run, c.new_run);
    if c.rows.is_empty() {
        out.push_str("\nno cell has results in both runs\n");
    } else {
        let unit = c.rows[0].old.unit.clone();
        out.push('\n');
        out.push_str(&metric(
            c,
            &unit,
            units::si,
            CellStats::throughput_shown,
            |r| &r.throughput,
            c.throughput_geomean,
            notes,
        ));
        out.push('\n');
        out.push_str(&metric(
            c,
            "p99",
            units::latency_us,
            CellStats::p99_shown,
            |r| &r.p99,
            c.p99_geomean,
            notes,
        ));
    }
    if !c.only_old.is_empty() {
        out.push_str(&format!("\nonly in old: {}\n", c.only_old.join("; ")));
    }
    if !c.only_new.is_empty() {
        out.push_str(&format!(
            "{}only in new: {}\n",
            if c.only_old.is_empty() { "\n" } else { "" },
            c.only_new.join("; ")
        ));
    }
    out
}

fn metric(
    c: &Comparison,
    name: &str,
    fmt: fn(f64) -> String,
    ci: fn(&CellStats) -> MedianCi,
    contrast: fn(&CompareRow) -> &tare_analysis::stats::Contrast,
    geomean: Option<(f64, f64)>,
    notes: &mut Notes,
) -> String {
    let old_v: Vec<MedianCi> = c.rows.iter().map(|r| ci(&r.old)).collect();
    let new_v: Vec<MedianCi> = c.rows.iter().map(|r| ci(&r.new)).collect();
    let old: Vec<&MedianCi> = old_v.iter().collect();
    let new: Vec<&MedianCi> = new_v.iter().collect();
    let old_h = interval_header("old", &old);
    let new_h = interval_header("new", &new);
    let mut t = Table::new(&[
        (name, Align::Left),
        (&old_h, Align::Left),
        (&new_h, Align::Left),
        ("change", Align::Right),
        ("[95% CI]", Align::Left),
        ("p", Align::Left),
    ]);
    for r in &c.rows {
        let k = contrast(r);
        t.row(vec![
            r.cell.clone(),
            with_interval(&ci(&r.old), fmt),
            with_interval(&ci(&r.new), fmt),
            units::change(k.change()),
            k.change_ci().map_or(String::new(), |(lo, hi)| {
                format!("[{}, {}]", units::change(lo), units::change(hi))
            }),
            verdict(k, notes),
        ]);
    }
    if let Some((o, n)) = geomean {
        t.row(vec![
            "geomean".into(),
            fmt(o),
            fmt(n),
            units::change(n / o - 1.0),
        ]);
    }
    t.render(0)
}
