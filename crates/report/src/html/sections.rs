//! The page's sections other than the pure charts: each pairs a chart
//! with the table of its numbers (the report must read without the
//! pictures, and on paper), and the sections that are words only:
//! fairness findings, noise warnings, provenance and how to reproduce.

use tare_analysis::stats::{MedianCi, CONFIDENCE};
use tare_analysis::{Run, NOISY_SPREAD};

use super::escape::{html, slug};
use super::{round_trips, Charts};
use crate::report::{AttributionOutcome, PartsOutcome, Report, SplitOutcome};
use crate::units;

pub(super) fn header(run: &Run, r: &Report) -> String {
    let trials: usize = r.cells.iter().map(|c| c.trials).sum();
    let ok: usize = r.cells.iter().map(|c| c.ok()).sum();
    let experiment = run
        .plan
        .as_ref()
        .map(|p| p.experiment.as_str())
        .filter(|e| !e.is_empty());
    let mut out = format!(
        "<header><h1>tare report <code>{}</code></h1>\n",
        html(&r.run_id)
    );
    let mut sub = Vec::new();
    if let Some(e) = experiment {
        sub.push(format!("experiment <code>{}</code>", html(e)));
    }
    sub.push(format!(
        "{} cells with results, {trials} trials ({ok} ok)",
        r.cells.len()
    ));
    if !r.failed_cells.is_empty() {
        sub.push(format!("{} failed", r.failed_cells.len()));
    }
    if !r.skipped_cells.is_empty() {
        sub.push(format!("{} skipped on this machine", r.skipped_cells.len()));
    }
    if let Some(t) = provenance_str(r, "started_utc") {
        sub.push(format!("started {}", html(&t)));
    }
    out.push_str(&format!(
        "<p class=\"sub\">{}</p></header>\n",
        sub.join(" · ")
    ));
    out
}

