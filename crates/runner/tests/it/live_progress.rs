//! A local load in `tare run` reports live counts to the
//! runner's observer as remote generators do (`LiveProgress`), so the
//! progress line shows requests done so far for every cell. A real nginx,
//! deployed natively and loaded by tare-http in this process.

use crate::support;

use tare_runner::observer::{LiveProgress, Observer, Phase};
use tare_runner::provenance::Provenance;
use tare_runner::{session, Outcome};

const EXPERIMENT: &str = r#"
name = "live"
[target]
kind = "nginx"
[factors]
placement = ["native"]
[load]
threads = 1
connections = 4
duration = "2s"
warmup = "1s"
[trials]
count = 1
cooldown = "0s"
"#;

/// Every progress report, with the phase it came in.
#[derive(Default)]
struct Recording {
    phase: Option<Phase>,
    seen: Vec<(String, u32, Option<Phase>, LiveProgress)>,
}

impl Observer for Recording {
    fn phase(&mut self, _cell: &str, _trial: u32, phase: Phase) {
        self.phase = Some(phase);
    }

    fn progress(&mut self, cell: &str, trial: u32, progress: &LiveProgress) {
        self.seen
            .push((cell.to_string(), trial, self.phase, progress.clone()));
    }
}

#[test]
fn a_local_load_reports_its_counts_to_the_observer_while_it_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = support::experiment(tmp.path(), "live.toml", EXPERIMENT);
    let (dir, flag, mut exec) = support::real(&exp, tmp.path(), "live");
    let mut obs = Recording::default();
    let s = session::begin(exp, dir, &mut exec, &mut obs, &Provenance::collect()).unwrap();
    let summary = s.run(&mut exec, &mut obs, &flag).unwrap();
    assert_eq!(summary.outcome, Outcome::Complete, "{summary:?}");
    let trials = s.dir.read_trials(false).unwrap();
    let result = trials[0].result.as_ref().expect("measured");
    assert!(result.requests > 0, "{result:?}");
    // The CPUs its generator could use here, recorded for the verdict.
    assert!(result.generator_cpus >= 1, "{result:?}");

    let measured: Vec<&LiveProgress> = obs
        .seen
        .iter()
        .filter(|(cell, trial, phase, _)| {
            *cell == trials[0].cell && *trial == trials[0].trial && *phase == Some(Phase::Measure)
        })
        .map(|(_, _, _, p)| p)
        .collect();
    // Two seconds, read every half second: several reports.
    assert!(measured.len() >= 2, "{:?}", obs.seen);
    assert!(
        measured.iter().all(|p| p.unit == "request" && p.hosts == 0),
        "{measured:?}"
    );
    assert!(
        measured.windows(2).all(|w| w[1].done >= w[0].done),
        "{measured:?}"
    );
    let last = measured.last().unwrap();
    // Live counts are approximate but never beyond what the record holds
    // (plus what was in flight on each connection at the end).
    assert!(
        last.done > 0 && last.done <= result.requests + result.connections,
        "{last:?} vs {} requests",
        result.requests
    );
    assert!(measured.iter().any(|p| p.rate > 0.0), "{measured:?}");
    // The progress line: counts, without a generator-hosts part.
    let line = last.to_string();
    assert!(
        line.starts_with(&format!("{} requests done, ", last.done)) && !line.contains("hosts"),
        "{line}"
    );
    // The warm-up reports too, under its own phase.
    assert!(
        obs.seen
            .iter()
            .any(|(_, _, phase, p)| *phase == Some(Phase::Warmup) && p.done > 0),
        "{:?}",
        obs.seen
    );
}
