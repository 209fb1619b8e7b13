//! A tuning session's rounds on a modelled nginx: `tune` runs each
//! experiment through the `exec` it is given, so here every experiment
//! file it writes is answered with synthetic trials whose true throughput
//! follows from the config text (tare_analysis::synthetic). The advisor,
//! the experiment files, the verdicts, the combining and the rounds are the
//! real ones; only the measuring is modelled, so what the rounds do (what
//! round 2 re-measures, against which baseline, when the session stops) is
//! checked exactly, where the real-nginx test in `tune.rs` depends on which
//! changes that machine's noise lets through.

use std::path::{Path, PathBuf};

use tare_analysis::synthetic::{self, SynthCell};
use tare_tune::{tune, TuneError};

/// Requests per second of the modelled nginx under `text`: keep-alive off
/// and 64 worker connections each cost throughput, `multi_accept on` costs
/// some (a change the session must not keep), nothing else matters.
fn modelled_rps(text: &str) -> f64 {
    let mut rps = 40_000.0;
    if text.contains("keepalive_timeout 0;") {
        rps *= 0.4;
    }
    if text.contains("worker_connections 64;") {
        rps *= 0.7;
    }
    if text.contains("multi_accept on;") {
        rps *= 0.6;
    }
    rps
}

/// Answers one experiment file the way `tare run` would, from the model.
fn modelled_run(toml_path: &Path, run_dir: &Path) -> Result<tare_analysis::Run, TuneError> {
    let exp: toml::Table = std::fs::read_to_string(toml_path).unwrap().parse().unwrap();
    let configs = exp["target"]["configs"].as_table().unwrap();
    let trials = exp["trials"]["count"].as_integer().unwrap() as u32;
    let levels = exp["factors"]["config"].as_array().unwrap();
    let cells: Vec<SynthCell> = levels
        .iter()
        .map(|l| {
            let level = l.as_str().unwrap();
            let text = configs[level]["text"].as_str().unwrap();
            SynthCell::new(
                &[("placement", "native"), ("config", level)],
                modelled_rps(text),
                0.02,
            )
        })
        .collect();
    let run_id = run_dir.file_name().unwrap().to_string_lossy().into_owned();
    let records = synthetic::trials(&run_id, &cells, trials, 7);
    let plan = synthetic::plan(&run_id, &cells, &[]);
    synthetic::write_run_dir(run_dir, &records, Some(&plan)).unwrap();
    Ok(tare_analysis::load_run(run_dir).unwrap())
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_second_round_measures_what_is_left_against_the_first_rounds_config() {
    let dir =
        TempDir(std::env::temp_dir().join(format!("tare-tune-rounds-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0).unwrap();
    let conf = dir.0.join("bad.conf");
    std::fs::write(
        &conf,
        "worker_processes 1;\nevents {\n    worker_connections 64;\n}\nhttp {\n    \
         keepalive_timeout 0;\n    server {\n        listen 8080;\n        root /www;\n    }\n}\n",
    )
    .unwrap();
    let opts = crate::support::options(conf, dir.0.join("out"), 3);
    let mut experiments = Vec::new();
    let mut exec = |t: &Path, d: &Path| {
        experiments.push(std::fs::read_to_string(t).unwrap());
        modelled_run(t, d)
    };
    let mut notes = Vec::new();
    let tuning = tune(&opts, &mut exec, &mut |l| notes.push(l.to_string())).unwrap();
    let table = tare_tune::table::render(&tuning);

    // Round 1 keeps the two changes that matter, together they hold.
    assert_eq!(
        tuning.kept,
        ["worker-connections", "keepalive-timeout"],
        "{table}"
    );
    // Round 2 starts from round 1's config, re-measures only what was not
    // kept, keeps nothing more, and the session stops there (3 allowed).
    assert_eq!(tuning.rounds.len(), 2, "{table}");
    let second: Vec<&str> = tuning.rounds[1]
        .verdicts
        .iter()
        .map(|v| v.rule.as_str())
        .collect();
    assert!(!second.contains(&"worker-connections"), "{second:?}");
    assert!(!second.contains(&"keepalive-timeout"), "{second:?}");
    assert!(second.contains(&"multi-accept"), "{second:?}");
    assert!(tuning.rounds[1].verdicts.iter().all(|v| !v.kept), "{table}");
    assert!(tuning.rounds[1].combined.is_none(), "{table}");
    // The experiment files: round 1 alone, round 1 together, round 2 alone;
    // round 2's baseline is round 1's tuned config.
    assert_eq!(experiments.len(), 3, "{notes:?}");
    let round2: toml::Table = experiments[2].parse().unwrap();
    let baseline = round2["target"]["configs"]["baseline"]["text"]
        .as_str()
        .unwrap();
    assert!(baseline.contains("worker_connections 4096;"), "{baseline}");
    assert!(!baseline.contains("keepalive_timeout 0;"), "{baseline}");
    // multi_accept lowers throughput: measured and dropped in both rounds.
    for round in &tuning.rounds {
        let v = round
            .verdicts
            .iter()
            .find(|v| v.rule == "multi-accept")
            .unwrap();
        assert!(
            !v.kept && v.reason.contains("significantly lower"),
            "{table}"
        );
    }
    let tuned = std::fs::read_to_string(tuning.tuned.as_ref().unwrap()).unwrap();
    assert_eq!(tuned, baseline);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("round 2:") && n.contains("against the config tuned so far")),
        "{notes:?}"
    );
}
