//! Noise on a real trial (docs/monitor.md, "Noise"): a busy loop the test starts outside
//! the server, the generator and the sampler burns a core while nginx is
//! measured; the trial's record is flagged "other processes", and kept.
//! Only that direction is asserted: on a shared machine a trial may be
//! disturbed by anyone, so no test here expects a real trial to be clean.

use crate::support;

use std::process::{Child, Command};

use tare_runner::observer::Quiet;
use tare_runner::provenance::Provenance;
use tare_runner::session;

const EXPERIMENT: &str = r#"
name = "noise"
[target]
kind = "nginx"
[load]
threads = 1
connections = 4
duration = "2s"
warmup = "0s"
[trials]
count = 1
cooldown = "0s"
"#;

/// A shell spinning in a loop, ended by `timeout` after 30 s even if this
/// test is killed, and killed on drop (a failed assertion too).
struct BusyLoop(Child);

impl BusyLoop {
    fn start() -> BusyLoop {
        BusyLoop(
            Command::new("timeout")
                .args(["30", "sh", "-c", "while :; do :; done"])
                .spawn()
                .expect("timeout and sh"),
        )
    }
}

impl Drop for BusyLoop {
    fn drop(&mut self) {
        // SIGKILL to timeout would orphan the loop: SIGTERM makes timeout
        // pass it on to its child, then reap both.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let _ = self.0.wait();
    }
}

#[test]
fn a_busy_process_outside_the_trial_flags_it_and_it_is_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = support::experiment(tmp.path(), "noise.toml", EXPERIMENT);
    let (dir, flag, mut exec) = support::real(&exp, tmp.path(), "noise");
    let busy = BusyLoop::start();
    let s = session::begin(exp, dir, &mut exec, &mut Quiet, &Provenance::default()).unwrap();
    let summary = s.run(&mut exec, &mut Quiet, &flag).unwrap();
    drop(busy);
    assert_eq!((summary.trials_run, summary.failed), (1, 0), "{summary:?}");

    let trials = s.dir.read_trials(false).unwrap();
    let t = &trials[0];
    assert!(t.result.is_some(), "kept: {t:?}");
    let monitor = t
        .monitor
        .as_ref()
        .expect("every measured trial is monitored");
    // The loop's own share: it ran through the whole record.
    let recorded: f64 = monitor["series"]["dt_s"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_f64())
        .sum();
    let sh = monitor["others_cpu_s"]["sh"].as_f64().unwrap_or(0.0) / recorded;
    assert!(
        sh > tare_monitor::OTHERS_CORES_MAX,
        "the loop got {sh:.2} cores: {}",
        monitor["others_cpu_s"]
    );
    let reasons = t.disturbed.as_ref().expect("flagged");
    assert!(
        reasons.iter().any(|r| r.starts_with("other processes")),
        "{reasons:?}"
    );
    assert_eq!(
        Some(reasons.clone()),
        tare_monitor::Disturbance::reasons_in(monitor),
        "the flag is the monitor's"
    );
}
