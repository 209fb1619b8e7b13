//! The schedule on [`MockExecutor`]: order, records, failures, skips,
//! interrupts and resume, adaptive rounds, deterministic and snapshot-tested.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tare_record::TrialRecord;

use crate::experiment::{ConfigSource, Experiment};
use crate::mock::MockExecutor;
use crate::observer::{Observer, Quiet};
use crate::provenance::Provenance;
use crate::rundir::{RunDir, FACTS, FINDINGS, PLAN};
use crate::schedule::{Outcome, Summary};
use crate::session::{self, Session};

const THREE_CELLS: &str = r#"
name = "mocked"
[target]
kind = "tare-serve"
[factors]
placement = ["native", "lab-nat", "docker-host"]
[load]
duration = "1s"
warmup = "0s"
[trials]
count = 3
seed = 7
cooldown = "0s"
"#;

fn experiment(text: &str) -> Experiment {
    Experiment::parse(
        text,
        Path::new("mocked.toml"),
        &ConfigSource::RelativeTo(".".into()),
    )
    .unwrap()
}

/// A new session in `tmp/run` (a fixed name, so snapshots are stable).
fn begin(tmp: &Path, exp: Experiment, exec: &mut MockExecutor) -> Session {
    let dir = RunDir::create(Some(&tmp.join("run")), tmp).unwrap();
    session::begin(exp, dir, exec, &mut Quiet, &Provenance::default()).unwrap()
}

