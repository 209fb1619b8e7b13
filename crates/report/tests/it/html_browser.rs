//! The HTML report in a real browser: headless Chromium (Debian's
//! `chromium`, installed by scripts/setup.sh) loads the page with every
//! host name unresolvable, and a probe script records JavaScript errors,
//! Content-Security-Policy violations (any fetch the page attempts) and
//! the laid-out size of every chart into the DOM, which `--dump-dom`
//! returns. A screenshot is saved for a person to look at. Two control
//! tests plant an external image and a throwing script to show the probe
//! catches both.

use crate::html_fixture;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;
use tare_report::html::page::CSP;

/// Chromium's run time bound: a page this size loads in well under a
/// second; a minute means it hung.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(60);

/// What the probe writes into `<pre id="tare-probe">`.
#[derive(Debug, Deserialize)]
struct Probe {
    errors: Vec<String>,
    violations: Vec<String>,
    /// `kind:WIDTHxHEIGHT:marks` per `svg.chart`.
    charts: Vec<String>,
    resources: Vec<String>,
    title: String,
}

/// Records errors and policy violations from the first moment, then
/// reports after load (violation events are queued tasks, hence the delay;
/// `--virtual-time-budget` makes Chromium wait for it).
const PROBE: &str = r#"<script>
var tareErrors = [], tareViolations = [];
window.addEventListener('error', function (e) { tareErrors.push(String(e.message || e.type)); }, true);
document.addEventListener('securitypolicyviolation', function (e) { tareViolations.push(e.effectiveDirective + ' ' + e.blockedURI); });
window.addEventListener('load', function () { setTimeout(function () {
  var charts = Array.prototype.map.call(document.querySelectorAll('svg.chart'), function (s) {
    var b = s.getBoundingClientRect();
    return s.getAttribute('data-chart') + ':' + Math.round(b.width) + 'x' + Math.round(b.height) + ':' +
      s.querySelectorAll('rect,polyline,path,circle').length;
  });
  var out = document.createElement('pre');
  out.id = 'tare-probe';
  out.textContent = JSON.stringify({ errors: tareErrors, violations: tareViolations, charts: charts,
    resources: performance.getEntriesByType('resource').map(function (r) { return r.name; }),
    title: document.title });
  document.body.appendChild(out);
}, 300); });
</script>"#;

/// The page as shipped, with the probe added: its policy allows inline
/// scripts (so the probe runs, and so would any script a recorded string
/// smuggled in: escaping alone must stop those) but still no fetches.
fn instrument(page: &str) -> String {
    assert!(page.contains(CSP), "the page carries the policy");
    let lax = CSP.replace("script-src 'none'", "script-src 'unsafe-inline'");
    page.replacen(CSP, &lax, 1)
        .replacen("<head>", &format!("<head>\n{PROBE}"), 1)
}

fn chromium() -> PathBuf {
    for c in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(out) = Command::new("which").arg(c).output() {
            if out.status.success() {
                return PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            }
        }
    }
    panic!("chromium is not installed: run scripts/setup.sh (Debian package `chromium`)");
}

/// Runs headless Chromium on `page` with `args`, bounded in time, each run
/// with its own profile directory (removed with `work`).
fn run_chromium(work: &Path, page: &Path, args: &[String]) -> String {
    let profile = tempfile::tempdir_in(work).unwrap();
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--no-default-browser-check",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).ok();
        s
    });
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > BROWSER_TIMEOUT {
            child.kill().ok();
            child.wait().ok();
            panic!("chromium did not finish within {BROWSER_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().unwrap()
}

/// Loads the instrumented `page` and returns what the probe saw.
fn probe(work: &Path, page: &str) -> Probe {
    let path = work.join(format!("probe-{}.html", std::process::id()));
    std::fs::write(&path, instrument(page)).unwrap();
    let dom = run_chromium(
        work,
        &path,
        &["--dump-dom".into(), "--virtual-time-budget=5000".into()],
    );
    let start = dom
        .find("<pre id=\"tare-probe\">")
        .unwrap_or_else(|| panic!("no probe output in the DOM:\n{dom}"));
    let rest = &dom[start + "<pre id=\"tare-probe\">".len()..];
    let json = &rest[..rest.find("</pre>").unwrap()];
    let json = json
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&");
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("probe output {json}: {e}"))
}

fn screenshot(work: &Path, page: &Path, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tare-html");
    std::fs::create_dir_all(&dir).unwrap();
    let png = dir.join(name);
    std::fs::remove_file(&png).ok();
    run_chromium(
        work,
        page,
        &[
            format!("--screenshot={}", png.display()),
            "--window-size=1280,2000".into(),
        ],
    );
    // The page beside its screenshot, for a person to open.
    std::fs::copy(page, png.with_extension("html")).unwrap();
    let bytes =
        std::fs::read(&png).unwrap_or_else(|e| panic!("no screenshot at {}: {e}", png.display()));
    assert!(
        bytes.starts_with(b"\x89PNG"),
        "{} is not a PNG",
        png.display()
    );
    png
}

