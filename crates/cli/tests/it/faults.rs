//! Fault injection: the server killed (SIGKILL), frozen (SIGSTOP) or made
//! to exit (SIGTERM: `tare serve` exits 0) at a random moment of a trial's
//! measured load, natively and in Docker, with `deployment = "kept"` and
//! per trial. The trial is failed with the reason, the other trials are
//! kept, the report says which, and `tare run` exits non-zero only when
//! nothing usable is left (docs/experiments.md, "Failed trials").

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Clone, Copy, Debug)]
enum Fault {
    Kill,
    Stop,
    Exit,
}

impl Fault {
    fn signal(self) -> libc::c_int {
        match self {
            Fault::Kill => libc::SIGKILL,
            Fault::Stop => libc::SIGSTOP,
            Fault::Exit => libc::SIGTERM,
        }
    }

    /// What the failed trial's reason must say, natively and in Docker.
    fn reason(self, docker: bool) -> &'static str {
        match (self, docker) {
            (Fault::Kill, false) => "server exited with signal 9",
            (Fault::Kill, true) => "server container exited with code 137 (signal 9)",
            (Fault::Stop, _) => "server stopped (SIGSTOP)",
            (Fault::Exit, false) => "server exited with code 0",
            (Fault::Exit, true) => "server container exited with code 0",
        }
    }
}

/// A seed from the clock, printed, so a failing moment can be told.
fn seed() -> u64 {
    let s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64;
    eprintln!("fault seed {s}");
    s
}

/// A moment in `lo..hi`, from `seed`.
fn moment(seed: u64, lo: f64, hi: f64) -> Duration {
    let x = (seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) as f64 / (1u64 << 53) as f64;
    Duration::from_secs_f64(lo + (hi - lo) * x)
}

fn experiment(dir: &Path, placement: &str, policy: &str, trials: u32) -> PathBuf {
    let path = dir.join("faults.toml");
    std::fs::write(
        &path,
        format!(
            r#"
[target]
kind = "tare-serve"
[factors]
placement = ["{placement}"]
[load]
threads = 1
connections = 4
duration = "2s"
warmup = "0s"
[trials]
count = {trials}
cooldown = "0s"
deployment = "{policy}"
"#
        ),
    )
    .unwrap();
    path
}

