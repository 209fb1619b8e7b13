//! Reading run directories: what the runner writes, and what an interrupted
//! or hostile run leaves behind.

use std::fs;

use tare_analysis::synthetic::{plan, seed000_cells, trials, write_run_dir, SynthCell};
use tare_analysis::{load_run, AnalysisError};

fn quick_cells() -> Vec<SynthCell> {
    vec![
        SynthCell::new(&[("placement", "native")], 40_000.0, 0.01),
        SynthCell::new(&[("placement", "docker-host")], 33_000.0, 0.01).failing(2),
    ]
}

#[test]
fn a_written_run_reads_back_with_its_plan() {
    let dir = tempfile::tempdir().unwrap();
    let cells = quick_cells();
    let records = trials("r1", &cells, 3, 7);
    let chain: Vec<String> = cells.iter().map(|c| c.id()).collect();
    write_run_dir(dir.path(), &records, Some(&plan("r1", &cells, &chain))).unwrap();

    let run = load_run(dir.path()).unwrap();
    assert_eq!(run.run_id, "r1");
    assert!(run.warnings.is_empty(), "{:?}", run.warnings);
    assert_eq!(run.chain().unwrap(), chain.as_slice());
    let stats = run.cells();
    assert_eq!(stats.len(), 2);
    assert_eq!(stats[0].cell, "placement=native");
    assert_eq!((stats[1].trials, stats[1].ok()), (3, 2));
    assert_eq!(stats[1].failures.len(), 1);
    // 21.2 µs of generator CPU per request, as the synthetic engine spends.
    let cpu = stats[0].generator_cpu_us_per_request.unwrap();
    assert!((cpu - 21.2).abs() < 0.01, "{cpu}");
    // Little's law: 100 connections at ~40k req/s wait ~2.5 ms.
    assert!(
        (2_000.0..3_000.0).contains(&stats[0].p50_us.median),
        "{:?}",
        stats[0].p50_us
    );
}

#[test]
fn a_truncated_last_line_is_skipped_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let records = trials("r2", &quick_cells(), 3, 7);
    write_run_dir(dir.path(), &records, None).unwrap();
    let path = dir.path().join("trials.jsonl");
    let text = fs::read_to_string(&path).unwrap();
    // Cut the last record in half, as a killed runner would leave it.
    fs::write(&path, &text[..text.len() - 300]).unwrap();

    let run = load_run(dir.path()).unwrap();
    assert_eq!(run.trials.len(), records.len() - 1);
    assert_eq!(run.warnings.len(), 1);
    assert!(run.warnings[0].contains("incomplete"), "{:?}", run.warnings);
    assert_eq!(run.run_id, "r2");
}

/// Regression: one torn line in the middle of trials.jsonl made `tare
/// report` refuse the whole run. The good lines are kept; the warning
/// names the torn one.
#[test]
fn a_torn_line_inside_the_file_is_skipped_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let records = trials("r3", &quick_cells(), 2, 7);
    write_run_dir(dir.path(), &records, None).unwrap();
    let path = dir.path().join("trials.jsonl");
    let mut lines: Vec<String> = fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    lines[1] = lines[1][..lines[1].len() / 2].to_string();
    fs::write(&path, lines.join("\n") + "\n").unwrap();

    let run = load_run(dir.path()).unwrap();
    assert_eq!(run.trials.len(), records.len() - 1);
    assert_eq!(run.warnings.len(), 1, "{:?}", run.warnings);
    let w = &run.warnings[0];
    assert!(w.contains("line 2 is torn") && !w.contains('\n'), "{w}");
}

#[test]
fn missing_dir_and_missing_trials_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("nope");
    let msg = load_run(&gone).unwrap_err().to_string();
    assert_eq!(
        msg,
        format!("run directory {} does not exist", gone.display())
    );
    let msg = load_run(dir.path()).unwrap_err().to_string();
    assert!(msg.contains("no trials.jsonl"), "{msg}");
    let file = dir.path().join("file");
    fs::write(&file, "x").unwrap();
    assert!(matches!(load_run(&file), Err(AnalysisError::NotADir(_))));
}

#[test]
fn garbage_side_files_are_warnings_not_errors() {
    let dir = tempfile::tempdir().unwrap();
    write_run_dir(dir.path(), &trials("r4", &quick_cells(), 2, 7), None).unwrap();
    fs::write(dir.path().join("plan.json"), "{not json").unwrap();
    fs::write(dir.path().join("findings.json"), "7").unwrap();
    fs::write(
        dir.path().join("provenance.json"),
        r#"{"tare_version": "0.1.0", "kernel": "6.1.0"}"#,
    )
    .unwrap();
    let run = load_run(dir.path()).unwrap();
    assert_eq!(run.warnings.len(), 2, "{:?}", run.warnings);
    assert!(run.plan.is_none() && run.findings.is_none());
    assert!(run.provenance.is_some());
    assert_eq!(run.cells().len(), 2);
}

#[test]
fn a_trial_recorded_twice_keeps_the_later_record() {
    let dir = tempfile::tempdir().unwrap();
    let mut records = trials("r5", &seed000_cells(0.01), 2, 7);
    let mut again = records[0].clone();
    again.result.as_mut().unwrap().rps = Some(1.0);
    records.push(again);
    write_run_dir(dir.path(), &records, None).unwrap();
    let run = load_run(dir.path()).unwrap();
    assert_eq!(run.trials.len(), records.len() - 1);
    assert_eq!(run.warnings.len(), 1);
    assert!(run
        .trials
        .iter()
        .any(|t| t.result.as_ref().and_then(|r| r.rps) == Some(1.0)));
}

#[test]
fn empty_file_is_a_run_with_no_cells() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("trials.jsonl"), "").unwrap();
    let run = load_run(dir.path()).unwrap();
    assert!(run.cells().is_empty());
    assert!(!run.run_id.is_empty(), "falls back to the directory name");
}

#[test]
fn cells_whose_every_trial_failed_are_listed_as_failed() {
    let cells = vec![
        SynthCell::new(&[("placement", "native")], 40_000.0, 0.01),
        SynthCell::new(&[("placement", "docker-bridge")], 30_000.0, 0.01)
            .failing(1)
            .failing(2),
    ];
    let run = tare_analysis::Run::from_trials(trials("r6", &cells, 2, 1));
    assert_eq!(run.cells().len(), 1);
    let failed = run.failed_cells();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].cell, "placement=docker-bridge");
    assert_eq!(failed[0].trials, 2);
    assert!(failed[0].error.contains("ready"), "{:?}", failed[0]);
}
