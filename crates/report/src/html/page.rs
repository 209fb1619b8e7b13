//! The document: head (a Content-Security-Policy that forbids every
//! fetch and every script, so the page cannot reach the network or run
//! anything even if a recorded string slipped past escaping), the inline
//! stylesheet, then one section per question a reader brings: what costs
//! how much (attribution), how do the cells compare, what do the tails
//! look like, what happens under more concurrency, did any trial misbehave,
//! can the comparison be trusted, and how to run it again.

use tare_analysis::Run;

use super::escape::html;
use super::{cpu, sections, Charts};
use crate::report::Report;
use crate::units;
use tare_analysis::Comparison;

/// No fetches of any kind, no scripts; inline styles and `data:` images
/// only. Tests load the page in Chromium with this policy and fail on any
/// violation.
pub const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'none'";

const STYLE: &str = include_str!("style.css");

fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"tare {}\">\n\
         <title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n",
        env!("CARGO_PKG_VERSION"),
        html(title)
    )
}

/// The whole report page of one run.
pub fn document(run: &Run, report: &Report, charts: &Charts) -> String {
    let mut out = head(&format!("tare report {}", report.run_id));
    out.push_str(&sections::header(run, report));
    let mut toc: Vec<(&str, &str)> = vec![("attribution", "Attribution"), ("cells", "Cells")];
    let cpu = cpu::section(report.resources.as_ref());
    if !cpu.is_empty() {
        toc.push(("cpu", "Where the CPU goes"));
    }
    if !charts.percentiles.series.is_empty() {
        toc.push(("percentiles", "Latency percentiles"));
    }
    if charts.concurrency.is_some() {
        toc.push(("concurrency", "Concurrency"));
    }
    if !charts.timelines.cells.is_empty() {
        toc.push(("timelines", "Timelines"));
    }
    let names = sections::names(report);
    if !names.is_empty() {
        toc.push(("names", "Requests by name"));
    }
    toc.extend([
        ("fairness", "Fairness"),
        ("noise", "Noise and warnings"),
        ("provenance", "Provenance"),
        ("reproduce", "Reproduce"),
    ]);
    out.push_str("<nav>");
    for (id, name) in &toc {
        out.push_str(&format!("<a href=\"#{id}\">{name}</a>"));
    }
    out.push_str("</nav>\n");

    out.push_str(&sections::attribution(report, charts));
    out.push_str(&sections::cells(report, charts));
    out.push_str(&cpu);
    if !charts.percentiles.series.is_empty() {
        out.push_str(&format!(
            "<section id=\"percentiles\"><h2>Latency percentiles</h2>\n<figure>{}<figcaption>Each cell's latency distribution, from the exact merge of its trials' HDR histograms. The x axis spreads the tail: 90%, 99%, 99.9% are evenly spaced; a curve stops where its cell has too few requests to resolve a deeper percentile.</figcaption></figure></section>\n",
            charts.percentiles.svg()
        ));
    }
    if let Some(c) = &charts.concurrency {
        let [t, p] = c.svgs();
        out.push_str(&format!(
            "<section id=\"concurrency\"><h2>Concurrency</h2>\n<figure><div class=\"pair\">{t}{p}</div><figcaption>Throughput and p99 latency against <code>{}</code>, one line per combination of the other factors; whiskers are each median's interval{}.</figcaption></figure></section>\n",
            html(&c.factor),
            if c.cpus.is_some() { "; the dashed line is this machine's CPU count" } else { "" }
        ));
    }
    if !charts.timelines.cells.is_empty() {
        out.push_str("<section id=\"timelines\"><h2>Timelines</h2>\n<figure><div class=\"grid3\">");
        for s in charts.timelines.svgs() {
            out.push_str(&s);
        }
        out.push_str(&format!(
            "</div><figcaption>{} per second during each trial, one line per trial, every panel on the same scale. A dip in one line is a stall; a low first second is warm-up.</figcaption></figure></section>\n",
            html(&charts.timelines.unit)
        ));
    }
    out.push_str(&names);
    out.push_str(&sections::fairness(report));
    out.push_str(&sections::noise(report, charts));
    out.push_str(&sections::provenance(report));
    out.push_str(&sections::reproduce(run, report));
    out.push_str(&format!(
        "<footer><p class=\"muted\">Rendered by tare {} from the records in this run directory only.</p></footer>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION")
    ));
    out
}

/// `tare compare` as a page: a table, benchstat-style.
pub(crate) fn comparison_document(c: &Comparison) -> String {
    let mut out = head(&format!("tare compare {} {}", c.old_run, c.new_run));
    out.push_str(&format!(
        "<h1>{} → {}</h1>\n<table><tr><th>cell</th><th>old</th><th>new</th><th>change [CI]</th><th>p</th><th>p99 change</th></tr>\n",
        html(&c.old_run),
        html(&c.new_run)
    ));
    for r in &c.rows {
        let ci = r
            .throughput
            .change_ci()
            .map(|(lo, hi)| format!(" [{}, {}]", units::change(lo), units::change(hi)))
            .unwrap_or_default();
        out.push_str(&format!(
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}{}{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
            html(&r.cell),
            units::si(r.old.throughput_shown().median),
            units::si(r.new.throughput_shown().median),
            units::change(r.throughput.change()),
            ci,
            if r.throughput.is_significant() { "" } else { " ~" },
            r.throughput.p_value().map_or("-".into(), |p| format!("{p:.3}")),
            units::change(r.p99.change())
        ));
    }
    out.push_str("</table>\n");
    for (what, cells) in [
        ("only in the old run", &c.only_old),
        ("only in the new run", &c.only_new),
    ] {
        if !cells.is_empty() {
            let list: Vec<String> = cells
                .iter()
                .map(|s| format!("<code>{}</code>", html(s)))
                .collect();
            out.push_str(&format!("<p>Cells {what}: {}</p>\n", list.join(", ")));
        }
    }
    out.push_str("</body>\n</html>\n");
    out
}