/// Every chart laid out with a real size and marks in it.
fn assert_drawn(p: &Probe, kinds: &[&str]) {
    for kind in kinds {
        let found = p.charts.iter().find(|c| c.starts_with(&format!("{kind}:")));
        let c = found.unwrap_or_else(|| panic!("chart {kind} missing; drawn: {:?}", p.charts));
        let parts: Vec<&str> = c.split(':').collect();
        let (w, h) = parts[1].split_once('x').unwrap();
        let (w, h, marks): (u32, u32, u32) = (
            w.parse().unwrap(),
            h.parse().unwrap(),
            parts[2].parse().unwrap(),
        );
        assert!(
            w > 200 && h > 80 && marks > 0,
            "chart {kind} is empty or collapsed: {c}"
        );
    }
}

fn assert_clean(p: &Probe) {
    assert!(p.errors.is_empty(), "JavaScript errors: {:?}", p.errors);
    assert!(
        p.violations.is_empty(),
        "the page tried to fetch: {:?}",
        p.violations
    );
    let external: Vec<&String> = p
        .resources
        .iter()
        .filter(|r| !r.starts_with("data:"))
        .collect();
    assert!(
        external.is_empty(),
        "the page loaded resources: {external:?}"
    );
}

#[test]
fn seed000_report_loads_offline_with_every_chart() {
    let work = tempfile::tempdir().unwrap();
    let run = work.path().join("run");
    html_fixture::seed000(&run);
    let report = run.join("report.html");
    tare_report::html::write(&run, &report).unwrap();
    let page = std::fs::read_to_string(&report).unwrap();
    let p = probe(work.path(), &page);
    assert_clean(&p);
    assert_drawn(
        &p,
        &["waterfall", "throughput", "p99", "percentiles", "timeline"],
    );
    assert_eq!(
        p.charts
            .iter()
            .filter(|c| c.starts_with("timeline:"))
            .count(),
        5,
        "one timeline per cell"
    );
    let png = screenshot(work.path(), &report, "seed000.png");
    eprintln!("screenshot: {}", png.display());
}

/// The report `tare run` writes for the run `fixture` makes, loaded by
/// the probe: the work directory, the page, and what the probe saw.
fn written(fixture: fn(&Path)) -> (tempfile::TempDir, PathBuf, Probe) {
    let work = tempfile::tempdir().unwrap();
    let run = work.path().join("run");
    fixture(&run);
    let report = run.join("report.html");
    tare_report::html::write(&run, &report).unwrap();
    let p = probe(work.path(), &std::fs::read_to_string(&report).unwrap());
    assert_clean(&p);
    (work, report, p)
}

#[test]
fn seed001_report_draws_concurrency_curves() {
    let (work, report, p) = written(html_fixture::seed001);
    assert_drawn(
        &p,
        &[
            "concurrency-throughput",
            "concurrency-p99",
            "throughput",
            "percentiles",
            "timeline",
        ],
    );
    screenshot(work.path(), &report, "seed001.png");
}

#[test]
fn seed002_net_report_draws_the_round_trip_waterfall() {
    let (work, report, p) = written(html_fixture::seed002_net);
    assert_drawn(
        &p,
        &[
            "waterfall",
            "round-trips",
            "throughput",
            "p99",
            "percentiles",
        ],
    );
    screenshot(work.path(), &report, "seed002-net.png");
}

#[test]
fn hostile_strings_never_run_in_the_browser() {
    let work = tempfile::tempdir().unwrap();
    let run = work.path().join("run");
    html_fixture::hostile(&run);
    let page = tare_report::html::render(&tare_analysis::load_run(&run).unwrap());
    let p = probe(work.path(), &page);
    assert!(
        !p.title.contains("pwned"),
        "a recorded string ran as script"
    );
    assert_clean(&p);
    assert_drawn(&p, &["waterfall", "throughput", "p99", "percentiles"]);
    // The shipped page (no script allowed at all) for a person to look at.
    let shipped = run.join("report.html");
    std::fs::write(&shipped, &page).unwrap();
    screenshot(work.path(), &shipped, "hostile.png");
}

#[test]
fn control_the_probe_catches_a_fetch_and_a_script_error() {
    let work = tempfile::tempdir().unwrap();
    let run = work.path().join("run");
    html_fixture::seed000(&run);
    let page = tare_report::html::render(&tare_analysis::load_run(&run).unwrap());
    let planted = page.replacen(
        "</body>",
        "<img src=\"http://tare-probe.invalid/x.png\"><script>undefinedTareFunction();</script></body>",
        1,
    );
    let p = probe(work.path(), &planted);
    assert!(
        p.violations
            .iter()
            .any(|v| v.contains("tare-probe.invalid")),
        "the planted fetch went unnoticed: {p:?}"
    );
    assert!(
        p.errors.iter().any(|e| e.contains("undefinedTareFunction")),
        "the planted error went unnoticed: {p:?}"
    );
}