fn trials_on_disk(out: &Path) -> usize {
    std::fs::read_to_string(out.join("trials.jsonl"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// The server of this run: natively `tare run`'s child `tare serve`; in
/// Docker the host pid of the container labelled with the run's id.
fn server_pid(run: &Child, run_id: &str, docker: bool) -> Option<i32> {
    if docker {
        let out = Command::new("docker")
            .args(["ps", "-q", "--filter", &format!("label=tare.run={run_id}")])
            .output()
            .ok()?;
        let id = String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()?
            .to_string();
        let out = Command::new("docker")
            .args(["inspect", "-f", "{{.State.Pid}}", &id])
            .output()
            .ok()?;
        return String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .ok()
            .filter(|&p| p > 0);
    }
    let parent = run.id() as i32;
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let ppid: i32 = stat[stat.rfind(')')? + 2..]
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let serve = cmd.split(|b| *b == 0).nth(1) == Some(b"serve".as_slice());
        (ppid == parent && serve).then_some(pid)
    })
}

/// Polls `f` every 20 ms until it gives a value or `limit` passes.
fn until<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if let Some(v) = f() {
            return Some(v);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Runs a `trials`-trial experiment whose trial `at` gets `fault`, and
/// returns the run directory and `tare run`'s exit code and stderr.
fn run_with_fault(
    tmp: &Path,
    placement: &str,
    policy: &str,
    fault: Fault,
    trials: u32,
    at: u32,
) -> (PathBuf, Option<i32>, String) {
    let docker = placement != "native";
    let seed = seed();
    let tag = format!("f{}{}", &policy[..1], seed % 1_000_000);
    let run_id = format!("r{tag}");
    let out = tmp.join(format!("faults-{tag}"));
    let exp = experiment(tmp, placement, policy, trials);
    let run = Command::new(env!("CARGO_BIN_EXE_tare"))
        .args(["run", "-q", "--out"])
        .arg(&out)
        .arg(&exp)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tare runs");
    // The trial's server: the first one seen once preflight is over
    // (findings.json written) and `at - 1` trials are on disk that was
    // not seen before (per trial, each trial has its own; kept, the one
    // preflight left up).
    let mut seen = std::collections::HashSet::new();
    let pid = until(Duration::from_secs(120), || {
        let before =
            !out.join("findings.json").exists() || trials_on_disk(&out) < (at - 1) as usize;
        let pid = server_pid(&run, &run_id, docker);
        match (before, pid) {
            (true, Some(p)) => {
                seen.insert(p);
                None
            }
            (false, Some(p)) if policy == "kept" || !seen.contains(&p) => Some(p),
            _ => None,
        }
    });
    // Inside the 2 s of measured load: per trial, past the new server's
    // start and readiness; and well before the load ends, so a loaded
    // machine's slower start still finds the fault mid-trial.
    let lead = if policy == "kept" { 0.2 } else { 0.6 };
    std::thread::sleep(moment(seed, lead, 1.2));
    if let Some(pid) = pid {
        // SAFETY: a plain kill(2) of the server this run started.
        unsafe { libc::kill(pid, fault.signal()) };
    }
    let output = run.wait_with_output().expect("tare run ends");
    let err = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(pid.is_some(), "no server found to fault: {err}");
    (out, output.status.code(), err)
}

fn records(out: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.join("trials.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `fault` in trial 2 of 3: that trial fails with the reason, trials 1
/// and 3 measure, the report names trial 2, and the run exits 0. One test
/// per placement, policy and fault: each is a whole `tare run`, and as
/// tests of their own they share the suite's cores and name the case that
/// failed (docs/testing.md).
fn fault_in(placement: &str, policy: &str, fault: Fault) {
    let docker = placement != "native";
    if docker {
        if let Err(why) = tare_deploy::PlacementKind::named(placement)
            .unwrap()
            .available()
        {
            eprintln!("{placement} skipped: {why}");
            return;
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let (out, code, err) = run_with_fault(tmp.path(), placement, policy, fault, 3, 2);
    let case = format!("{placement} {policy} {fault:?}: {err}");
    assert_eq!(code, Some(0), "{case}");
    let recs = records(&out);
    assert_eq!(recs.len(), 3, "{case}");
    for r in &recs {
        let trial = r["trial"].as_u64().unwrap();
        if trial == 2 {
            let why = r["error"].as_str().unwrap_or_else(|| panic!("{case}: {r}"));
            assert!(why.starts_with(fault.reason(docker)), "{case}: {why}");
            assert!(r.get("result").is_none(), "{case}");
        } else {
            assert!(r["error"].is_null(), "{case}: {r}");
            assert!(r["result"]["requests"].as_u64() > Some(0), "{case}");
        }
    }
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(
        report.contains(&format!(
            "1 of 3 trials failed (#2: {}",
            fault.reason(docker)
        )),
        "{case}\n{report}"
    );
}

/// One test per case: `name: placement, deployment policy, fault;`.
macro_rules! fault_tests {
    ($($name:ident: $placement:literal, $policy:literal, $fault:ident;)*) => {
        $(
            #[test]
            fn $name() {
                fault_in($placement, $policy, Fault::$fault);
            }
        )*
    };
}

fault_tests! {
    a_native_server_killed_mid_trial_fails_only_that_trial: "native", "per-trial", Kill;
    a_native_server_frozen_mid_trial_fails_only_that_trial: "native", "per-trial", Stop;
    a_native_server_exited_mid_trial_fails_only_that_trial: "native", "per-trial", Exit;
    a_kept_native_server_killed_mid_trial_fails_only_that_trial: "native", "kept", Kill;
    a_kept_native_server_frozen_mid_trial_fails_only_that_trial: "native", "kept", Stop;
    a_kept_native_server_exited_mid_trial_fails_only_that_trial: "native", "kept", Exit;
    a_docker_server_killed_mid_trial_fails_only_that_trial: "docker-bridge", "per-trial", Kill;
    a_docker_server_frozen_mid_trial_fails_only_that_trial: "docker-bridge", "per-trial", Stop;
    a_docker_server_exited_mid_trial_fails_only_that_trial: "docker-bridge", "per-trial", Exit;
    a_kept_docker_server_killed_mid_trial_fails_only_that_trial: "docker-bridge", "kept", Kill;
    a_kept_docker_server_frozen_mid_trial_fails_only_that_trial: "docker-bridge", "kept", Stop;
    a_kept_docker_server_exited_mid_trial_fails_only_that_trial: "docker-bridge", "kept", Exit;
}

/// A run whose only trial lost its server has nothing usable: exit 1,
/// one line saying why, and the report still written.
#[test]
fn a_run_with_nothing_usable_left_exits_non_zero() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, code, err) = run_with_fault(tmp.path(), "native", "per-trial", Fault::Kill, 1, 1);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(
            "tare run: no trial measured anything (first failure: server exited with signal 9"
        ),
        "{err}"
    );
    assert!(out.join("report.txt").is_file());
    // Read again later, the run is still nothing measured.
    let again = std::process::Command::new(env!("CARGO_BIN_EXE_tare"))
        .arg("report")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(1), "{err}");
    assert!(
        err.contains("tare report: no trial measured anything"),
        "{err}"
    );
    assert!(
        !again.stdout.is_empty(),
        "the report is printed all the same"
    );
}
