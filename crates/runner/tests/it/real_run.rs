//! A small real experiment end to end: nginx natively and behind tare's
//! namespace NAT, deployed by tare-deploy, loaded by tare-http, recorded in a
//! run directory that analysis then reads.

use crate::support;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use tare_record::Latency;
use tare_runner::observer::Quiet;
use tare_runner::provenance::Provenance;
use tare_runner::real::RealExecutor;
use tare_runner::{session, Executor, Experiment, Outcome};

const EXPERIMENT: &str = r#"
name = "real"
[target]
kind = "nginx"
[factors]
placement = ["native", "lab-nat"]
[load]
threads = 1
connections = 8
duration = "1s"
warmup = "200ms"
[trials]
count = 2
cooldown = "0s"
deployment = "kept"
[attribution]
chain = ["placement=lab-nat", "placement=native"]
"#;

#[test]
fn a_real_experiment_leaves_a_complete_run_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = support::experiment(tmp.path(), "real.toml", EXPERIMENT);
    let (dir, flag, mut exec) = support::real(&exp, tmp.path(), "real-run");
    let lab = exec.can_run(&exp.cells[1]);
    let s = session::begin(exp, dir, &mut exec, &mut Quiet, &Provenance::collect()).unwrap();
    let summary = s.run(&mut exec, &mut Quiet, &flag).unwrap();
    assert_eq!(summary.outcome, Outcome::Complete);
    let cells = if lab.is_ok() { 2 } else { 1 };
    assert_eq!(
        (summary.trials_run, summary.failed),
        (2 * cells, 0),
        "{summary:?}"
    );

    let d = &s.dir;
    assert_eq!(
        std::fs::read_to_string(d.file("experiment.toml")).unwrap(),
        EXPERIMENT
    );
    let prov: serde_json::Value = d.read_json("provenance.json").unwrap();
    assert!(
        prov["kernel"].is_string() && prov["cpu_count"].as_u64() >= Some(1),
        "{prov}"
    );
    assert!(
        prov["server_versions"]["nginx"].is_string(),
        "nginx ran, so its version is known: {prov}"
    );
    let plan: serde_json::Value = d.read_json("plan.json").unwrap();
    assert_eq!(plan["rounds"].as_array().unwrap().len(), 2);
    let findings: serde_json::Value = d.read_json("findings.json").unwrap();
    assert!(findings.is_array());

    for r in d.read_trials(false).unwrap() {
        let res = r.result.expect("every trial measured");
        assert!(
            res.requests > 0 && res.errors.total() == 0,
            "{:?}",
            res.errors
        );
        assert_eq!(Latency::decode(&res.hdr).unwrap().count(), res.requests);
        assert_eq!(r.run_id, "tare-test-real-run");
        // Every measured trial is monitored: CPU per request by component
        // and a bottleneck verdict travel with the result.
        let m = tare_monitor::MonitorRecord::from_json(r.monitor.as_ref().expect("monitored"))
            .expect("a monitor record");
        assert!(
            m.verdict.is_some() && m.per_request.is_some(),
            "{:?}",
            m.notes
        );
    }
    let run = tare_analysis::load_run(&d.path).unwrap();
    assert_eq!(run.cells().len(), cells);
    if lab.is_ok() {
        let waterfall = tare_analysis::attribution(&run, run.chain().unwrap()).unwrap();
        assert!(waterfall.gap.is_finite());
    }
}

/// Open-loop load settings reach the engine: every trial is paced at the
/// experiment's rate, ramped, and records its schedule.
#[test]
fn open_loop_settings_reach_the_engine() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("open.toml");
    std::fs::write(
        &path,
        r#"
[target]
kind = "nginx"
[load]
threads = 1
connections = 8
duration = "1s"
warmup = "100ms"
rate = 1500
arrivals = "poisson"
ramp = "500ms"
[trials]
count = 2
cooldown = "0s"
deployment = "kept"
"#,
    )
    .unwrap();
    let exp = Experiment::load(&path).unwrap();
    assert_eq!(exp.load.shared.rate, Some(1500.0));
    let (dir, flag, mut exec) = support::real(&exp, tmp.path(), "open-loop");
    let s = session::begin(exp, dir, &mut exec, &mut Quiet, &Provenance::collect()).unwrap();
    let summary = s.run(&mut exec, &mut Quiet, &flag).unwrap();
    let errors: Vec<String> = s
        .dir
        .read_trials(false)
        .unwrap()
        .into_iter()
        .filter_map(|r| r.error)
        .collect();
    assert_eq!(
        (summary.trials_run, summary.failed),
        (2, 0),
        "{summary:?} {errors:?}"
    );
    for r in s.dir.read_trials(false).unwrap() {
        let res = r.result.expect("measured");
        let sched = res
            .schedule
            .expect("an open-loop trial records its schedule");
        assert_eq!(sched.target_rate, Some(1500.0));
        assert_eq!(sched.arrivals, "poisson");
        assert_eq!(sched.ramp_s, 0.5);
        assert!(sched.latency_uncorrected_us.is_some());
        let rps = res.rps.unwrap();
        assert!((rps - 1500.0).abs() < 1500.0 * 0.1, "{rps}");
    }
}

