//! `tare run --debug-mode` → records → `tare report`, end to end through the
//! real binary with a mock placement and engine (hyperfine's `--debug-mode`):
//! deterministic, so the whole report is a snapshot. The real placements
//! and engines are exercised by the other integration tests.

use std::path::Path;
use std::process::{Command, Output};

fn tare(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_tare"))
        .args(args)
        .output()
        .expect("tare runs");
    assert!(
        out.status.success(),
        "tare {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The report with what differs between machines and runs (the run
/// directory, the provenance line, the CPU split) replaced by placeholders.
fn normalized(report: &[u8], dir: &Path) -> String {
    String::from_utf8_lossy(report)
        .replace(&dir.display().to_string(), "[DIR]")
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("tare ") && l.contains(" · kernel ") {
                "  [PROVENANCE]"
            } else if l.starts_with("  server on ") && l.ends_with("([cpus])") {
                // Where `[cpus] = auto` put them depends on the machine's CPUs.
                "  [CPUS]"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn seed_000_in_debug_mode_records_and_reports_the_same_every_time() {
    let root = tempfile::tempdir().unwrap();
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/nginx-docker.toml"
    );
    let mut reports = Vec::new();
    for n in 0..2 {
        let dir = root.path().join(format!("run{n}"));
        let d = dir.to_str().unwrap();
        let run = tare(&["run", "--debug-mode", "-q", "--out", d, example]);
        // The run's report, and the report re-read from its records, agree.
        let again = tare(&["report", d]);
        let (a, b) = (
            normalized(&run.stdout, &dir),
            normalized(&again.stdout, &dir),
        );
        assert_eq!(a, b);
        // Every trial was recorded, each with a result from the mock engine.
        let trials = std::fs::read_to_string(dir.join("trials.jsonl")).unwrap();
        // 12 cells and the split's two in the fixed three rounds, then, as
        // many times as the ±5 points precision takes (each step's and
        // each part's share of the gap; the debug model's trial noise needs
        // a few more), rounds of the 7 cells the chain and its split read
        // (`focus = "chain"`).
        let n = trials.lines().count();
        assert!(
            n > 14 * 3 && (n - 14 * 3).is_multiple_of(7),
            "{n} trials: 14 cells x 3 rounds, then rounds of 7"
        );
        for line in trials.lines() {
            let t: serde_json::Value = serde_json::from_str(line).unwrap();
            let target = t["result"]["target"].as_str().unwrap_or_default();
            assert!(target.ends_with("(debug mode)"), "{t}");
        }
        for f in ["plan.json", "provenance.json", "report.html", "report.json"] {
            assert!(dir.join(f).is_file(), "{f}");
        }
        reports.push(a.replace("run1", "run0"));
    }
    assert_eq!(reports[0], reports[1], "two runs, one report");
    insta::assert_snapshot!(reports[0]);
}

#[test]
fn the_quick_experiment_runs_in_debug_mode() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("quick");
    let out = tare(&["run", "--debug-mode", "-q", "--out", dir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("attribution of the req/s gap"), "{text}");
}

/// `tare compare` refuses runs that measured different things (a different
/// load, a `--debug-mode` run beside a real one), naming each difference
/// in one line, exit 2; `--force` compares them with a warning; two runs
/// of the same experiment compare quietly.
#[test]
fn compare_refuses_runs_that_are_not_comparable_unless_forced() {
    let root = tempfile::tempdir().unwrap();
    let exp = |name: &str, connections: u32, duration: &str| {
        let path = root.path().join(name);
        std::fs::write(
            &path,
            format!(
                "[target]\nkind = \"tare-serve\"\n[load]\nduration = \"{duration}\"\nwarmup = \"0s\"\nconnections = {connections}\nthreads = 1\n[trials]\ncount = 2\ncooldown = \"0s\"\n"
            ),
        )
        .unwrap();
        path.display().to_string()
    };
    let (a, b) = (exp("a.toml", 4, "1s"), exp("b.toml", 8, "1s"));
    let longer = exp("longer.toml", 4, "2s");
    let dir = |n: &str| root.path().join(n).display().to_string();
    for (d, e) in [("a1", &a), ("a2", &a), ("b", &b), ("longer", &longer)] {
        tare(&["run", "--debug-mode", "-q", "--out", &dir(d), e]);
    }
    tare(&["run", "-q", "--out", &dir("real"), &a]);
    let compare = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_tare"))
            .arg("compare")
            .args(args)
            .output()
            .unwrap()
    };
    let same = compare(&[&dir("a1"), &dir("a2")]);
    assert_eq!(same.status.code(), Some(0));
    assert!(
        same.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&same.stderr)
    );
    // A longer window measures the same rate: compared, with a note.
    let window = compare(&[&dir("a1"), &dir("longer")]);
    let err = String::from_utf8_lossy(&window.stderr);
    assert_eq!(window.status.code(), Some(0), "{err}");
    assert!(
        err.contains("tare: note: different load windows (duration"),
        "{err}"
    );
    assert!(!window.stdout.is_empty());
    for (other, says) in [
        ("b", "different loads (connections 4 vs 8)"),
        ("real", "is a --debug-mode run"),
    ] {
        let out = compare(&[&dir("a1"), &dir(other)]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("are not comparable") && err.contains(says),
            "{err}"
        );
        assert!(out.stdout.is_empty());
        let forced = compare(&["--force", &dir("a1"), &dir(other)]);
        let err = String::from_utf8_lossy(&forced.stderr);
        assert_eq!(forced.status.code(), Some(0), "{err}");
        assert!(
            err.contains("warning: compared anyway (--force)") && err.contains(says),
            "{err}"
        );
        assert!(!forced.stdout.is_empty());
    }
}
