//! The per-cell table: one row per cell, its factor levels, trials, the
//! medians of throughput, p50 and p99 with their intervals, errors and the
//! generator's own CPU per request.

use tare_analysis::stats::{trials_for_confidence, MedianCi, CONFIDENCE};
use tare_analysis::{CellStats, FailedCell, NOISY_SPREAD};

use super::notes::Notes;
use super::{factor_order, interval_header, levels, shared_confidence, with_interval};
use crate::report::Report;
use crate::table::{Align, Table};
use crate::units;

/// What every row of the table shares: the factor columns, whether values
/// carry their own unit, the round-trip column, the shared confidence.
struct Columns {
    order: Vec<String>,
    mixed: bool,
    per_rt: bool,
    shared: Option<f64>,
}

pub(super) fn section(r: &Report, notes: &mut Notes) -> String {
    if r.cells.is_empty() && r.failed_cells.is_empty() {
        let mut out = String::from("cells: no trial has results yet\n");
        for (cell, why) in &r.skipped_cells {
            out.push_str(&format!("  skipped: {cell} ({why})\n"));
        }
        return out;
    }
    let unit = r.cells.first().map_or("req/s", |c| c.unit.as_str());
    // A run of several jobs (fio IOPS, hpcc GFLOP/s) has one primary
    // metric per job: each value then carries its unit.
    let mixed = r.cells.iter().any(|c| c.measure() != r.cells[0].measure());
    let unit = if mixed { "primary metric" } else { unit };
    metric_notes(&r.cells, notes);
    let tp_shown: Vec<MedianCi> = r.cells.iter().map(CellStats::throughput_shown).collect();
    let tp: Vec<&MedianCi> = tp_shown.iter().collect();
    // Round trips (tare net): the time per round trip beside the rate.
    let round_trips: Vec<Option<MedianCi>> = r.cells.iter().map(CellStats::round_trip_us).collect();
    let cols = Columns {
        order: factor_order(&r.cells),
        mixed,
        per_rt: round_trips.iter().any(Option::is_some),
        shared: shared_confidence(&tp),
    };
    let mut table = header(r, &cols, unit, &tp);
    for (c, rt) in r.cells.iter().zip(&round_trips) {
        table.row(cell_row(r, c, rt.as_ref(), &cols, notes));
    }
    for f in &r.failed_cells {
        table.row(failed_row(f, &cols, notes));
    }
    for (cell, why) in &r.skipped_cells {
        notes.add(format!("{cell}: skipped on this machine ({why})"));
    }
    noise_note(&r.cells, notes);
    confidence_notes(&r.cells, notes);

    let mut out = if r.cells.iter().any(|c| c.level.is_some()) {
        notes.add(
            "cells: throughput and p99 are each cell's level with the rounds' drift removed (cell + \
             round model on logs) and its t interval: where this cell sits on this run's machine, \
             at the run's average speed; p50 is the median over trials (docs/analysis.md)",
        );
        format!("cells ({unit} and p99: levels, drift removed; p50: median over trials)\n")
    } else {
        format!("cells ({unit}, p50 and p99 latency: medians over trials)\n")
    };
    out.push_str(&table.render(2));
    out
}

/// The table with its header: the factors (or `cell`), then the columns
/// every cell fills, each interval's header naming its confidence.
fn header(r: &Report, cols: &Columns, unit: &str, tp: &[&MedianCi]) -> Table {
    let p99_shown: Vec<MedianCi> = r.cells.iter().map(CellStats::p99_shown).collect();
    let p50: Vec<_> = r.cells.iter().map(|c| &c.p50_us).collect();
    let p99: Vec<&MedianCi> = p99_shown.iter().collect();
    let mut header: Vec<(String, Align)> = if cols.order.is_empty() {
        vec![("cell".into(), Align::Left)]
    } else {
        cols.order
            .iter()
            .map(|k| (k.clone(), Align::Left))
            .collect()
    };
    header.extend([
        ("trials".to_string(), Align::Right),
        (interval_header(unit, tp), Align::Left),
    ]);
    if cols.per_rt {
        header.push(("µs/round trip".to_string(), Align::Left));
    }
    header.extend([
        ("vs ref [95% CI]".to_string(), Align::Left),
        (interval_header("p50", &p50), Align::Left),
        (interval_header("p99", &p99), Align::Left),
        ("errors".to_string(), Align::Right),
        ("gen CPU/req".to_string(), Align::Right),
        ("notes".to_string(), Align::Left),
    ]);
    let header_refs: Vec<(&str, Align)> = header.iter().map(|(h, a)| (h.as_str(), *a)).collect();
    Table::new(&header_refs)
}

