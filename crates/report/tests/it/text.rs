//! Snapshot tests of the text report on fixed synthetic runs (realistic
//! LoadResults with HDR histograms, written to a run directory and read back
//! exactly as `tare report DIR` does).

use std::path::Path;

use tare_analysis::synthetic::{plan, seed000_cells, trials, write_run_dir, SynthCell};
use tare_analysis::{compare, load_run, Run};
use tare_report::{exporter, render_comparison_text, render_text, Format, Report};

/// Writes `cells` × `n` trials with a plan (chain = every cell in order),
/// provenance and findings, reads it back and pins the directory name.
fn run_dir(dir: &Path, run_id: &str, cells: &[SynthCell], n: u32, seed: u64) -> Run {
    let chain: Vec<String> = cells.iter().map(|c| c.id()).collect();
    write_run_dir(
        dir,
        &trials(run_id, cells, n, seed),
        Some(&plan(run_id, cells, &chain)),
    )
    .unwrap();
    std::fs::write(
        dir.join("provenance.json"),
        r#"{"tare_version": "0.1.0", "host": {"kernel": "6.1.0-28-amd64", "cpu_model": "AMD EPYC 7B13", "cpus": 2}}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("findings.json"),
        r#"[{"fact": "log_fs", "values": [["native", "ext4"], ["docker-host", "overlay"]],
            "message": "log_fs differs between cells (native: ext4; docker-host: overlay) and is not a factor under test"}]"#,
    )
    .unwrap();
    let mut run = load_run(dir).unwrap();
    run.dir = Some(Path::new("runs").join(run_id));
    run
}

#[test]
fn seed000_report_five_trials() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cells = seed000_cells(0.02);
    cells[2] = cells[2].clone().failing(3);
    let run = run_dir(tmp.path(), "seed000", &cells, 5, 42);
    insta::assert_snapshot!(render_text(&run));
}

#[test]
fn three_trials_report_says_what_it_cannot_tell() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cells = seed000_cells(0.02);
    // One cell far noisier than the rest.
    cells[3].spread = 0.2;
    let run = run_dir(tmp.path(), "seed000-3", &cells, 3, 42);
    insta::assert_snapshot!(render_text(&run));
}

#[test]
fn refused_chain_and_failed_cell_are_reported_not_fatal() {
    let tmp = tempfile::tempdir().unwrap();
    let cells = vec![
        SynthCell::new(
            &[("placement", "native"), ("access_log", "off")],
            42_000.0,
            0.01,
        ),
        SynthCell::new(
            &[("placement", "docker-host"), ("access_log", "on")],
            31_000.0,
            0.01,
        ),
        SynthCell::new(
            &[("placement", "docker-bridge"), ("access_log", "on")],
            29_000.0,
            0.01,
        )
        .failing(1)
        .failing(2),
    ];
    let run = run_dir(tmp.path(), "refused", &cells, 2, 5);
    insta::assert_snapshot!(render_text(&run));
}

#[test]
fn compare_two_runs() {
    let old_cells = seed000_cells(0.02);
    let mut new_cells = seed000_cells(0.02);
    // docker-proxy off (userland-proxy=false): published ports go through DNAT.
    new_cells[0].rps = 17_800.0;
    new_cells.pop();
    let old = Run::from_trials(trials("before", &old_cells, 5, 1));
    let mut new = Run::from_trials(trials("after", &new_cells, 5, 2));
    new.plan = Some(plan("after", &new_cells, &[]));
    insta::assert_snapshot!(render_comparison_text(&compare(&old, &new)));
}

#[test]
fn json_export_is_the_same_analysis() {
    let tmp = tempfile::tempdir().unwrap();
    let run = run_dir(tmp.path(), "json", &seed000_cells(0.02), 5, 42);
    let report = Report::new(&run);
    let bytes = exporter(Format::Json).run(&report).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["run_id"], "json");
    assert_eq!(v["cells"].as_array().unwrap().len(), 5);
    assert_eq!(v["attribution"]["status"], "computed");
    let steps = v["attribution"]["attribution"]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 5);
    assert_eq!(
        steps[1]["throughput"]["median"].as_f64().unwrap(),
        report.cells[1].throughput.median
    );
    let text = exporter(Format::Text).run(&report).unwrap();
    assert_eq!(String::from_utf8(text).unwrap(), render_text(&run));
}

#[test]
fn an_empty_run_renders() {
    let run = Run::from_trials(Vec::new());
    let text = render_text(&run);
    assert!(text.contains("no trial has results yet"), "{text}");
}

#[test]
fn zero_throughput_and_empty_histograms_render_without_panicking() {
    // A dead target: every trial completed nothing.
    let mut records = trials("dead", &seed000_cells(0.02), 3, 9);
    for r in records.iter_mut().filter(|r| r.cell.contains("native")) {
        let res = r.result.as_mut().unwrap();
        res.rps = Some(0.0);
        res.requests = 0;
        res.latency_us = Default::default();
        res.generator_cpu_s = 0.0;
        res.errors.connect = 100;
        res.attempts = Some(100);
    }
    let run = Run::from_trials(records);
    let text = render_text(&run);
    // Nothing completed is nothing measured: failed cells, no 0 req/s.
    assert!(text.contains("all trials failed"), "{text}");
    assert!(
        text.contains("every trial failed (first: nothing completed)"),
        "{text}"
    );
    let old = run.clone();
    let text = render_comparison_text(&compare(&old, &run));
    assert!(text.contains("geomean") || text.contains("req/s"), "{text}");
}