/// Runs `toml` (kept deployments) and returns each trial's result.
fn run_experiment(toml: &str, name: &str) -> Vec<tare_record::LoadResult> {
    let tmp = tempfile::tempdir().unwrap();
    let exp = support::experiment(tmp.path(), &format!("{name}.toml"), toml);
    let (dir, flag, mut exec) = support::real(&exp, tmp.path(), name);
    let s = session::begin(exp, dir, &mut exec, &mut Quiet, &Provenance::collect()).unwrap();
    let summary = s.run(&mut exec, &mut Quiet, &flag).unwrap();
    let trials = s.dir.read_trials(false).unwrap();
    let errors: Vec<String> = trials.iter().filter_map(|r| r.error.clone()).collect();
    assert_eq!(summary.failed, 0, "{summary:?} {errors:?}");
    trials
        .into_iter()
        .map(|r| r.result.expect("measured"))
        .collect()
}

/// `engine = "pg"` takes the same open-loop keys: every trial is paced at
/// the rate after a ramp, and records its schedule; the warm-up stays a
/// closed loop (a ramp longer than the warm-up would be refused otherwise).
#[test]
fn pg_open_loop_settings_reach_the_engine() {
    let results = run_experiment(
        r#"
[target]
kind = "postgres"
[load]
threads = 2
connections = 4
duration = "1s"
warmup = "200ms"
rate = 500
arrivals = "constant"
ramp = "500ms"
[load.pg]
script = "select 1;"
[trials]
count = 2
cooldown = "0s"
deployment = "kept"
"#,
        "pg-open",
    );
    assert_eq!(results.len(), 2);
    for res in results {
        assert_eq!(res.engine, "pg");
        let sched = res
            .schedule
            .expect("an open-loop trial records its schedule");
        assert_eq!(sched.target_rate, Some(500.0));
        assert_eq!(sched.arrivals, "constant");
        assert_eq!(sched.ramp_s, 0.5);
        assert_eq!(sched.ramp_timeline.len(), 1);
        // A handful may miss the window under outside load: counted, never lost.
        assert!(sched.unsent <= 10, "{} unsent", sched.unsent);
        let tps = res.tps.unwrap();
        assert!((tps - 500.0).abs() <= 25.0, "{tps}");
    }
}

/// `slo` with `engine = "pg"`: the trial searches the rate and records the
/// confirming run at the answer, below the closed-loop capacity that 4
/// clients x 5 ms allow (~800/s).
#[test]
fn pg_slo_trial_records_the_found_rate() {
    let results = run_experiment(
        r#"
[target]
kind = "postgres"
[load]
threads = 2
connections = 4
duration = "600ms"
warmup = "0s"
slo = "p99<30ms"
[load.pg]
script = "select pg_sleep(0.005);"
[trials]
count = 1
cooldown = "0s"
"#,
        "pg-slo",
    );
    let res = &results[0];
    let rate = res
        .schedule
        .as_ref()
        .and_then(|s| s.target_rate)
        .expect("the trial is the run at the rate found");
    assert!((200.0..=900.0).contains(&rate), "{rate}");
    assert!(res.latency_us.p99 < 30_000.0, "{}", res.latency_us.p99);
}

