//! The HTML report rendered from recorded run directories: chart data
//! snapshots (numbers, not pixels), the page's structure, and hostile
//! recorded strings shown as text.

use crate::html_fixture;

use tare_analysis::load_run;
use tare_report::html::{self, Charts};
use tare_report::Report;

fn charts_of(dir: &std::path::Path) -> (Charts, String) {
    let run = load_run(dir).unwrap();
    let report = Report::new(&run);
    (Charts::new(&run, &report), html::render(&run))
}

#[test]
fn seed000_report_has_every_chart() {
    let tmp = tempfile::tempdir().unwrap();
    html_fixture::seed000(tmp.path());
    let (charts, page) = charts_of(tmp.path());
    std::fs::write(tmp.path().join("report.html"), &page).unwrap();
    for kind in ["waterfall", "throughput", "p99", "percentiles", "timeline"] {
        assert!(
            page.contains(&format!("data-chart=\"{kind}\"")),
            "no {kind} chart"
        );
    }
    // No concurrency factor in seed 000 (docs/studies.md): no concurrency chart.
    assert!(charts.concurrency.is_none());
    assert!(!page.contains("data-chart=\"concurrency"));
    let w = charts.waterfall.as_ref().expect("seed 000 names a chain");
    assert_eq!(w.rows.len(), 5);
    // Seed 000: the published port is the largest share of the gap.
    let largest = w
        .rows
        .iter()
        .skip(1)
        .max_by(|a, b| a.delta.total_cmp(&b.delta))
        .unwrap();
    assert!(
        largest.label.starts_with("placement: docker-publish"),
        "{}",
        largest.label
    );
    // The warm-up and the stall planted in the fixture are both reported.
    assert!(
        charts.warnings.iter().any(|w| w.contains("warm-up")),
        "{:?}",
        charts.warnings
    );
    assert!(
        charts.warnings.iter().any(|w| w.contains("stall at 2s")),
        "{:?}",
        charts.warnings
    );
    assert!(page.contains("log_fs"), "the fairness finding is shown");
    assert!(page.contains("tare run experiments/seed000.toml --out runs/seed000"));
    insta::assert_snapshot!(
        "html_seed000_charts",
        serde_json::to_string_pretty(&charts).unwrap()
    );
}

#[test]
fn seed001_client_sweep_draws_concurrency_curves() {
    let tmp = tempfile::tempdir().unwrap();
    html_fixture::seed001(tmp.path());
    let (charts, page) = charts_of(tmp.path());
    let c = charts
        .concurrency
        .as_ref()
        .expect("clients is a concurrency factor");
    assert_eq!(c.factor, "clients");
    assert_eq!(c.unit, "tps");
    assert_eq!(c.cpus, Some(48.0));
    let levels: Vec<Vec<f64>> = c
        .series
        .iter()
        .map(|s| s.points.iter().map(|p| p.level).collect())
        .collect();
    assert_eq!(levels, vec![vec![16.0, 48.0, 96.0]; 2]);
    // Seed 001 (docs/studies.md): Docker falls off past the core count, native
    // much less.
    let docker = &c.series[1].points;
    assert!(docker[2].throughput.median < 0.75 * docker[1].throughput.median);
    for kind in ["concurrency-throughput", "concurrency-p99"] {
        assert!(
            page.contains(&format!("data-chart=\"{kind}\"")),
            "no {kind} chart"
        );
    }
    assert!(charts.waterfall.is_none());
    insta::assert_snapshot!(
        "html_seed001_charts",
        serde_json::to_string_pretty(&charts).unwrap()
    );
}

/// Round trips (`tare net rr`): the attribution is drawn again in µs per
/// round trip, each step's added time with its interval (seed 002: NAT
/// roughly doubles a round trip).
#[test]
fn seed002_net_chain_draws_the_latency_waterfall() {
    let tmp = tempfile::tempdir().unwrap();
    html_fixture::seed002_net(tmp.path());
    let (charts, page) = charts_of(tmp.path());
    let rt = charts
        .round_trips
        .as_ref()
        .expect("round trips: a µs waterfall");
    let medians: Vec<f64> = rt.rows.iter().map(|r| r.round_trip_us.median).collect();
    for (got, want) in medians.iter().zip([37.6, 38.5, 45.0, 75.2]) {
        assert!((got / want - 1.0).abs() < 0.03, "{medians:?}");
    }
    for (i, r) in rt.rows.iter().enumerate() {
        let iv = r.round_trip_us;
        assert!(iv.lo <= iv.median && iv.median <= iv.hi, "{r:?}");
        if i == 0 {
            assert_eq!((r.from_us, r.delta_us, r.delta_ci_us), (0.0, 0.0, None));
            continue;
        }
        assert_eq!(r.from_us, medians[i - 1]);
        assert!((r.delta_us - (medians[i] - medians[i - 1])).abs() < 1e-9);
        let (lo, hi) = r.delta_ci_us.expect("paired rounds give an interval");
        assert!(lo < hi, "{r:?}");
    }
    // The published port's step: ~30 µs added, and its interval excludes 0.
    let nat = &rt.rows[3];
    assert!(nat
        .label
        .starts_with("placement: docker-bridge → docker-publish"));
    assert!(nat.delta_ci_us.unwrap().0 > 20.0, "{nat:?}");
    assert!((rt.gap_us - (medians[3] - medians[0])).abs() < 1e-9);
    assert!(page.contains("data-chart=\"round-trips\""));
    assert!(page.contains("µs per round trip [CI]"));
    // Throughput units draw no such chart.
    let http = tempfile::tempdir().unwrap();
    html_fixture::seed000(http.path());
    let (charts, page) = charts_of(http.path());
    assert!(charts.round_trips.is_none());
    assert!(!page.contains("data-chart=\"round-trips\""));
    insta::assert_snapshot!(
        "html_seed002_net_round_trips",
        serde_json::to_string_pretty(&rt).unwrap()
    );
}

#[test]
fn hostile_recorded_strings_are_text() {
    let tmp = tempfile::tempdir().unwrap();
    html_fixture::hostile(tmp.path());
    let (_, page) = charts_of(tmp.path());
    // The page has no script of its own, so any `<script` is an injection;
    // nor any `<img`, nor an attribute a value broke out into.
    assert!(
        !page.to_ascii_lowercase().contains("<script"),
        "a <script> reached the page"
    );
    assert!(!page.contains("<img"), "an <img> reached the page");
    assert!(
        !page.contains("onerror=\""),
        "an attribute escaped its quotes"
    );
    assert!(page.contains("&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;"));
    // Each hostile source made it to the page, escaped.
    for shown in [
        "Server header differs",
        "docker said",
        "server said",
        "nginx/1.22",
        "exp&lt;script",
    ] {
        assert!(page.contains(shown), "{shown} is missing");
    }
}

#[test]
fn write_renders_a_run_directory_to_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    html_fixture::seed000(tmp.path());
    let out = tmp.path().join("report.html");
    html::write(tmp.path(), &out).unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.starts_with("<!DOCTYPE html>"));
    let err = html::write(&tmp.path().join("missing"), &out).unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
}