/// One cell's row, its errors and failed trials told in the notes.
fn cell_row(
    r: &Report,
    c: &CellStats,
    round_trip: Option<&MedianCi>,
    cols: &Columns,
    notes: &mut Notes,
) -> Vec<String> {
    let mut row = level_cells(c, &cols.order);
    let shown = c.throughput_shown();
    let flags = flags(r, c, &shown, cols, notes);
    row.extend([
        if c.ok() == c.trials {
            c.trials.to_string()
        } else {
            format!("{}/{}", c.ok(), c.trials)
        },
        if cols.mixed {
            format!("{} {}", with_interval(&shown, units::si), c.unit)
        } else {
            with_interval(&shown, units::si)
        },
    ]);
    if cols.per_rt {
        row.push(round_trip.map_or("-".into(), |rt| with_interval(rt, |v| format!("{v:.1}"))));
    }
    row.extend([
        vs_reference(r, c, notes),
        no_latency_dash(c, with_interval(&c.p50_us, units::latency_us)),
        no_latency_dash(c, with_interval(&c.p99_shown(), units::latency_us)),
        errors(c),
        c.generator_cpu_us_per_request
            .map_or("-".into(), units::latency_us),
        flags.join("; "),
    ]);
    row
}

/// A cell's `notes` column (its own confidence, noise, failed trials),
/// with its errors and which trials failed, and why, added to the notes.
fn flags(
    r: &Report,
    c: &CellStats,
    shown: &MedianCi,
    cols: &Columns,
    notes: &mut Notes,
) -> Vec<String> {
    let mut flags = Vec::new();
    if cols.shared.is_none() && shown.confidence < CONFIDENCE {
        flags.push(format!("{} CI", units::confidence(shown.confidence)));
    }
    if c.is_noisy() {
        flags.push(format!(
            "noisy ±{}",
            units::percent(shown.relative_spread())
        ));
    }
    flags.extend(r.noise.cell_note(&c.cell));
    if c.errors.total() > 0 {
        let e = &c.errors;
        let kinds: Vec<String> = e.nonzero().map(|(k, n)| format!("{n} {k}")).collect();
        notes.add(format!(
            "{}: {} errors, {} of attempts ({})",
            c.cell,
            e.total(),
            units::percent(c.error_rate),
            kinds.join(", ")
        ));
    }
    if !c.failures.is_empty() {
        flags.push(format!("{} failed", c.failures.len()));
        // Which trials, and why: a dead server is named, never measured
        // (docs/report.md, "Failed trials").
        let mut which: Vec<&str> = c.failures.iter().take(3).map(String::as_str).collect();
        if c.failures.len() > 3 {
            which.push("...");
        }
        notes.add(format!(
            "{}: {} of {} trials failed ({}); the statistics use the rest",
            c.cell,
            c.failures.len(),
            c.trials,
            which.join("; ")
        ));
    }
    flags
}

/// The row of a cell none of whose trials has a result.
fn failed_row(f: &FailedCell, cols: &Columns, notes: &mut Notes) -> Vec<String> {
    let mut row: Vec<String> = if cols.order.is_empty() {
        vec![f.cell.clone()]
    } else {
        (cols.order.iter())
            .map(|k| f.factors.get(k).cloned().unwrap_or_else(|| "-".into()))
            .collect()
    };
    row.push(format!("0/{}", f.trials));
    if cols.per_rt {
        row.push("-".into());
    }
    row.extend(["-", "", "-", "-", "-", "-"].map(String::from));
    row.push("all trials failed".into());
    notes.add(format!(
        "{}: every trial failed (first: {})",
        f.cell, f.error
    ));
    row
}

