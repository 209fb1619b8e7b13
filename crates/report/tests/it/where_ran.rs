//! Where each process ran (the monitor's `cpus_seen`),
//! in every format: one line for all cells when they agree, one per cell
//! when they differ, and a helper on the server's CPU said in words.

use std::collections::BTreeMap;
use std::path::Path;

use tare_analysis::synthetic::{plan, seed000_cells, trials, write_run_dir};
use tare_analysis::{load_run, Run};
use tare_monitor::{CpuPerRequest, MonitorRecord};
use tare_report::{exporter, html, render_text, Format, Report};

fn seen(groups: &[(&str, &[(u32, f64)])]) -> BTreeMap<String, BTreeMap<u32, f64>> {
    groups
        .iter()
        .map(|(g, c)| (g.to_string(), c.iter().copied().collect()))
        .collect()
}

/// The pinned pair every cell has: server on CPU 1, generator on CPU 0.
fn pinned() -> BTreeMap<String, BTreeMap<u32, f64>> {
    seen(&[
        ("server", &[(1, 1.0)]),
        ("generator", &[(0, 1.0)]),
        ("ksoftirqd/*", &[(1, 1.0)]),
    ])
}

/// seed 000's cells × 3 trials, each monitored; `cell0` (when set) is where
/// the first cell's groups ran, the others ran as [`pinned`].
fn write(dir: &Path, cell0: Option<BTreeMap<String, BTreeMap<u32, f64>>>) -> Run {
    let cells = seed000_cells(0.02);
    let mut t = trials("where", &cells, 3, 7);
    for r in &mut t {
        let mut m = MonitorRecord {
            per_request: Some(CpuPerRequest {
                requests: 1000,
                server_us: 10.0,
                machine_us: 20.0,
                ..Default::default()
            }),
            ..Default::default()
        };
        m.summary.cpu_s.server = 1.0;
        m.summary.cpu_s.generator = 0.5;
        m.summary.cpus_seen = match &cell0 {
            Some(s) if r.cell == cells[0].id() => s.clone(),
            _ => pinned(),
        };
        r.monitor = Some(m.to_json());
    }
    let chain: Vec<String> = cells.iter().map(|c| c.id()).collect();
    write_run_dir(dir, &t, Some(&plan("where", &cells, &chain))).unwrap();
    load_run(dir).unwrap()
}

#[test]
fn cells_that_ran_alike_share_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let run = write(tmp.path(), None);
    let text = render_text(&run);
    assert!(
        text.contains("where it ran: server CPU 1; generator CPU 0; ksoftirqd/* CPU 1\n  ! ksoftirqd/* ran on the server's CPU 1 for 100% of its time\n"),
        "{text}"
    );
    assert_eq!(text.matches("where it ran").count(), 1, "{text}");
}

#[test]
fn a_cell_whose_helper_shared_the_servers_cpu_gets_its_own_line() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cell0 = pinned();
    cell0.remove("ksoftirqd/*");
    cell0.insert("docker-proxy".into(), BTreeMap::from([(0, 0.2), (1, 0.8)]));
    let run = write(tmp.path(), Some(cell0));
    let cells = seed000_cells(0.02);
    let (first, second) = (cells[0].id(), cells[1].id());
    let text = render_text(&run);
    assert!(
        text.contains(&format!(
            "where it ran:\n  {first}: server CPU 1; generator CPU 0; docker-proxy CPU 1 (80%), 0 (20%)\n    ! docker-proxy ran on the server's CPU 1 for 80% of its time\n  {second}: server CPU 1; generator CPU 0; ksoftirqd/* CPU 1\n"
        )),
        "{text}"
    );

    let json: serde_json::Value =
        serde_json::from_slice(&exporter(Format::Json).run(&Report::new(&run)).unwrap()).unwrap();
    let c0 = &json["resources"]["cells"][0];
    assert_eq!(c0["cell"], first);
    assert_eq!(c0["where_ran"]["docker-proxy"]["1"], 0.8);
    assert_eq!(
        c0["shared_with_server"][0],
        "docker-proxy ran on the server's CPU 1 for 80% of its time"
    );

    let page = html::render(&run);
    assert!(page.contains("<h3>Where each process ran</h3>"), "{page}");
    assert!(page.contains("<td>CPU 1 (80%), 0 (20%)</td>"));
    assert!(
        page.contains("docker-proxy ran on the server&#39;s CPU 1 for 80% of its time"),
        "{page}"
    );
}