fn provenance_str(r: &Report, key: &str) -> Option<String> {
    match r.provenance.as_ref()?.get(key)? {
        serde_json::Value::String(s) if !s.is_empty() => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `median [lo, hi]`, or the median alone with one trial.
fn ci(c: &MedianCi, fmt: fn(f64) -> String) -> String {
    if c.n < 2 && c.hi <= c.lo {
        return fmt(c.median);
    }
    format!(
        "{} <span class=\"muted\">[{}, {}]</span>",
        fmt(c.median),
        fmt(c.lo),
        fmt(c.hi)
    )
}

pub(super) fn attribution(r: &Report, charts: &Charts) -> String {
    let mut out = String::from("<section id=\"attribution\"><h2>Attribution</h2>\n");
    match (&r.attribution, &charts.waterfall) {
        (AttributionOutcome::Computed { attribution: a, dropped, splits, hidden, .. }, Some(w)) => {
            out.push_str(&format!(
                "<p>Along the chain below, each step changes one factor. The gap from <code>{}</code> to <code>{}</code> is <strong>{} {}</strong>{}; each step's change is paired on the round, and its share of the gap carries a {} Fieller interval.</p>\n",
                html(&a.steps[0].cell),
                html(&a.steps[a.steps.len() - 1].cell),
                units::si_signed(a.gap),
                html(&a.unit),
                if a.gap_is_significant() { "" } else { " <span class=\"warn\">(not significant: no shares)</span>" },
                units::confidence(CONFIDENCE)
            ));
            out.push_str(&format!("<figure>{}<figcaption>Bars run from the previous cell's median to this cell's; whiskers are each cell's throughput interval. <code>~</code>: the step is not significant.</figcaption></figure>\n", w.svg()));
            if let Some(rt) = &charts.round_trips {
                out.push_str(&format!(
                    "<p>Per round trip, the gap is <strong>{:+.1} µs</strong> ({} → {} µs).</p>\n<figure>{}<figcaption>The same chain in µs per round trip (one transaction in flight per connection: µs = 10⁶ × connections ÷ transactions/s). Bars run from the previous cell's time to this cell's; whiskers are each cell's interval; the bracket after each step's change is its interval, the paired throughput ratio's interval applied to the previous cell's time. <code>~</code>: the step is not significant.</figcaption></figure>\n",
                    rt.gap_us,
                    round_trips::us(rt.rows[0].round_trip_us.median),
                    round_trips::us(rt.rows[rt.rows.len() - 1].round_trip_us.median),
                    rt.svg()
                ));
            }
            let rt_rows = charts.round_trips.as_ref().map(|rt| &rt.rows);
            out.push_str(&format!(
                "<table><tr><th>step</th><th>cell</th><th>throughput [CI]</th>{}<th>change</th><th>detectable</th><th>share of gap [CI]</th><th>p99 [CI]</th></tr>\n",
                if rt_rows.is_some() { "<th>µs per round trip [CI]</th><th>µs added [CI]</th>" } else { "" }
            ));
            for (i, s) in a.steps.iter().enumerate() {
                let rt = rt_rows.and_then(|rows| rows.get(i));
                out.push_str(&step_row(a, i, s, rt));
            }
            out.push_str("</table>\n");
            for split in splits {
                out.push_str(&split_table(a, split));
            }
            for h in hidden {
                let facts: Vec<String> = h
                    .facts
                    .iter()
                    .map(|(f, from, to)| format!("<code>{}</code> {} → {}", html(f), html(from), html(to)))
                    .collect();
                out.push_str(&format!(
                    "<p class=\"warn\">Step {} also changes {} (fairness): <code>split = true</code> under <code>[attribution]</code> measures each part with its own interval.</p>\n",
                    h.step,
                    facts.join(", ")
                ));
            }
            if !dropped.is_empty() {
                out.push_str(&format!("<p class=\"warn\">Chain cells skipped on this machine: {}.</p>\n", code_list(dropped)));
            }
        }
        (AttributionOutcome::Refused { chain, reason, .. }, _) => {
            out.push_str(&format!(
                "<p class=\"warn\">The attribution chain ({}) cannot be computed: {}.</p>\n",
                code_list(chain),
                html(reason)
            ));
        }
        _ => out.push_str("<p class=\"muted\">This run names no attribution chain (<code>[attribution] chain</code> in the experiment file, or <code>tare report --chain</code>).</p>\n"),
    }
    out.push_str("</section>\n");
    out
}

/// One step's row of the attribution table: its change, cell,
/// throughput, time per round trip (with `rt`), change from the step
/// before, detectable change, share of the gap and p99.
fn step_row(
    a: &tare_analysis::Attribution,
    i: usize,
    s: &tare_analysis::Step,
    rt: Option<&round_trips::RoundTripRow>,
) -> String {
    let change = s.change.as_ref().map_or("baseline".to_string(), |c| {
        format!("{}: {} → {}", html(&c.factor), html(&c.from), html(&c.to))
    });
    let delta = s.vs_previous.map_or(String::new(), |c| {
        format!(
            "{} {}",
            units::si_signed(s.delta),
            if c.is_significant() { "" } else { "~" }
        )
    });
    let detectable = s
        .vs_previous
        .and_then(|c| c.detectable)
        .map_or(String::new(), |d| format!("±{}", units::percent(d)));
    let share = if !a.shares_mean_something() {
        "n/a".to_string()
    } else {
        s.share.map_or(String::new(), |sh| {
            let iv = s.share_ci.map_or(String::new(), |(lo, hi)| {
                format!(
                    " <span class=\"muted\">[{}, {}]</span>",
                    units::percent(lo),
                    units::percent(hi)
                )
            });
            format!("{}{iv}", units::percent(sh))
        })
    };
    let per_rt = rt.map_or(String::new(), |r| {
        let iv = r.round_trip_us;
        let added = match (i, r.delta_ci_us) {
            (0, _) => String::new(),
            (_, Some((lo, hi))) => format!("{:+.1} <span class=\"muted\">[{lo:+.1}, {hi:+.1}]</span>", r.delta_us),
            (_, None) => format!("{:+.1}", r.delta_us),
        };
        format!(
            "<td class=\"num\">{} <span class=\"muted\">[{}, {}]</span></td><td class=\"num\">{added}</td>",
            round_trips::us(iv.median),
            round_trips::us(iv.lo),
            round_trips::us(iv.hi)
        )
    });
    format!(
        "<tr><td>{change}</td><td><code>{}</code></td><td class=\"num\">{}</td>{per_rt}<td class=\"num\">{delta}</td><td class=\"num\">{detectable}</td><td class=\"num\">{share}</td><td class=\"num\">{}</td></tr>\n",
        html(&s.cell),
        ci(&s.throughput_shown(), units::si),
        ci(&s.p99_shown(), units::latency_us)
    )
}

/// One split step's parts: change, interval, detectable, share of the step
/// and of the whole gap.
fn split_table(a: &tare_analysis::Attribution, split: &SplitOutcome) -> String {
    let shares_mean_something = a.shares_mean_something();
    let step = a.steps.get(split.step).and_then(|s| s.change.as_ref());
    let label = step.map_or(format!("step {}", split.step), |c| {
        format!("{}: {} → {}", html(&c.factor), html(&c.from), html(&c.to))
    });
    let sub = match &split.parts {
        PartsOutcome::Refused { reason } => {
            return format!(
                "<p class=\"warn\">Step {} ({label}) in parts: not computed: {}.</p>\n",
                split.step,
                html(reason)
            );
        }
        PartsOutcome::Computed { attribution } => attribution,
    };
    let mut out = format!("<h3>Step {} ({label}) in parts</h3>\n<table><tr><th>part</th><th>change [95% CI]</th><th>detectable</th><th>share of step [CI]</th><th>share of gap [CI]</th></tr>\n", split.step);
    let of_gap = |k: usize| match split.gap_shares.as_ref().and_then(|g| g.get(k)) {
        Some(g) if shares_mean_something => share_html(g.share, g.ci),
        Some(_) => "n/a".to_string(),
        None => String::new(),
    };
    for (k, s) in sub.steps.iter().skip(1).enumerate() {
        let (Some(ch), Some(v)) = (&s.change, &s.vs_previous) else {
            continue;
        };
        let what = format!(
            "{}: {} → {}",
            html(&ch.factor),
            html(&ch.from),
            html(&ch.to)
        );
        let what = if step.is_some_and(|c| c.factor == ch.factor) {
            format!("the rest ({what})")
        } else {
            what
        };
        let iv = v.change_ci().map_or(String::new(), |(lo, hi)| {
            format!(
                " <span class=\"muted\">[{}, {}]</span>",
                units::change(lo),
                units::change(hi)
            )
        });
        let share = match (sub.shares_mean_something(), s.share) {
            (false, _) => "n/a".to_string(),
            (true, Some(sh)) => share_html(sh, s.share_ci),
            _ => String::new(),
        };
        out.push_str(&format!(
            "<tr><td>{what}</td><td class=\"num\">{}{iv}{}</td><td class=\"num\">{}</td><td class=\"num\">{share}</td><td class=\"num\">{}</td></tr>\n",
            units::change(v.change()),
            if v.is_significant() { "" } else { " ~" },
            v.detectable.map_or(String::new(), |d| format!("±{}", units::percent(d))),
            of_gap(k)
        ));
    }
    out.push_str("</table>\n");
    out
}

fn code_list(items: &[String]) -> String {
    items
        .iter()
        .map(|s| format!("<code>{}</code>", html(s)))
        .collect::<Vec<_>>()
        .join(" → ")
}

pub(super) fn cells(r: &Report, charts: &Charts) -> String {
    let mut out = String::from("<section id=\"cells\"><h2>Cells</h2>\n");
    if r.cells.is_empty() {
        out.push_str("<p class=\"warn\">No cell has a successful trial.</p>\n");
    } else {
        out.push_str(&format!(
            "<figure>{}{}<figcaption>Median of the trials per cell{}; whiskers are the median's interval, dots the individual trials.</figcaption></figure>\n",
            charts.throughput.svg(),
            charts.p99.svg(),
            charts
                .throughput
                .group_by
                .as_deref()
                .map_or(String::new(), |k| format!(", grouped by <code>{}</code>", html(k)))
        ));
        out.push_str("<table><tr><th>cell</th><th>trials</th><th>throughput [CI]</th><th>p50 [CI]</th><th>p99 [CI]</th><th>errors</th><th>generator CPU / request</th></tr>\n");
        for c in &r.cells {
            let mut noisy = if c.is_noisy() {
                " <span class=\"warn\">noisy</span>".to_string()
            } else {
                String::new()
            };
            if let Some(note) = r.noise.cell_note(&c.cell) {
                noisy.push_str(&format!(" <span class=\"warn\">{}</span>", html(&note)));
            }
            out.push_str(&format!(
                "<tr id=\"cell-{}\"><td><code>{}</code>{noisy}</td><td class=\"num\">{}/{}</td><td class=\"num\">{} {}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                slug(&c.cell),
                html(&c.cell),
                c.ok(),
                c.trials,
                ci(&c.throughput_shown(), units::si),
                html(&c.unit),
                ci(&c.p50_us, units::latency_us),
                ci(&c.p99_shown(), units::latency_us),
                if c.errors.total() == 0 { "0".to_string() } else { format!("{} ({})", c.errors.total(), units::percent(c.error_rate)) },
                c.generator_cpu_us_per_request.map_or("-".into(), |v| format!("{v:.1} µs"))
            ));
        }
        out.push_str("</table>\n");
    }
    if !r.failed_cells.is_empty() {
        out.push_str(
            "<h3>Failed cells</h3><table><tr><th>cell</th><th>trials</th><th>error</th></tr>\n",
        );
        for f in &r.failed_cells {
            out.push_str(&format!(
                "<tr><td><code>{}</code></td><td class=\"num\">{}</td><td>{}</td></tr>\n",
                html(&f.cell),
                f.trials,
                html(&f.error)
            ));
        }
        out.push_str("</table>\n");
    }
    if !r.skipped_cells.is_empty() {
        out.push_str("<h3>Skipped on this machine</h3><table><tr><th>cell</th><th>why</th></tr>\n");
        for (cell, why) in &r.skipped_cells {
            out.push_str(&format!(
                "<tr><td><code>{}</code></td><td>{}</td></tr>\n",
                html(cell),
                html(why)
            ));
        }
        out.push_str("</table>\n");
    }
    out.push_str("</section>\n");
    out
}

/// A request mix's breakdown, one table row per cell and request name:
/// completed requests over the cell's trials, their share, errors, and
/// latency from the merged histograms (docs/http.md, "Request mixes").
/// Empty when no cell ran a mix.
pub(super) fn names(r: &Report) -> String {
    if r.cells.iter().all(|c| c.by_name.is_empty()) {
        return String::new();
    }
    let mut out = String::from("<section id=\"names\"><h2>Requests by name</h2>\n<table><tr><th>cell</th><th>name</th><th>request</th><th>weight</th><th>requests</th><th>share</th><th>errors</th><th>p50</th><th>p99</th></tr>\n");
    for c in r.cells.iter().filter(|c| !c.by_name.is_empty()) {
        let total = c.by_name.iter().map(|n| n.requests).sum::<u64>().max(1) as f64;
        for n in &c.by_name {
            out.push_str(&format!(
                "<tr><td><code>{}</code></td><td><code>{}</code></td><td><code>{}</code></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
                html(&c.cell),
                html(&n.name),
                html(&n.request),
                n.weight,
                n.requests,
                units::percent(n.requests as f64 / total),
                n.errors.total(),
                units::latency_us(n.latency_us.p50),
                units::latency_us(n.latency_us.p99),
            ));
        }
    }
    out.push_str("</table>\n<p class=\"muted\">Counts add over each cell's successful trials; a connect error belongs to no name (a request is drawn when its connection is ready).</p></section>\n");
    out
}

pub(super) fn fairness(r: &Report) -> String {
    let body = match &r.findings {
        None => "<p class=\"warn\">Not checked: this run has no <code>findings.json</code>.</p>".to_string(),
        Some(f) if f.is_empty() => "<p class=\"ok\">No difference between cells beyond the factors under test (binary, version, config, limits, CPUs and log filesystem compared).</p>".to_string(),
        Some(f) => {
            let mut s = format!(
                "<p class=\"warn\">{} difference{} between cells that no factor under test explains: the comparison is not fair until {} fixed or declared a factor.</p><ul class=\"warnings\">",
                f.len(),
                if f.len() == 1 { "" } else { "s" },
                if f.len() == 1 { "it is" } else { "they are" }
            );
            for finding in f {
                let fact = if finding.fact.is_empty() { String::new() } else { format!("<code>{}</code>: ", html(&finding.fact)) };
                s.push_str(&format!("<li>{fact}{}</li>", html(&finding.message)));
            }
            s.push_str("</ul>");
            s
        }
    };
    format!(
        "<section id=\"fairness\"><h2>Fairness</h2>\n{body}\n{}</section>\n",
        where_ran(r)
    )
}

/// Where each process ran, per cell (the monitor's `cpus_seen`), and the
/// helpers that shared the server's CPU.
fn where_ran(r: &Report) -> String {
    let Some(res) = &r.resources else {
        return String::new();
    };
    let cells: Vec<_> = res
        .cells
        .iter()
        .filter(|c| !c.where_ran.is_empty())
        .collect();
    if cells.is_empty() {
        return String::new();
    }
    let groups = crate::where_ran::groups(cells.iter().map(|c| &c.where_ran));
    let mut s = String::from("<h3>Where each process ran</h3>\n<table><tr><th>cell</th>");
    for g in &groups {
        s.push_str(&format!("<th>{}</th>", html(g)));
    }
    s.push_str("</tr>\n");
    for c in &cells {
        s.push_str(&format!("<tr><td><code>{}</code></td>", html(&c.cell)));
        for g in &groups {
            let cpus = c.where_ran.get(g).map_or("-".into(), |m| {
                format!("CPU {}", crate::where_ran::cpus_text(m))
            });
            s.push_str(&format!("<td>{}</td>", html(&cpus)));
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n<p class=\"muted\">Share of each process's CPU time seen on each CPU, sampled from <code>/proc/&lt;pid&gt;/stat</code> during the monitored trials; tare pins only the server and the generator.</p>\n");
    let shared: Vec<String> = cells
        .iter()
        .flat_map(|c| {
            c.shared_with_server
                .iter()
                .map(move |m| format!("<li><code>{}</code>: {}</li>", html(&c.cell), html(m)))
        })
        .collect();
    if !shared.is_empty() {
        s.push_str(&format!(
            "<ul class=\"warnings\">{}</ul>\n",
            shared.concat()
        ));
    }
    s
}

pub(super) fn noise(r: &Report, charts: &Charts) -> String {
    let mut items: Vec<String> = Vec::new();
    // Cells with too few trials for a 95% interval, by trial count: one
    // line per count rather than one per cell.
    let mut short: Vec<(usize, Vec<&tare_analysis::CellStats>)> = Vec::new();
    for c in &r.cells {
        if c.is_noisy() {
            items.push(format!(
                "cell <code>{}</code>: the throughput interval spans ±{} of the median, wider than the ±{} tare needs to resolve a factor; add trials or quiet the machine",
                html(&c.cell),
                units::percent(c.throughput_shown().relative_spread()),
                units::percent(NOISY_SPREAD)
            ));
        }
        if c.level.is_none() && c.throughput.n >= 2 && c.throughput.confidence + 1e-9 < CONFIDENCE {
            match short.iter_mut().find(|(n, _)| *n == c.throughput.n) {
                Some((_, cells)) => cells.push(c),
                None => short.push((c.throughput.n, vec![c])),
            }
        }
        if !c.failures.is_empty() {
            items.push(format!(
                "cell <code>{}</code>: {} trial(s) failed: {}",
                html(&c.cell),
                c.failures.len(),
                html(&c.failures[0])
            ));
        }
    }
    for (n, cells) in &short {
        let which = if cells.len() == r.cells.len() && cells.len() > 1 {
            "every cell".to_string()
        } else {
            cells
                .iter()
                .map(|c| format!("<code>{}</code>", html(&c.cell)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        items.push(format!(
            "{which}: {n} successful trials give only a {} interval for the median; {} trials give {} or more",
            units::confidence(cells[0].throughput.confidence),
            tare_analysis::stats::trials_for_confidence(CONFIDENCE),
            units::confidence(CONFIDENCE)
        ));
    }
    if let AttributionOutcome::Computed { attribution: a, .. } = &r.attribution {
        if !a.gap_is_significant() {
            items.push(
                "the attribution's overall gap is not significant: no step has a share of it (n/a)"
                    .into(),
            );
        }
    }
    items.extend(charts.warnings.iter().map(|w| html(w).into_owned()));
    items.extend(
        r.warnings
            .iter()
            .map(|w| format!("reading the run: {}", html(w))),
    );
    let body = if items.is_empty() {
        "<p class=\"ok\">No noise warning: every cell's interval is within ±5% and no trial stalled.</p>".to_string()
    } else {
        format!(
            "<ul class=\"warnings\">{}</ul>",
            items
                .iter()
                .map(|i| format!("<li>{i}</li>"))
                .collect::<String>()
        )
    };
    format!(
        "<section id=\"noise\"><h2>Noise and warnings</h2>\n{body}\n{}</section>\n",
        disturbed(&r.noise)
    )
}

/// The trials the monitor saw disturbed, with its reasons.
fn disturbed(n: &crate::noise::Noise) -> String {
    let Some(headline) = n.headline() else {
        return String::new();
    };
    let class = if n.trials.is_empty() { "ok" } else { "warn" };
    let mut out = format!(
        "<h3>Disturbed trials</h3>\n<p class=\"{class}\">{}</p>\n",
        html(&headline)
    );
    if !n.trials.is_empty() {
        out.push_str(
            "<table><tr><th>cell</th><th>trial</th><th>why</th><th>statistics</th></tr>\n",
        );
        for t in &n.trials {
            out.push_str(&format!(
                "<tr><td><code>{}</code></td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>\n",
                html(&t.cell),
                t.trial,
                t.reasons.iter().map(|r| html(r).into_owned()).collect::<Vec<_>>().join("; "),
                if t.excluded { "excluded" } else { "kept" }
            ));
        }
        out.push_str("</table>\n");
    }
    out
}

pub(super) fn provenance(r: &Report) -> String {
    let mut out = String::from("<section id=\"provenance\"><h2>Provenance</h2>\n");
    match r.provenance.as_ref().and_then(|p| p.as_object()) {
        None => {
            out.push_str("<p class=\"warn\">This run has no <code>provenance.json</code>.</p>\n")
        }
        Some(obj) => {
            out.push_str("<table>");
            for (k, v) in obj {
                if k == "command_line" {
                    continue;
                }
                let text = match v {
                    serde_json::Value::Null => continue,
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                out.push_str(&format!(
                    "<tr><th>{}</th><td>{}</td></tr>",
                    html(k),
                    html(&text)
                ));
            }
            out.push_str("</table>\n");
        }
    }
    out.push_str("</section>\n");
    out
}

pub(super) fn reproduce(run: &Run, r: &Report) -> String {
    let mut out = String::from("<section id=\"reproduce\"><h2>Reproduce</h2>\n");
    let recorded: Option<Vec<String>> = r
        .provenance
        .as_ref()
        .and_then(|p| p.get("command_line"))
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        });
    match recorded.filter(|c| !c.is_empty()) {
        Some(cmd) => out.push_str(&format!(
            "<p>The command that made this run:</p><pre>{}</pre>\n",
            html(&shell_line(&cmd))
        )),
        None => out.push_str("<p class=\"warn\">The command line was not recorded.</p>\n"),
    }
    if let Some(dir) = &run.dir {
        let d = dir.display().to_string();
        if dir.join("experiment.toml").is_file() {
            out.push_str(&format!(
                "<p>Run the same experiment again (its file is kept in the run directory):</p><pre>{}</pre>\n",
                html(&shell_line(&["tare".into(), "run".into(), format!("{d}/experiment.toml")]))
            ));
        }
        out.push_str(&format!(
            "<p>Re-render this report from the records:</p><pre>{}</pre>\n",
            html(&shell_line(&[
                "tare".into(),
                "report".into(),
                d.clone(),
                "--html".into(),
                format!("{d}/report.html")
            ]))
        ));
    }
    out.push_str("</section>\n");
    out
}

/// Arguments as one POSIX shell line: plain words as they are, anything
/// else in single quotes (`'` written as `'\''`).
pub(super) fn shell_line(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c));
            if plain {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `78.2% [76.6%, 79.6%]` with the interval muted, or the share alone.
fn share_html(share: f64, ci: Option<(f64, f64)>) -> String {
    match ci {
        Some((lo, hi)) => format!(
            "{} <span class=\"muted\">[{}, {}]</span>",
            units::percent(share),
            units::percent(lo),
            units::percent(hi)
        ),
        None => units::percent(share),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_line_quotes_what_the_shell_would_split() {
        let args: Vec<String> = ["tare", "run", "my exp.toml", "it's"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(shell_line(&args), r"tare run 'my exp.toml' 'it'\''s'");
    }
}
