//! Disturbed trials are counted per cell, listed with
//! their reasons in every format, kept in the statistics by default, and
//! left out (exactly those) when the experiment or `tare report
//! --exclude-disturbed` asks.

use std::path::Path;

use tare_analysis::synthetic::{plan, seed000_cells, trials, write_run_dir};
use tare_analysis::{load_run, Run};
use tare_record::TrialRecord;
use tare_report::{exporter, html, render_text, Format, Report};

const STEAL: &str = "steal 6.1% of CPU";
const OTHERS: &str = "other processes 0.34 cores (cc1plus 0.30)";

/// seed 000's cells × 5 trials; trial 2 of the first cell and trial 4 of the
/// second are disturbed; every trial has a monitor verdict on noise, on a
/// machine without cpufreq.
fn records() -> Vec<TrialRecord> {
    let cells = seed000_cells(0.02);
    let mut t = trials("noisy", &cells, 5, 7);
    for r in &mut t {
        let reasons: Vec<String> = match (r.cell == cells[0].id(), r.cell == cells[1].id(), r.trial)
        {
            (true, _, 2) => vec![STEAL.into()],
            (_, true, 4) => vec![OTHERS.into()],
            _ => Vec::new(),
        };
        r.monitor = Some(serde_json::json!({
            "disturbance": { "steal_fraction": 0.0, "others_cores": 0.0,
                             "frequency_moved": null, "reasons": reasons }
        }));
        r.disturbed = (!reasons.is_empty()).then_some(reasons);
    }
    t
}

fn write(dir: &Path, exclude: bool) -> Run {
    let cells = seed000_cells(0.02);
    let chain: Vec<String> = cells.iter().map(|c| c.id()).collect();
    let mut p = serde_json::to_value(plan("noisy", &cells, &chain)).unwrap();
    p["trials"] = serde_json::json!({ "exclude_disturbed": exclude });
    write_run_dir(dir, &records(), None).unwrap();
    std::fs::write(dir.join("plan.json"), p.to_string()).unwrap();
    load_run(dir).unwrap()
}

fn samples(run: &Run, cell: &str) -> Vec<f64> {
    let mut v = run
        .cells()
        .into_iter()
        .find(|c| c.cell == cell)
        .unwrap()
        .throughput_samples;
    v.sort_by(f64::total_cmp);
    v
}

#[test]
fn disturbed_trials_are_kept_and_named_by_default() {
    let tmp = tempfile::tempdir().unwrap();
    let run = write(tmp.path(), false);
    let cells = seed000_cells(0.02);
    assert_eq!(samples(&run, &cells[0].id()).len(), 5, "kept");
    let text = render_text(&run);
    assert_eq!(text.matches("1/5 disturbed").count(), 2, "{text}");
    let n = records().len();
    assert!(
        text.contains(&format!("noise: 2 of {n} trials disturbed")),
        "{text}"
    );
    assert!(text.contains("kept in the statistics"), "{text}");
    assert!(text.contains("CPU frequency not exposed"), "{text}");
    assert!(
        text.contains(&format!("  {} #2: {STEAL}\n", cells[0].id())),
        "{text}"
    );
    assert!(
        text.contains(&format!("  {} #4: {OTHERS}\n", cells[1].id())),
        "{text}"
    );

    let json: serde_json::Value =
        serde_json::from_slice(&exporter(Format::Json).run(&Report::new(&run)).unwrap()).unwrap();
    let noise = &json["noise"];
    assert_eq!(noise["excluded"], 0);
    assert_eq!(noise["trials"].as_array().unwrap().len(), 2);
    assert_eq!(noise["trials"][0]["reasons"][0], STEAL);
    assert_eq!(noise["per_cell"][cells[1].id()], serde_json::json!([1, 5]));

    let page = html::render(&run);
    assert!(page.contains("<h3>Disturbed trials</h3>"));
    assert!(page.contains("1/5 disturbed"));
    assert!(page.contains(OTHERS));
}

#[test]
fn exclusion_drops_exactly_the_flagged_trials_and_says_so() {
    let all = records();
    let rps = |t: &TrialRecord| t.result.as_ref().unwrap().throughput();
    let tmp = tempfile::tempdir().unwrap();
    let kept = write(tmp.path(), false);
    let tmp2 = tempfile::tempdir().unwrap();
    let by_plan = write(tmp2.path(), true);
    // `tare report --exclude-disturbed` on a run that kept them.
    let mut by_flag = kept.clone();
    assert_eq!(by_flag.exclude_disturbed(), 2);

    for cell in seed000_cells(0.02).iter().map(|c| c.id()) {
        let mut expected: Vec<f64> = all
            .iter()
            .filter(|t| t.cell == cell && t.disturbed.is_none())
            .map(rps)
            .collect();
        expected.sort_by(f64::total_cmp);
        assert_eq!(samples(&by_plan, &cell), expected, "{cell}");
        assert_eq!(samples(&by_flag, &cell), expected, "{cell}");
    }
    for run in [&by_plan, &by_flag] {
        let text = render_text(run);
        assert!(
            text.contains(&format!("2 of {} trials disturbed", all.len()))
                && text.contains("2 excluded from the statistics"),
            "{text}"
        );
        assert_eq!(
            text.matches("1/5 disturbed (excluded)").count(),
            2,
            "{text}"
        );
        assert_eq!(Report::new(run).noise.excluded, 2);
    }
}

#[test]
fn a_clean_monitored_run_says_so_and_an_unmonitored_one_says_nothing() {
    let cells = seed000_cells(0.02);
    let chain: Vec<String> = cells.iter().map(|c| c.id()).collect();
    let mut clean = records();
    for r in &mut clean {
        r.disturbed = None;
        r.monitor = Some(serde_json::json!({
            "disturbance": { "steal_fraction": 0.0, "others_cores": 0.0, "frequency_moved": 0.01 }
        }));
    }
    let tmp = tempfile::tempdir().unwrap();
    write_run_dir(tmp.path(), &clean, Some(&plan("noisy", &cells, &chain))).unwrap();
    let text = render_text(&load_run(tmp.path()).unwrap());
    assert!(
        text.contains(&format!(
            "noise: none of the {} monitored trials disturbed",
            clean.len()
        )),
        "{text}"
    );
    assert!(
        !text.contains("not exposed") && !text.contains("disturbed)"),
        "{text}"
    );

    for r in &mut clean {
        r.monitor = None;
    }
    let tmp = tempfile::tempdir().unwrap();
    write_run_dir(tmp.path(), &clean, Some(&plan("noisy", &cells, &chain))).unwrap();
    let text = render_text(&load_run(tmp.path()).unwrap());
    assert!(!text.contains("noise:"), "{text}");
}
