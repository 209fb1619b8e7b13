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