/// `order cell #trial rps` per record, the run as a person reads it.
fn table(records: &[TrialRecord]) -> String {
    records
        .iter()
        .map(|r| match (&r.result, &r.error) {
            (Some(res), _) => format!(
                "{:>2} {} #{} {:.0}",
                r.order,
                r.cell,
                r.trial,
                res.throughput()
            ),
            (None, Some(e)) => format!("{:>2} {} #{} error: {e}", r.order, r.cell, r.trial),
            _ => format!("{:>2} {} #{} ?", r.order, r.cell, r.trial),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn rounds_interleave_every_cell_in_a_seeded_order() {
    let tmp = tempfile::tempdir().unwrap();
    let mut exec = MockExecutor::new();
    exec.rps.insert("placement=native".into(), 3000.0);
    exec.rps.insert("placement=lab-nat".into(), 2000.0);
    let s = begin(tmp.path(), experiment(THREE_CELLS), &mut exec);
    let summary = s
        .run(&mut exec, &mut Quiet, &AtomicBool::new(false))
        .unwrap();
    assert_eq!(summary.outcome, Outcome::Complete);
    assert_eq!((summary.trials_run, summary.failed), (9, 0));

    let records = s.dir.read_trials(false).unwrap();
    // Round r holds trial r of every cell, once each.
    for (round, chunk) in records.chunks(3).enumerate() {
        let mut cells: Vec<&str> = chunk.iter().map(|r| r.cell.as_str()).collect();
        cells.sort();
        assert_eq!(
            cells,
            [
                "placement=docker-host",
                "placement=lab-nat",
                "placement=native"
            ]
        );
        assert!(chunk.iter().all(|r| r.trial == round as u32 + 1));
    }
    assert_eq!(
        records.iter().map(|r| r.order).collect::<Vec<_>>(),
        (0..9).collect::<Vec<_>>()
    );
    assert!(records
        .iter()
        .all(|r| r.run_id == "run" && r.result.as_ref().is_some_and(|x| !x.hdr.is_empty())));
    insta::assert_snapshot!(table(&records));
    // Preflight (one deployment per cell for the fairness check), then per trial.
    insta::assert_snapshot!(exec.events().join("\n"));
}

#[test]
fn the_plan_records_seed_order_and_chain() {
    let tmp = tempfile::tempdir().unwrap();
    let mut exec = MockExecutor::new();
    let text = format!(
        "{THREE_CELLS}\n[attribution]\nchain = [\"placement=docker-host\", \"placement=native\"]\n\
         [cpus]\nserver = \"1\"\ngenerator = \"0\"\n"
    );
    let s = begin(tmp.path(), experiment(&text), &mut exec);
    let plan: serde_json::Value = s.dir.read_json(PLAN).unwrap();
    insta::assert_json_snapshot!(plan);
}

#[test]
fn a_cell_that_cannot_start_is_recorded_and_the_others_go_on() {
    let tmp = tempfile::tempdir().unwrap();
    let mut exec = MockExecutor::new();
    exec.failing_deploy.push("placement=lab-nat".into());
    let s = begin(tmp.path(), experiment(THREE_CELLS), &mut exec);
    let summary = s
        .run(&mut exec, &mut Quiet, &AtomicBool::new(false))
        .unwrap();
    assert_eq!((summary.trials_run, summary.failed), (9, 3));
    let records = s.dir.read_trials(false).unwrap();
    for r in &records {
        let failed = r.cell == "placement=lab-nat";
        assert_eq!(r.error.is_some(), failed, "{r:?}");
        assert_eq!(r.result.is_some(), !failed, "{r:?}");
    }
    assert!(records
        .iter()
        .filter_map(|r| r.error.as_deref())
        .all(|e| e == "deploy: mock: cannot start"));
}

/// Counts the notes an observer gets.
#[derive(Default)]
struct Notes(Vec<String>);

impl Observer for Notes {
    fn note(&mut self, line: &str) {
        self.0.push(line.to_string());
    }
}

#[test]
fn a_placement_this_machine_cannot_run_is_skipped_with_a_note() {
    let tmp = tempfile::tempdir().unwrap();
    let mut exec = MockExecutor::new();
    exec.unavailable.insert(
        "placement=docker-host".into(),
        "Docker is not reachable".into(),
    );
    let dir = RunDir::create(Some(&tmp.path().join("run")), tmp.path()).unwrap();
    let mut notes = Notes::default();
    let s = session::begin(
        experiment(THREE_CELLS),
        dir,
        &mut exec,
        &mut notes,
        &Provenance::default(),
    )
    .unwrap();
    assert_eq!(
        notes.0,
        ["skipping placement=docker-host: Docker is not reachable"]
    );
    let summary = s
        .run(&mut exec, &mut Quiet, &AtomicBool::new(false))
        .unwrap();
    assert_eq!(summary.trials_run, 6);
    assert!(s
        .dir
        .read_trials(false)
        .unwrap()
        .iter()
        .all(|r| r.cell != "placement=docker-host"));
    assert_eq!(
        s.plan.cells[2].skipped.as_deref(),
        Some("Docker is not reachable")
    );
}

#[test]
fn an_interrupted_run_keeps_finished_trials_and_resume_completes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let flag = Arc::new(AtomicBool::new(false));
    let mut exec = MockExecutor::new();
    // The flag goes up during the 5th measurement: that trial is not finished.
    exec.interrupt_after = Some((5, flag.clone()));
    let s = begin(tmp.path(), experiment(THREE_CELLS), &mut exec);
    let first = s.run(&mut exec, &mut Quiet, &flag).unwrap();
    assert_eq!(first.outcome, Outcome::Interrupted);
    assert_eq!(first.trials_run, 4);
    assert_eq!(s.dir.read_trials(false).unwrap().len(), 4);
    // Torn down: every deploy has its stop.
    let ev = exec.events();
    let count = |p: &str| ev.iter().filter(|e| e.starts_with(p)).count();
    assert_eq!(count("deploy "), count("stop "));

    let resumed = session::resume(&s.dir.path).unwrap();
    let mut exec2 = MockExecutor::new();
    let flag2 = AtomicBool::new(false);
    let second = resumed.run(&mut exec2, &mut Quiet, &flag2).unwrap();
    assert_eq!(second.outcome, Outcome::Complete);
    assert_eq!(second.trials_run, 5);
    // No second preflight: findings.json was already written.
    let ev2 = exec2.events();
    assert!(
        ev2[0].starts_with("deploy ") && ev2[1].starts_with("measure "),
        "{ev2:?}"
    );

    // The same cells and trials, in the same order, as a run never interrupted.
    let tmp2 = tempfile::tempdir().unwrap();
    let mut exec3 = MockExecutor::new();
    let whole = begin(tmp2.path(), experiment(THREE_CELLS), &mut exec3);
    whole
        .run(&mut exec3, &mut Quiet, &AtomicBool::new(false))
        .unwrap();
    let key = |rs: Vec<TrialRecord>| {
        rs.into_iter()
            .map(|r| (r.order, r.cell, r.trial))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        key(s.dir.read_trials(false).unwrap()),
        key(whole.dir.read_trials(false).unwrap())
    );
    assert!(flag.load(Ordering::SeqCst));
}

#[test]
fn a_scattered_cell_gets_adaptive_trials_up_to_the_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let text = THREE_CELLS.replace("count = 3", "count = 3\nmax = 6\nmax_rsd = 0.05");
    let mut exec = MockExecutor::new();
    // ±20%: far above 5% RSD, never settles, so it stops at max.
    exec.jitter
        .insert("placement=lab-nat".into(), vec![0.0, 0.2, -0.2]);
    // Settles after the fixed trials: 1% spread.
    exec.jitter
        .insert("placement=native".into(), vec![0.0, 0.01, -0.01]);
    let s = begin(tmp.path(), experiment(&text), &mut exec);
    let summary = s
        .run(&mut exec, &mut Quiet, &AtomicBool::new(false))
        .unwrap();
    assert_eq!(summary.trials_run, 9 + 3);
    let records = s.dir.read_trials(false).unwrap();
    let n = |cell: &str| records.iter().filter(|r| r.cell == cell).count();
    assert_eq!(n("placement=lab-nat"), 6);
    assert_eq!(n("placement=native"), 3);
    assert_eq!(n("placement=docker-host"), 3);
    insta::assert_snapshot!(table(&records));
}

#[test]
fn kept_deployments_are_started_once_and_stopped_at_the_end() {
    let tmp = tempfile::tempdir().unwrap();
    let text = THREE_CELLS.replace(
        "cooldown = \"0s\"",
        "cooldown = \"0s\"\ndeployment = \"kept\"",
    );
    let mut exec = MockExecutor::new();
    let s = begin(tmp.path(), experiment(&text), &mut exec);
    s.run(&mut exec, &mut Quiet, &AtomicBool::new(false))
        .unwrap();
    let ev = exec.events();
    assert_eq!(ev.iter().filter(|e| e.starts_with("deploy ")).count(), 3);
    assert_eq!(ev.iter().filter(|e| e.starts_with("measure ")).count(), 9);
    assert!(
        ev[ev.len() - 3..].iter().all(|e| e.starts_with("stop ")),
        "{ev:?}"
    );
}

/// A server killed during a trial fails that trial with the reason and
/// the moment (from the timeline), never measures it; a kept deployment
/// that died is replaced before the next trial, and the other cells and
/// trials are kept (docs/experiments.md, "Failed trials").
#[test]
fn a_server_killed_mid_trial_fails_that_trial_and_a_kept_one_is_redeployed() {
    for policy in ["kept", "per-trial"] {
        let tmp = tempfile::tempdir().unwrap();
        let text = THREE_CELLS
            .replace("duration = \"1s\"", "duration = \"3s\"")
            .replace(
                "cooldown = \"0s\"",
                &format!("cooldown = \"0s\"\ndeployment = \"{policy}\""),
            );
        let mut exec = MockExecutor::new();
        exec.dies_during.insert("placement=native".into(), 2);
        let s = begin(tmp.path(), experiment(&text), &mut exec);
        let summary = s
            .run(&mut exec, &mut Quiet, &AtomicBool::new(false))
            .unwrap();
        assert_eq!(summary.failed, 1, "{policy}");
        let records = s.dir.read_trials(false).unwrap();
        let failed: Vec<_> = records.iter().filter(|r| r.error.is_some()).collect();
        assert_eq!(failed.len(), 1);
        assert_eq!(
            (failed[0].cell.as_str(), failed[0].trial),
            ("placement=native", 2)
        );
        assert_eq!(
            failed[0].error.as_deref(),
            Some("server exited with signal 9 at 1.0 s")
        );
        assert!(failed[0].result.is_none(), "a failed trial has no result");
        assert_eq!(records.iter().filter(|r| r.usable().is_some()).count(), 8);
        let deploys = exec
            .events()
            .iter()
            .filter(|e| *e == "deploy placement=native")
            .count();
        // Kept: preflight's, then one after it died; per trial: preflight + 3.
        assert_eq!(deploys, if policy == "kept" { 2 } else { 4 }, "{policy}");
    }
}

/// A kept deployment is prepared again before every trial's warm-up
/// (redis: FLUSHALL between runs, as seed 002 did), and each record says so.
#[test]
fn every_trial_is_prepared_before_its_warm_up_and_the_record_says_what_was_done() {
    let tmp = tempfile::tempdir().unwrap();
    let text = THREE_CELLS
        .replace(
            "cooldown = \"0s\"",
            "cooldown = \"0s\"\ndeployment = \"kept\"",
        )
        .replace("warmup = \"0s\"", "warmup = \"1ms\"");
    let mut exec = MockExecutor::new();
    exec.prepared = Some("FLUSHALL".into());
    let s = begin(tmp.path(), experiment(&text), &mut exec);
    s.run(&mut exec, &mut Quiet, &AtomicBool::new(false))
        .unwrap();
    let ev = exec.events();
    assert_eq!(ev.iter().filter(|e| e.starts_with("prepare ")).count(), 9);
    for (i, e) in ev.iter().enumerate() {
        if let Some(cell) = e.strip_prefix("warmup ") {
            assert_eq!(ev[i - 1], format!("prepare {cell}"), "{ev:?}");
        }
    }
    let records = s.dir.read_trials(false).unwrap();
    assert_eq!(records.len(), 9);
    assert!(records
        .iter()
        .all(|r| r.prepared.as_deref() == Some("FLUSHALL")));
}

#[test]
fn differing_facts_are_findings_written_before_any_load() {
    let tmp = tempfile::tempdir().unwrap();
    let mut exec = MockExecutor::new();
    exec.binary
        .insert("placement=docker-host".into(), "other".into());
    let s = begin(tmp.path(), experiment(THREE_CELLS), &mut exec);
    s.run(&mut exec, &mut Quiet, &AtomicBool::new(false))
        .unwrap();
    let findings: serde_json::Value = s.dir.read_json(FINDINGS).unwrap();
    assert_eq!(findings[0]["fact"], "binary");
    // Every deployed cell's facts are kept in the record, by cell id.
    let facts: serde_json::Value = s.dir.read_json(FACTS).unwrap();
    assert_eq!(facts.as_object().map(|m| m.len()), Some(3), "{facts}");
    assert!(facts["placement=docker-host"].is_object(), "{facts}");
    let ev = exec.events();
    let first_load = ev.iter().position(|e| e.starts_with("measure")).unwrap();
    assert_eq!(
        ev[..first_load]
            .iter()
            .filter(|e| e.starts_with("deploy"))
            .count(),
        4
    );
}

/// A chain over the three cells, stopping at `precision` (plus `extra`
/// trial keys).
fn precise(precision: &str, extra: &str) -> Experiment {
    let text = THREE_CELLS.replace(
        "count = 3",
        &format!("count = 3\nprecision = \"{precision}\"\n{extra}"),
    ) + "[attribution]\nchain = [\"placement=docker-host\", \"placement=lab-nat\", \"placement=native\"]\n";
    experiment(&text)
}

/// Begins `exp` on `exec` and runs it to its end: the session (its run
/// directory), the notes it printed and its summary.
fn run_to_end(tmp: &Path, exp: Experiment, exec: &mut MockExecutor) -> (Session, Notes, Summary) {
    let s = begin(tmp, exp, exec);
    let mut notes = Notes::default();
    let summary = s.run(exec, &mut notes, &AtomicBool::new(false)).unwrap();
    (s, notes, summary)
}

/// Trials per cell in the run directory.
fn per_cell(s: &Session) -> Vec<usize> {
    let records = s.dir.read_trials(false).unwrap();
    [
        "placement=native",
        "placement=lab-nat",
        "placement=docker-host",
    ]
    .iter()
    .map(|c| records.iter().filter(|r| &r.cell == c).count())
    .collect()
}

/// docker-host 1000, lab-nat 2000, native 3000 req/s: two scattered
/// trials in each cell, then steady ones.
fn scattered_then_steady() -> MockExecutor {
    let mut exec = MockExecutor::new();
    exec.rps.insert("placement=native".into(), 3000.0);
    exec.rps.insert("placement=lab-nat".into(), 2000.0);
    for (cell, j) in [("native", 0.08), ("lab-nat", -0.08), ("docker-host", 0.05)] {
        let mut v = vec![j, -j];
        v.extend([0.0; 40]);
        exec.jitter.insert(format!("placement={cell}"), v);
    }
    exec
}

/// Two scattered trials in each cell, then steady results: the first
/// rounds cannot resolve the steps at ±2%, later ones can. Rounds are
/// whole (every cell the same count), more than the fixed three, and the
/// run stops by itself, saying so.
#[test]
fn rounds_continue_until_every_step_reaches_the_precision() {
    let tmp = tempfile::tempdir().unwrap();
    let mut exec = scattered_then_steady();
    let (s, notes, summary) = run_to_end(tmp.path(), precise("2%", "max = 40"), &mut exec);
    assert_eq!(summary.outcome, Outcome::Complete);
    let n = per_cell(&s);
    assert!(n.iter().all(|&k| k == n[0]), "rounds are whole: {n:?}");
    assert!(n[0] > 3 && n[0] < 40, "{n:?} {:?}", notes.0);
    let last = notes.0.last().unwrap();
    assert!(last.starts_with("precision reached after"), "{:?}", notes.0);
    assert!(
        notes.0.iter().any(|l| l.contains("above the ±2.0% target")),
        "{:?}",
        notes.0
    );
}

/// `precision = "N points"`: the same rule on each step's share of the
/// chain's gap (docker-host 1000 → lab-nat 2000 → native 3000: each step
/// half of it), and the notes say points.
#[test]
fn a_precision_in_points_is_met_on_the_shares_of_the_gap() {
    let tmp = tempfile::tempdir().unwrap();
    let mut exec = scattered_then_steady();
    let (s, notes, summary) = run_to_end(tmp.path(), precise("4 points", "max = 40"), &mut exec);
    assert_eq!(summary.outcome, Outcome::Complete);
    let n = per_cell(&s);
    assert!(
        n[0] > 3 && n[0] < 40 && n.iter().all(|&k| k == n[0]),
        "{n:?} {:?}",
        notes.0
    );
    let last = notes.0.last().unwrap();
    assert!(
        last.starts_with("precision reached after") && last.ends_with("target ±4.0 points"),
        "{:?}",
        notes.0
    );
    assert!(
        notes
            .0
            .iter()
            .any(|l| l.contains("above the ±4.0 points target")),
        "{:?}",
        notes.0
    );
    let run = tare_analysis::load_run(&s.dir.path).unwrap();
    let p = tare_analysis::precision(&run);
    assert!(p.meets(0.04, tare_analysis::PrecisionUnit::Share), "{p:?}");
}

/// A precision the cells can never reach: `max` ends the run.
#[test]
fn an_unreachable_precision_stops_at_max_rounds() {
    let tmp = tempfile::tempdir().unwrap();
    let mut exec = MockExecutor::new();
    exec.jitter
        .insert("placement=lab-nat".into(), vec![0.0, 0.3, -0.3]);
    let (s, _, summary) = run_to_end(tmp.path(), precise("1%", "max = 6"), &mut exec);
    assert_eq!(summary.trials_run, 18);
    assert_eq!(per_cell(&s), vec![6, 6, 6]);
}

/// `focus = "chain"`: the rounds a precision adds run only the cells the
/// chain reads; a cell off the chain keeps its `count` trials.
#[test]
fn focused_rounds_run_only_the_chains_cells() {
    let text = THREE_CELLS.replace(
        "count = 3",
        "count = 3\nprecision = \"1%\"\nmax = 6\nfocus = \"chain\"",
    ) + "[attribution]\nchain = [\"placement=docker-host\", \"placement=native\"]\n";
    let tmp = tempfile::tempdir().unwrap();
    let mut exec = MockExecutor::new();
    exec.jitter
        .insert("placement=native".into(), vec![0.0, 0.3, -0.3]);
    let (s, notes, summary) = run_to_end(tmp.path(), experiment(&text), &mut exec);
    assert_eq!(summary.trials_run, 6 + 3 + 6);
    // native, lab-nat (off the chain), docker-host
    assert_eq!(per_cell(&s), vec![6, 3, 6]);
    assert!(
        notes
            .0
            .iter()
            .any(|l| l.ends_with("one more round of the 2 cells the attribution reads")),
        "{:?}",
        notes.0
    );
}

/// No round starts that would end after the budget.
#[test]
fn the_budget_ends_a_run_that_has_not_reached_its_precision() {
    let tmp = tempfile::tempdir().unwrap();
    let mut exec = MockExecutor::new();
    exec.jitter
        .insert("placement=lab-nat".into(), vec![0.0, 0.3, -0.3]);
    let (s, notes, _) = run_to_end(tmp.path(), precise("1%", "budget = \"1ms\""), &mut exec);
    assert_eq!(per_cell(&s), vec![3, 3, 3]);
    assert!(
        notes.0.iter().any(|l| l.starts_with("budget of")),
        "{:?}",
        notes.0
    );
}

/// The machine drifting ±15% from round to round, shared by the cells of a
/// round, with each cell's own noise under 1%: compared within rounds
/// (paired), the steps are precise at ±3% after the fixed three rounds,
/// so no round is added for the drift.
#[test]
fn drift_shared_by_a_round_does_not_keep_the_run_going() {
    let tmp = tempfile::tempdir().unwrap();
    let mut exec = MockExecutor::new();
    exec.rps.insert("placement=native".into(), 3000.0);
    exec.rps.insert("placement=lab-nat".into(), 2000.0);
    exec.drift = vec![0.0, 0.15, -0.15, 0.1, -0.1];
    for (cell, j) in [
        ("native", 0.004),
        ("lab-nat", -0.003),
        ("docker-host", 0.002),
    ] {
        exec.jitter
            .insert(format!("placement={cell}"), vec![j, -j, 0.0]);
    }
    let (s, notes, _) = run_to_end(tmp.path(), precise("3%", "max = 10"), &mut exec);
    assert_eq!(per_cell(&s), vec![3, 3, 3], "{:?}", notes.0);
    assert!(
        notes
            .0
            .iter()
            .any(|l| l.starts_with("precision reached after 3 rounds")),
        "{:?}",
        notes.0
    );
}

/// A monitor record as the real executor leaves it: 4 CPU-seconds in the
/// window, `steal_s` of them stolen; its disturbance decided by the monitor.
fn monitor_with_steal(steal_s: f64) -> serde_json::Value {
    let mut r = tare_monitor::MonitorRecord::default();
    let c = &mut r.summary.cpu_s;
    c.machine_steal = steal_s;
    c.machine_busy = 3.0;
    c.machine_idle = 1.0;
    r.disturbance = Some(r.disturbance());
    r.to_json()
}

/// A trial the monitor calls disturbed is flagged in its
/// record with the monitor's reasons and kept; clean and unmonitored
/// trials carry no flag.
#[test]
fn a_disturbed_trial_is_flagged_and_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let mut exec = MockExecutor::new();
    // native: trial 2 lost 6% of the machine to steal, 1 and 3 lost 1%.
    exec.monitor.insert(
        "placement=native".into(),
        vec![
            monitor_with_steal(0.04),
            monitor_with_steal(0.24),
            monitor_with_steal(0.04),
        ],
    );
    // lab-nat: only its first trial is monitored, and it was clean.
    exec.monitor
        .insert("placement=lab-nat".into(), vec![monitor_with_steal(0.0)]);
    let s = begin(tmp.path(), experiment(THREE_CELLS), &mut exec);
    let summary = s
        .run(&mut exec, &mut Quiet, &AtomicBool::new(false))
        .unwrap();
    assert_eq!((summary.trials_run, summary.failed), (9, 0));
    let records = s.dir.read_trials(false).unwrap();
    assert_eq!(records.len(), 9, "disturbed trials are kept");
    let flagged: Vec<(&str, u32, &[String])> = records
        .iter()
        .filter_map(|r| Some((r.cell.as_str(), r.trial, r.disturbed.as_deref()?)))
        .collect();
    assert_eq!(
        flagged,
        [(
            "placement=native",
            2,
            &["steal 6.0% of CPU".to_string()][..]
        )]
    );
    let native2 = records
        .iter()
        .find(|r| r.cell == "placement=native" && r.trial == 2)
        .unwrap();
    assert!(native2.result.is_some() && native2.monitor.is_some());
    let monitored = records.iter().filter(|r| r.monitor.is_some()).count();
    assert_eq!(monitored, 4);
}

