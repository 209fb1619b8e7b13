//! The HTML report has the text report's "where the CPU goes"
//! table, and labels each figure measured on a remote host with it (a
//! target monitored there), and a generator that ran elsewhere with its
//! hosts. Rendered from a run directory, as `tare report --html` does.

use std::path::Path;

use tare_analysis::synthetic::{plan, seed000_cells, trials, write_run_dir};
use tare_analysis::{load_run, Run};
use tare_monitor::{CpuPerRequest, MonitorRecord};
use tare_record::GeneratorPart;
use tare_report::html;

/// seed 000's cells × 2 trials, each monitored: the first cell's target
/// on host `srv`, the second's load from hosts `gen1` and `gen2`.
fn write(dir: &Path) -> (Run, Vec<String>) {
    let cells = seed000_cells(0.02);
    let ids: Vec<String> = cells.iter().map(|c| c.id()).collect();
    let mut t = trials("cpu", &cells, 2, 11);
    for r in &mut t {
        let mut m = MonitorRecord {
            per_request: Some(CpuPerRequest {
                requests: 1000,
                server_us: 10.0,
                generator_us: 6.5,
                machine_us: 20.0,
                ..Default::default()
            }),
            ..Default::default()
        };
        if r.cell == ids[0] {
            m.host = Some("srv".into());
        }
        if r.cell == ids[1] {
            if let Some(res) = r.result.as_mut() {
                res.generators = ["gen1", "gen2"]
                    .iter()
                    .map(|h| GeneratorPart {
                        host: h.to_string(),
                        ..Default::default()
                    })
                    .collect();
            }
        }
        r.monitor = Some(m.to_json());
    }
    write_run_dir(dir, &t, Some(&plan("cpu", &cells, &ids))).unwrap();
    (load_run(dir).unwrap(), ids)
}

#[test]
fn the_page_says_where_the_cpu_goes_and_on_which_host() {
    let tmp = tempfile::tempdir().unwrap();
    let (run, ids) = write(tmp.path());
    let page = html::render(&run);
    assert!(
        page.contains("<a href=\"#cpu\">Where the CPU goes</a>"),
        "{page}"
    );
    let start = page.find("<section id=\"cpu\">").expect("the section");
    let section = &page[start..start + page[start..].find("</section>").unwrap()];
    let row = |id: &str| {
        section
            .lines()
            .find(|l| l.contains(&format!("<code>{id}</code></td>")))
            .unwrap_or_else(|| panic!("{id}: {section}"))
    };
    let remote = row(&ids[0]);
    assert!(
        remote.contains("<td>10.0 <small class=\"muted\">on srv</small></td>"),
        "{remote}"
    );
    assert!(
        remote.contains("6.5 <small class=\"muted\">on this machine</small>"),
        "{remote}"
    );
    let generators = row(&ids[1]);
    assert!(
        generators.contains("6.5 <small class=\"muted\">on gen1, gen2</small>"),
        "{generators}"
    );
    assert!(generators.contains("<td>10.0</td>"), "{generators}");
    // A cell that ran here entirely has no labels.
    assert!(!row(&ids[2]).contains("<small"), "{}", row(&ids[2]));
    assert!(section.contains("Measured on host srv"), "{section}");
    // The chain's steps, as the text report lists them.
    assert!(section.contains("CPU per request moved"), "{section}");
}

/// seed 000's cells × 3 rounds, each trial profiled: the server's TCP/IP
/// drifts with the round (shared by every cell of it), docker-proxy's
/// user space is in the published cell only.
fn write_profiled(dir: &Path) -> (Run, Vec<String>) {
    let cells = seed000_cells(0.02);
    let ids: Vec<String> = cells.iter().map(|c| c.id()).collect();
    let mut t = trials("prof", &cells, 3, 5);
    for r in &mut t {
        let drift = [0.0, 3.0, -2.0][(r.trial as usize - 1) % 3];
        let proxy = if r.cell == ids[0] {
            12.0 + 0.1 * r.trial as f64
        } else {
            0.0
        };
        let mut p = CpuPerRequest {
            requests: 1000,
            server_us: 10.0 + drift,
            machine_us: 20.0,
            ..Default::default()
        };
        p.profile_us.insert(
            "server".into(),
            [("TCP/IP".to_string(), 10.0 + drift)].into(),
        );
        if proxy > 0.0 {
            p.profile_us.insert(
                "docker-proxy".into(),
                [("user space".to_string(), proxy)].into(),
            );
            p.functions_us.insert("[docker-proxy]".into(), proxy);
        }
        p.functions_us.insert("tcp_sendmsg".into(), 10.0 + drift);
        let m = MonitorRecord {
            per_request: Some(p),
            profile: Some(Default::default()),
            ..Default::default()
        };
        r.monitor = Some(m.to_json());
    }
    write_run_dir(dir, &t, Some(&plan("prof", &cells, &ids))).unwrap();
    (load_run(dir).unwrap(), ids)
}

/// From the run directory to the reports: the first step's moves have
/// paired intervals in the JSON, the page draws its flame graph, and the
/// known cause (docker-proxy) is named with the lines that measure it.
#[test]
fn a_profiled_run_has_intervals_a_flame_graph_and_a_remedy_per_step() {
    let tmp = tempfile::tempdir().unwrap();
    let (run, ids) = write_profiled(tmp.path());
    let report = tare_report::Report::new(&run);
    let json = tare_report::exporter(tare_report::Format::Json)
        .run(&report)
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let steps = json["resources"]["steps"].as_array().expect("steps");
    let first = &steps[0]["profile"];
    assert_eq!(steps[0]["from"], ids[0].as_str(), "{first}");
    assert_eq!(first["moved_ci_method"], "paired_t", "{first}");
    // The proxy's 12.2 µs leave: the interval holds them, the drift
    // cancelled in TCP/IP (it moved 0 in every round).
    let ci = &first["subsystems_moved_ci_us"]["user space"];
    let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
    assert!(lo < -12.0 && hi > -12.4 && hi < -11.9, "{ci}");
    let tcp = &first["subsystems_moved_ci_us"]["TCP/IP"];
    assert_eq!(tcp[0].as_f64(), Some(0.0), "{tcp}");
    assert!(
        first["functions_moved_ci_us"]["[docker-proxy]"].is_array(),
        "{first}"
    );
    assert_eq!(first["remedy"]["cause"], "docker-proxy", "{first}");
    assert_eq!(first["remedy"]["cell"], ids[0].as_str(), "{first}");
    assert!(first["remedy"]["experiment"]
        .as_str()
        .unwrap()
        .contains("lab-nat"));
    let page = html::render(&run);
    assert_eq!(
        page.matches("data-chart=\"flame\"").count(),
        ids.len() - 1,
        "one graph per step"
    );
    assert!(
        page.contains("What removes it: <strong>docker-proxy</strong>"),
        "{page}"
    );
    let text = tare_report::render_text(&run);
    assert!(
        text.contains("what removes it: docker-proxy, 12.2 µs more in"),
        "{text}"
    );
    assert!(text.contains("user space"), "{text}");
}