#[test]
fn skipped_cells_and_a_chain_around_them_are_explained() {
    let cells = vec![
        SynthCell::new(&[("placement", "docker-publish")], 18_000.0, 0.01),
        SynthCell::new(&[("placement", "native")], 38_000.0, 0.01),
    ];
    let mut run = Run::from_trials(trials("skip", &cells, 5, 4));
    let mut p = plan("skip", &cells, &[cells[0].id(), cells[1].id()]);
    p.cells.push(tare_analysis::plan::PlannedCellView {
        id: "placement=docker-host".into(),
        factors: [("placement".to_string(), "docker-host".to_string())].into(),
        skipped: Some("docker is not reachable".into()),
    });
    p.attribution.dropped = vec!["placement=docker-host".into()];
    run.plan = Some(p);
    let text = render_text(&run);
    assert!(
        text.contains("placement=docker-host: skipped on this machine (docker is not reachable)"),
        "{text}"
    );
    assert!(
        text.contains("chain goes around them: placement=docker-host"),
        "{text}"
    );
    assert!(text.contains("1 skipped on this machine"), "{text}");
    // docker-publish at ~0.47 of native, significant with 5 against 5.
    assert!(
        text.contains("placement: docker-publish → native"),
        "{text}"
    );
}

/// Regression: a chain whose two ends do not differ
/// printed a share of the gap anyway (1032% [-3040%, 8954%] once). When
/// the gap itself is not significant, no step gets a share.
#[test]
fn shares_of_a_gap_that_is_not_there_are_not_printed() {
    let tmp = tempfile::tempdir().unwrap();
    let cells = vec![
        SynthCell::new(
            &[("placement", "a"), ("seccomp", "default")],
            40_000.0,
            0.03,
        ),
        SynthCell::new(
            &[("placement", "b"), ("seccomp", "default")],
            30_000.0,
            0.03,
        ),
        SynthCell::new(
            &[("placement", "b"), ("seccomp", "unconfined")],
            40_000.0,
            0.03,
        ),
    ];
    let run = run_dir(tmp.path(), "nogap", &cells, 6, 7);
    let text = render_text(&run);
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("placement: a → b") || l.contains("seccomp: default → unconfined"))
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    for r in &rows {
        assert!(r.contains("n/a"), "{r}");
        // Each step's own change still stands, significant here (-25% and
        // +33% against ±3% noise): its p column has no `~`.
        assert!(!r.trim_end().ends_with(')') && !r.contains("~ p"), "{r}");
    }
    assert!(text.contains("no step has a share of it"), "{text}");
}

/// A step whose two cells differ in a fact a split
/// measures (the findings' per-cell values say so) gets the suggestion;
/// with the plan's split, the step is shown in parts instead, each part
/// with its change, interval and share of the step, the placement's own
/// part named "the rest".
#[test]
fn a_step_across_hidden_factors_is_split_or_the_split_is_suggested() {
    let cells = vec![
        SynthCell::new(
            &[
                ("placement", "docker-host"),
                ("seccomp", "default"),
                ("storage", "image"),
            ],
            30_000.0,
            0.01,
        ),
        SynthCell::new(
            &[
                ("placement", "docker-host"),
                ("seccomp", "unconfined"),
                ("storage", "image"),
            ],
            31_000.0,
            0.01,
        ),
        SynthCell::new(
            &[
                ("placement", "docker-host"),
                ("seccomp", "unconfined"),
                ("storage", "host-path"),
            ],
            36_000.0,
            0.01,
        ),
        SynthCell::new(&[("placement", "native")], 38_000.0, 0.01),
    ];
    let ids: Vec<String> = cells.iter().map(|c| c.id()).collect();
    let findings = format!(
        r#"[{{"fact": "content_fs", "values": [["{}", "overlay"], ["{}", "ext4"]], "message": "content_fs differs"}}]"#,
        ids[0], ids[3]
    );
    let build = |split: bool| {
        let tmp = tempfile::tempdir().unwrap();
        let mut p = plan("split", &cells, &[ids[0].clone(), ids[3].clone()]);
        if split {
            p.attribution.splits = vec![tare_analysis::StepSplit {
                step: 1,
                chain: ids.clone(),
            }];
        }
        write_run_dir(tmp.path(), &trials("split", &cells, 6, 3), Some(&p)).unwrap();
        std::fs::write(tmp.path().join("findings.json"), &findings).unwrap();
        render_text(&load_run(tmp.path()).unwrap())
    };
    let plain = build(false);
    assert!(
        plain.contains(
            "step 1 (placement: docker-host → native) also changes content_fs overlay → ext4"
        ) && plain.contains("split = true"),
        "{plain}"
    );
    assert!(!plain.contains("in parts"), "{plain}");
    let split = build(true);
    assert!(!split.contains("also changes content_fs"), "{split}");
    let part = |name: &str| {
        split
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no `{name}` row: {split}"))
            .to_string()
    };
    assert!(
        split.contains("step 1 (placement: docker-host → native) in parts"),
        "{split}"
    );
    // 30k → 31k → 36k → 38k: +3.3%, +16%, +5.6%; shares 1/8, 5/8, 2/8.
    assert!(
        part("seccomp: default → unconfined").contains("+3."),
        "{split}"
    );
    assert!(
        part("storage: image → host-path").contains("+16."),
        "{split}"
    );
    assert!(
        part("the rest (placement: docker-host → native)").contains("+5."),
        "{split}"
    );
}