#[test]
fn open_loop_settings_are_validated() {
    let tmp = tempfile::tempdir().unwrap();
    for (body, needle) in [
        ("rate = -5", "load.rate"),
        ("rate = 100\narrivals = \"bursty\"", "load.arrivals"),
        ("slo = \"p99<fast\"", "load.slo"),
        ("rate = 100\nslo = \"p99<10ms\"", "either a rate or an slo"),
    ] {
        let path = tmp.path().join("bad.toml");
        std::fs::write(
            &path,
            format!("[target]\nkind = \"tare-serve\"\n[load]\n{body}\n"),
        )
        .unwrap();
        let err = Experiment::load(&path).unwrap_err().to_string();
        assert!(err.contains(needle), "{body}: {err}");
        assert!(err.starts_with(&path.display().to_string()), "{err}");
    }
    // pg measures after its ramp, which may not outlast the measured period.
    let path = tmp.path().join("pg.toml");
    std::fs::write(
        &path,
        "[target]\nkind = \"postgres\"\n[load]\nduration = \"1s\"\nramp = \"2s\"\n",
    )
    .unwrap();
    let err = Experiment::load(&path).unwrap_err().to_string();
    assert!(err.contains("load.ramp") && err.contains("longer"), "{err}");
    for body in ["rate = 100\nramp = \"1s\"", "slo = \"p99<5ms,errors<1%\""] {
        std::fs::write(
            &path,
            format!("[target]\nkind = \"postgres\"\n[load]\nduration = \"1s\"\n{body}\n"),
        )
        .unwrap();
        Experiment::load(&path).unwrap_or_else(|e| panic!("{body}: {e}"));
    }
}

/// `[cpus] server` reaches the deployment: the server runs on exactly the
/// CPUs asked for, as its own facts (from /proc) say.
#[test]
fn the_server_runs_on_the_cpus_the_experiment_gives_it() {
    let allowed = tare_engine::cpu::CpuList::allowed().unwrap();
    let last = allowed.cpus()[allowed.cpus().len() - 1];
    let toml = format!(
        "[target]\nkind = \"nginx\"\n[load]\nduration = \"1s\"\n[cpus]\nserver = \"{last}\"\ngenerator = \"none\"\n"
    );
    let tmp = tempfile::tempdir().unwrap();
    let exp = support::experiment(tmp.path(), "cpus.toml", &toml);
    let mut exec = RealExecutor::new(
        &exp,
        &tmp.path().join("r-cpus"),
        Arc::new(AtomicBool::new(false)),
    );
    let cell = exec.deploy(&exp.cells[0]).unwrap();
    let facts = cell.facts();
    cell.stop().unwrap();
    assert_eq!(facts["cpus_allowed"], last.to_string(), "{facts}");
    assert_eq!(facts["cpus_visible"], 1, "{facts}");
}

/// `[monitor] profile = false`: every trial is still monitored (CPU per
/// request, the verdict), without a profile, and its record says why in
/// the one line the report prints (docs/profiles.md).
#[test]
fn a_profile_turned_off_leaves_one_note_and_the_rest_measured() {
    let toml = r#"
name = "noprofile"
[target]
kind = "nginx"
[factors]
placement = ["native"]
[load]
threads = 1
connections = 4
duration = "1s"
warmup = "200ms"
[trials]
count = 1
cooldown = "0s"
[monitor]
profile = false
"#;
    let tmp = tempfile::tempdir().unwrap();
    let exp = support::experiment(tmp.path(), "noprofile.toml", toml);
    assert_eq!(exp.monitor.profile_hz, 0);
    let (dir, flag, mut exec) = support::real(&exp, tmp.path(), "noprofile");
    let s = session::begin(exp, dir, &mut exec, &mut Quiet, &Provenance::collect()).unwrap();
    let summary = s.run(&mut exec, &mut Quiet, &flag).unwrap();
    assert_eq!(summary.failed, 0, "{summary:?}");
    let trials = s.dir.read_trials(false).unwrap();
    assert_eq!(trials.len(), 1);
    let m = tare_monitor::MonitorRecord::from_json(trials[0].monitor.as_ref().expect("monitored"))
        .unwrap();
    assert!(m.profile.is_none(), "{:?}", m.profile);
    assert!(
        m.verdict.is_some() && m.per_request.is_some(),
        "{:?}",
        m.notes
    );
    let why: Vec<&String> = m
        .notes
        .iter()
        .filter(|n| n.starts_with("no profile"))
        .collect();
    assert_eq!(
        why,
        ["no profile: turned off by the experiment ([monitor] profile = false)"],
        "{:?}",
        m.notes
    );
}