/// `[trials] exclude_disturbed = true` reaches the plan, and analysis of
/// the run directory then leaves out exactly the flagged trials.
#[test]
fn exclude_disturbed_drops_exactly_the_flagged_trials_from_analysis() {
    let tmp = tempfile::tempdir().unwrap();
    let mut exec = MockExecutor::new();
    exec.monitor.insert(
        "placement=docker-host".into(),
        vec![monitor_with_steal(0.2), monitor_with_steal(0.0)],
    );
    exec.monitor
        .insert("placement=native".into(), vec![monitor_with_steal(0.3)]);
    let text = THREE_CELLS.replace("count = 3", "count = 3\nexclude_disturbed = true");
    let s = begin(tmp.path(), experiment(&text), &mut exec);
    s.run(&mut exec, &mut Quiet, &AtomicBool::new(false))
        .unwrap();
    let plan: serde_json::Value = s.dir.read_json(PLAN).unwrap();
    assert_eq!(plan["trials"]["exclude_disturbed"], true);
    let run = tare_analysis::load_run(&s.dir.path).unwrap();
    let mut dropped: Vec<(String, u32)> = run
        .excluded
        .iter()
        .map(|t| (t.cell.clone(), t.trial))
        .collect();
    dropped.sort();
    assert_eq!(
        dropped,
        [
            ("placement=docker-host".to_string(), 1),
            ("placement=native".to_string(), 1)
        ]
    );
    assert_eq!(run.trials.len(), 7);
    assert!(run.trials.iter().all(|t| t.disturbed.is_none()));
    let n: Vec<usize> = run.cells().iter().map(|c| c.trials).collect();
    assert_eq!(n.iter().sum::<usize>(), 7, "{n:?}");
}