/// The cell's throughput as a ratio of the reference's: `1` for the
/// reference, `0.83 [0.81, 0.85]`, `~` when not told apart from it.
fn vs_reference(r: &Report, c: &CellStats, notes: &mut Notes) -> String {
    let Some(vs) = &r.vs_reference else {
        return String::new();
    };
    if vs.references.iter().any(|(id, _)| *id == c.cell) {
        notes.add(
            "vs ref with several primary metrics: a cell is compared with the reference of its own metric (the cell measuring the same thing that shares most levels with the reference), which prints 1",
        );
        return "1".into();
    }
    if vs.cell == c.cell {
        let name = r
            .cells
            .iter()
            .find(|x| x.cell == vs.cell)
            .map_or(vs.cell.clone(), |x| levels(x, &factor_order(&r.cells)));
        notes.add(format!(
            "vs ref: each cell's throughput over the reference cell's ({name}): the geometric mean \
             of within-round ratios with a paired t interval (Welch's, unpaired, when the two never \
             shared two rounds); `~`: not significantly different from it"
        ));
        return "1".into();
    }
    let Some((_, k)) = vs.contrasts.iter().find(|(id, _)| *id == c.cell) else {
        return String::new();
    };
    if !k.ratio.is_finite() {
        return "-".into();
    }
    let mut s = ratio(k.ratio);
    if let Some((lo, hi)) = k.ratio_ci {
        s.push_str(&format!(" [{}, {}]", ratio(lo), ratio(hi)));
    }
    if !k.is_significant() {
        s.push_str(" ~");
    }
    s
}

/// The other metrics of the cells whose records carry them (the tool
/// engine's: STREAM and RandomAccess beside HPL, bandwidth and latency
/// percentiles beside IOPS), each the median over trials with its interval.
pub(super) fn metrics(r: &Report) -> Option<String> {
    let with: Vec<&CellStats> = r.cells.iter().filter(|c| !c.metrics.is_empty()).collect();
    if with.is_empty() {
        return None;
    }
    let mut out =
        String::from("other metrics (medians over trials [interval]; `_us`: lower is better)\n");
    for c in with {
        out.push_str(&format!("  {}\n", c.cell));
        let parts: Vec<String> = c
            .metrics
            .iter()
            .map(|m| format!("{} {} {}", m.name, with_interval(&m.value, small), m.unit))
            .collect();
        for chunk in parts.chunks(3) {
            out.push_str(&format!("    {}\n", chunk.join("; ")));
        }
    }
    Some(out)
}

/// A request mix's breakdown per cell (docs/http.md, "Request mixes"):
/// each name's completed requests over the cell's trials, its share,
/// errors and latency from the merged histograms.
pub(super) fn names(r: &Report) -> Option<String> {
    let with: Vec<&CellStats> = r.cells.iter().filter(|c| !c.by_name.is_empty()).collect();
    if with.is_empty() {
        return None;
    }
    let mut out = String::from(
        "requests by name (all successful trials; latency p50 / p99)
",
    );
    for c in with {
        out.push_str(&format!(
            "  {}
",
            c.cell
        ));
        let width = c
            .by_name
            .iter()
            .map(|n| n.name.chars().count().min(40))
            .max()
            .unwrap_or(4)
            .max(4);
        let total = c.by_name.iter().map(|n| n.requests).sum::<u64>().max(1) as f64;
        for n in &c.by_name {
            let name: String = n.name.chars().take(40).collect();
            out.push_str(&format!(
                "    {name:<width$}  {:>10} {:>6}  {:>8} errors  {} / {}\n",
                n.requests,
                units::percent(n.requests as f64 / total),
                n.errors.total(),
                units::latency_us(n.latency_us.p50),
                units::latency_us(n.latency_us.p99),
            ));
        }
    }
    Some(out)
}

/// SI prefixes from 1 up; below 1 three significant digits (GUP/s are
/// hundredths).
fn small(v: f64) -> String {
    if v.abs() >= 1.0 || v == 0.0 || !v.is_finite() {
        units::si(v)
    } else {
        let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
        format!("{v:.digits$}")
    }
}

/// `-` for a cell whose records carry no per-operation latency (hpcc).
fn no_latency_dash(c: &CellStats, s: String) -> String {
    if c.p99_us.median == 0.0 && c.p50_us.median == 0.0 {
        "-".into()
    } else {
        s
    }
}

