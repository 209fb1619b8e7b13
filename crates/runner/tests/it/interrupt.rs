//! Real experiments end to end (nginx started by tare-deploy, loaded by
//! tare-http), interrupted with SIGINT and with SIGKILL, then resumed.
//!
//! The run to interrupt must be another process: this test binary runs
//! itself (`child_process`, ignored unless called so) as the runner, with
//! the real Ctrl-C handler installed, and the test signals that process.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tare_record::TrialRecord;
use tare_runner::observer::Quiet;
use tare_runner::provenance::Provenance;
use tare_runner::real::RealExecutor;
use tare_runner::{session, Experiment, Outcome, RunDir};

/// Two native nginx cells (access log on/off), three 0.5 s trials each, a
/// fresh deployment per trial: a few seconds, long enough to interrupt
/// after two trials, and short because each test runs it three times
/// (interrupted, resumed, whole).
const EXPERIMENT: &str = r#"
name = "interrupt"
[target]
kind = "nginx"
[factors]
access_log = ["on", "off"]
[load]
threads = 1
connections = 8
duration = "500ms"
warmup = "100ms"
[trials]
count = 3
seed = 11
cooldown = "0s"
"#;

/// A unique run directory name (its last part names every resource).
fn unique(tag: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("tare-test-{tag}-{:x}{:x}", std::process::id(), nanos)
}

struct Fixture {
    tmp: tempfile::TempDir,
    exp: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let exp = tmp.path().join("interrupt.toml");
    std::fs::write(&exp, EXPERIMENT).unwrap();
    Fixture { tmp, exp }
}

/// Runs (mode `begin`) or resumes (mode `resume`) the run in `dir` in this
/// process, with the real executor and Ctrl-C handler; writes the outcome.
fn run_here(mode: &str, exp: &Path, dir: &Path) -> Outcome {
    let interrupt = tare_runner::interrupt::install(tare_deploy::teardown_all).unwrap();
    run_with_flag(mode, exp, dir, interrupt)
}

fn run_with_flag(mode: &str, exp: &Path, dir: &Path, interrupt: Arc<AtomicBool>) -> Outcome {
    let s = if mode == "resume" {
        session::resume(dir).unwrap()
    } else {
        let exp = Experiment::load(exp).unwrap();
        let rd = RunDir::create(Some(dir), dir.parent().unwrap()).unwrap();
        let mut exec = RealExecutor::new(&exp, &rd.path, interrupt.clone());
        session::begin(exp, rd, &mut exec, &mut Quiet, &Provenance::collect()).unwrap()
    };
    let mut exec = RealExecutor::new(&s.exp, &s.dir.path, interrupt.clone());
    let summary = s.run(&mut exec, &mut Quiet, &interrupt).unwrap();
    summary.outcome
}

/// The child side: only does something when the parent set the variables.
#[test]
#[ignore = "run by the interrupt tests as a separate process"]
fn child_process() {
    let (Ok(mode), Ok(exp), Ok(dir)) = (
        std::env::var("TARE_TEST_MODE"),
        std::env::var("TARE_TEST_EXP"),
        std::env::var("TARE_TEST_DIR"),
    ) else {
        return;
    };
    let outcome = run_here(&mode, Path::new(&exp), Path::new(&dir));
    std::fs::write(Path::new(&dir).join("outcome.txt"), format!("{outcome:?}")).unwrap();
}