/// What each cell's primary metric is when it is not throughput, which way
/// it improves, and for the tool engine where its data lived.
fn metric_notes(cells: &[CellStats], notes: &mut Notes) {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for c in cells.iter().filter(|c| c.metric != "throughput") {
        if seen.contains(&c.measure()) {
            continue;
        }
        seen.push(c.measure());
        let how = match c.better {
            tare_record::Better::Higher => "higher is better; a ratio below 1 is a loss",
            tare_record::Better::Lower => {
                "lower is better: a ratio below 1 is a gain, above 1 a loss"
            }
        };
        notes.add(format!(
            "{} ({}): the primary metric of its cells, {how}; p50/p99 are the tool's own per-operation latency where it reports one",
            c.metric, c.unit
        ));
    }
    for c in cells {
        let Some(t) = &c.tool else { continue };
        let mut s = format!(
            "{}: {} ({}) ran on {}",
            c.cell,
            t.job,
            if t.version.is_empty() {
                &t.tool
            } else {
                &t.version
            },
            t.data_fs.as_deref().unwrap_or("an unknown filesystem")
        );
        if let Some(d) = t.direct {
            s.push_str(if d {
                ", direct I/O"
            } else {
                ", buffered I/O (the page cache takes part)"
            });
        }
        for n in &t.notes {
            s.push_str(&format!("; {n}"));
        }
        notes.add(s);
    }
}

/// A ratio with three significant digits: `0.253`, `1.04`.
fn ratio(x: f64) -> String {
    if !x.is_finite() {
        "-".into()
    } else if x.abs() >= 9.995 {
        format!("{x:.1}")
    } else if x.abs() >= 0.9995 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// Levels of `c` in factor order, or its id when it has no factors.
fn level_cells(c: &CellStats, order: &[String]) -> Vec<String> {
    if order.is_empty() {
        return vec![c.cell.clone()];
    }
    order
        .iter()
        .map(|k| c.factors.get(k).cloned().unwrap_or_else(|| "-".into()))
        .collect()
}

/// `0`, or the count with its share of attempts.
fn errors(c: &CellStats) -> String {
    match c.errors.total() {
        0 => "0".into(),
        n => format!("{} ({})", units::si(n as f64), units::percent(c.error_rate)),
    }
}

/// One note for every noisy cell, each with its spread.
fn noise_note(cells: &[CellStats], notes: &mut Notes) {
    let noisy: Vec<String> = cells
        .iter()
        .filter(|c| c.is_noisy())
        .map(|c| {
            format!(
                "{} ±{}",
                c.cell,
                units::percent(c.throughput_shown().relative_spread())
            )
        })
        .collect();
    if noisy.is_empty() {
        return;
    }
    notes.add(format!(
        "noisy: half the throughput interval exceeds ±{} of the median in {}: a smaller effect \
         cannot be told from noise in these cells; quiet the machine (`tare doctor`) or add \
         trials",
        units::confidence(NOISY_SPREAD),
        noisy.join(", ")
    ));
}

/// Says, once per trial count, how much confidence the intervals really have.
fn confidence_notes(cells: &[CellStats], notes: &mut Notes) {
    let mut ns: Vec<usize> = cells
        .iter()
        .filter(|c| c.level.is_none())
        .map(|c| c.throughput.n)
        .collect();
    ns.sort_unstable();
    ns.dedup();
    let need = trials_for_confidence(CONFIDENCE);
    for n in ns {
        let conf = cells
            .iter()
            .find(|c| c.level.is_none() && c.throughput.n == n)
            .map(|c| c.throughput.confidence);
        match (n, conf) {
            (1, _) => notes.add(
                "cells with 1 successful trial have no interval at all: the median is that \
                 one trial"
                    .to_string(),
            ),
            (_, Some(c)) if c < CONFIDENCE => notes.add(format!(
                "with {n} trials a cell's interval is its min..max, at {} confidence, not \
                 {}: an honest interval of the median needs ≥ {need} trials per cell \
                 (order statistics, docs/analysis.md)",
                units::confidence(c),
                units::confidence(CONFIDENCE)
            )),
            _ => {}
        }
    }
}