/// Kills the child if the test fails before it exits.
struct ChildGuard(Option<Child>);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn spawn(mode: &str, exp: &Path, dir: &Path) -> ChildGuard {
    let child = Command::new(std::env::current_exe().unwrap())
        .args([
            "interrupt::child_process",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("TARE_TEST_MODE", mode)
        .env("TARE_TEST_EXP", exp)
        .env("TARE_TEST_DIR", dir)
        .spawn()
        .unwrap();
    ChildGuard(Some(child))
}

fn trials(dir: &Path) -> Vec<TrialRecord> {
    RunDir::open(dir)
        .map(|d| d.read_trials(false).unwrap())
        .unwrap_or_default()
}

/// Waits (bounded) until `n` trials are on disk.
fn wait_for_trials(dir: &Path, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while trials(dir).len() < n {
        assert!(
            Instant::now() < deadline,
            "no {n} trials in 90 s in {}",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_exit(guard: &mut ChildGuard) -> std::process::ExitStatus {
    let child = guard.0.as_mut().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            guard.0 = None;
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "the run did not stop within 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn signal(guard: &ChildGuard, sig: libc::c_int) {
    let pid = guard.0.as_ref().unwrap().id() as libc::pid_t;
    // SAFETY: plain syscall on our own child.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
}

/// Server processes whose command line names this run's resources.
fn processes_of(run_id: &str) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(run_id) && !cmd.contains("child_process") {
                out.push(cmd);
            }
        }
    }
    out
}

/// A run's shape: its (cell, trial) pairs, and its cells with their
/// successful trial counts.
type Shape = (BTreeSet<(String, u32)>, Vec<(String, usize)>);

fn shape(records: &[TrialRecord]) -> Shape {
    let pairs = records.iter().map(|r| (r.cell.clone(), r.trial)).collect();
    let mut cells: Vec<(String, usize)> = Vec::new();
    for r in records.iter().filter(|r| r.result.is_some()) {
        match cells.iter_mut().find(|(c, _)| *c == r.cell) {
            Some((_, n)) => *n += 1,
            None => cells.push((r.cell.clone(), 1)),
        }
    }
    cells.sort();
    (pairs, cells)
}

/// The cells of the report analysis makes of a run directory.
fn report_cells(dir: &Path) -> Vec<(String, usize)> {
    let run = tare_analysis::load_run(dir).unwrap();
    let mut cells: Vec<(String, usize)> = run
        .cells()
        .iter()
        .map(|c| (c.cell.clone(), c.ok()))
        .collect();
    cells.sort();
    cells
}

fn uninterrupted(f: &Fixture) -> PathBuf {
    let dir = f.tmp.path().join(unique("whole"));
    let outcome = run_with_flag("begin", &f.exp, &dir, Arc::new(AtomicBool::new(false)));
    assert_eq!(outcome, Outcome::Complete);
    dir
}

#[test]
fn sigint_keeps_finished_trials_and_resume_completes_the_run() {
    let f = fixture();
    let dir = f.tmp.path().join(unique("int"));
    let mut child = spawn("begin", &f.exp, &dir);
    wait_for_trials(&dir, 2);
    signal(&child, libc::SIGINT);
    assert!(wait_exit(&mut child).success());
    assert_eq!(
        std::fs::read_to_string(dir.join("outcome.txt")).unwrap(),
        "Interrupted"
    );
    let before = trials(&dir);
    assert!((2..6).contains(&before.len()), "{} trials", before.len());
    assert!(
        before
            .iter()
            .all(|r| r.result.as_ref().is_some_and(|x| x.requests > 0)),
        "{before:?}"
    );
    let run_id = format!(
        "r{}",
        dir.file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .rsplit('-')
            .next()
            .unwrap()
    );
    assert_eq!(
        processes_of(&run_id),
        Vec::<String>::new(),
        "the deployment was torn down"
    );

    let mut child = spawn("resume", &f.exp, &dir);
    assert!(wait_exit(&mut child).success());
    assert_eq!(
        std::fs::read_to_string(dir.join("outcome.txt")).unwrap(),
        "Complete"
    );
    let after = trials(&dir);
    assert_eq!(
        after[..before.len()],
        before[..],
        "finished trials are kept as they were"
    );
    assert_eq!(
        after.iter().map(|r| r.order).collect::<Vec<_>>(),
        (0..6).collect::<Vec<u64>>()
    );

    let whole = uninterrupted(&f);
    assert_eq!(shape(&after), shape(&trials(&whole)));
    assert_eq!(report_cells(&dir), report_cells(&whole));
    let prov: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("provenance.json")).unwrap())
            .unwrap();
    assert_eq!(prov["resumed"].as_array().map(Vec::len), Some(1));
}

#[test]
fn sigkill_loses_no_finished_trial_and_resume_completes_the_run() {
    let f = fixture();
    let dir = f.tmp.path().join(unique("kill"));
    let mut child = spawn("begin", &f.exp, &dir);
    wait_for_trials(&dir, 2);
    let seen = trials(&dir);
    signal(&child, libc::SIGKILL);
    let status = wait_exit(&mut child);
    assert!(!status.success());
    // What the killed run left running is removed by `tare cleanup`'s code
    // (it only touches resources whose owner process is gone).
    {
        let _cleanup = tare_testbed::machine::cleanup_lock();
        tare_deploy::cleanup().unwrap();
    }
    let before = trials(&dir);
    assert!(before.len() >= seen.len());
    assert_eq!(
        before[..seen.len()],
        seen[..],
        "every trial seen on disk is still there"
    );

    let outcome = run_with_flag("resume", &f.exp, &dir, Arc::new(AtomicBool::new(false)));
    assert_eq!(outcome, Outcome::Complete);
    let after = trials(&dir);
    assert_eq!(after[..before.len()], before[..]);
    let whole = uninterrupted(&f);
    assert_eq!(shape(&after), shape(&trials(&whole)));
    assert_eq!(report_cells(&dir), report_cells(&whole));
}
