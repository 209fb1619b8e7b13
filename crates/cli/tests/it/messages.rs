//! What the `tare` binary says when the input is wrong or the machine
//! fails it: one line naming the problem, a non-zero exit, never a panic,
//! nothing of the user's overwritten, and a way to go on. Each test is a
//! regression for a message that was missing, doubled or wrong.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn tare<S: AsRef<OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tare"))
        .args(args)
        .output()
        .expect("tare runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// One line on stderr, exit 2 (not 101: a panic).
fn refused(out: &Output) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// A one-cell experiment that `--debug-mode` runs in a moment.
fn experiment(dir: &Path, trials: u32) -> PathBuf {
    let path = dir.join("exp.toml");
    std::fs::write(
        &path,
        format!(
            "[target]\nkind = \"tare-serve\"\n[load]\nduration = \"1s\"\n[trials]\ncount = {trials}\ncooldown = \"0s\"\n"
        ),
    )
    .unwrap();
    path
}

/// `tare run --debug-mode [-q] EXP --out OUT`.
fn debug_run(exp: &Path, out: &Path, quiet: bool) -> Output {
    let mut args = vec![OsStr::new("run"), OsStr::new("--debug-mode")];
    if quiet {
        args.push(OsStr::new("-q"));
    }
    args.extend([exp.as_os_str(), OsStr::new("--out"), out.as_os_str()]);
    tare(&args)
}

fn no_temporary_files(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name();
        assert!(!name.to_string_lossy().ends_with("tmp~"), "{name:?} left");
    }
}

#[test]
fn a_missing_argument_is_named() {
    let err = refused(&tare(&["report"]));
    assert!(err.contains("not provided: <DIR>"), "{err}");
    assert!(err.contains("(see tare report --help)"), "{err}");
}

#[test]
fn an_os_error_is_printed_once() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = experiment(tmp.path(), 1);
    let out = tare(&[
        OsStr::new("run"),
        OsStr::new("--debug-mode"),
        exp.as_os_str(),
        OsStr::new("--out"),
        OsStr::new("/proc/tare-no/run"),
    ]);
    let err = refused(&out);
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
}

#[test]
fn a_duration_past_its_bound_is_refused_by_flag_and_file_alike() {
    let out = tare(&["http", "-d", "25h", "http://127.0.0.1:9/"]);
    let err = stderr(&out);
    assert!(
        !out.status.success() && err.contains("at most 24h"),
        "{err}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("exp.toml");
    std::fs::write(
        &path,
        "[target]\nkind = \"tare-serve\"\n[load]\nduration = \"1000000h\"\n",
    )
    .unwrap();
    let out = tare(&[OsStr::new("run"), OsStr::new("--check"), path.as_os_str()]);
    let err = refused(&out);
    assert!(
        err.contains(":4:") && err.contains("`load.duration`") && err.contains("at most 24h"),
        "{err}"
    );
}

/// Regression: `--out` at a directory holding a user's `report.json`
/// overwrote it.
#[test]
fn out_at_a_directory_of_the_users_is_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = experiment(tmp.path(), 1);
    let mine = tmp.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("report.json"), "mine").unwrap();
    let out = debug_run(&exp, &mine, false);
    let err = refused(&out);
    assert!(err.contains("not empty and not a tare run"), "{err}");
    let left: Vec<_> = std::fs::read_dir(&mine).unwrap().collect();
    assert_eq!(left.len(), 1);
    assert_eq!(
        std::fs::read_to_string(mine.join("report.json")).unwrap(),
        "mine"
    );
}

/// Regression: a non-UTF-8 `--out` or experiment path panicked (exit 101)
/// and left an empty directory.
#[test]
fn non_utf8_paths_are_one_line_errors_that_create_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = experiment(tmp.path(), 1);
    let out_dir = tmp.path().join(OsStr::from_bytes(b"run-\xff"));
    let out = debug_run(&exp, &out_dir, false);
    let err = refused(&out);
    assert!(err.contains("not a UTF-8 path"), "{err}");
    assert!(!out_dir.exists());
    let bad_exp = tmp.path().join(OsStr::from_bytes(b"exp-\xff.toml"));
    std::fs::copy(&exp, &bad_exp).unwrap();
    let out = debug_run(&bad_exp, &tmp.path().join("r"), false);
    let err = refused(&out);
    assert!(err.contains("not a UTF-8 path"), "{err}");
    assert!(!tmp.path().join("r").exists());
}

#[test]
fn an_unfinished_nginx_statement_is_described() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("n.conf");
    std::fs::write(&conf, "events {}\nworker_processes 1\n").unwrap();
    let out = tare(&[OsStr::new("nginx"), OsStr::new("parse"), conf.as_os_str()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("error: unexpected end of file, the last statement is not finished"),
        "{text}"
    );
    assert!(!text.lines().any(|l| l.trim_end() == "error:"), "{text}");
}

/// Regression: one torn line in the middle of trials.jsonl made `tare
/// report` refuse the run and `--resume` name the wrong line.
#[test]
fn a_torn_line_costs_one_trial_and_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = experiment(tmp.path(), 3);
    let run = tmp.path().join("run");
    let out = debug_run(&exp, &run, true);
    assert!(out.status.success(), "{}", stderr(&out));
    let trials = run.join("trials.jsonl");
    let text = std::fs::read_to_string(&trials).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3);
    let half = &lines[1][..lines[1].len() / 2];
    lines[1] = half;
    std::fs::write(&trials, lines.join("\n") + "\n").unwrap();

    let out = tare(&[OsStr::new("report"), run.as_os_str()]);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(report.contains("line 2 is torn"), "{report}");

    let out = tare(&[
        OsStr::new("run"),
        OsStr::new("--debug-mode"),
        OsStr::new("-q"),
        OsStr::new("--resume"),
        run.as_os_str(),
    ]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("trials.jsonl line 2 is torn"), "{err}");
    no_temporary_files(&run);
}

/// Unmounts the tmpfs when the test ends, failed or not.
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Regression: a run that filled its disk ended with the OS error alone,
/// no word on resuming it, and left `report.tmp~` behind. On a tmpfs too
/// small for the run: the error names the cause once and says how to
/// resume; no temporary file is left.
#[test]
fn a_full_disk_says_how_to_resume_and_leaves_no_temporary_file() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = experiment(tmp.path(), 40);
    // How much the run's files take: everything but the trials, in whole
    // pages (as tmpfs counts), and the trials.
    let probe = tmp.path().join("probe");
    let out = debug_run(&exp, &probe, true);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = 4096u64;
    let mut before_trials = 0;
    for entry in walk(&probe) {
        let name = entry.file_name().unwrap().to_string_lossy().into_owned();
        if name == "trials.jsonl" || name.starts_with("report") {
            continue;
        }
        let len = std::fs::metadata(&entry).unwrap().len();
        before_trials += len.div_ceil(page).max(1) * page;
    }
    let trials = std::fs::metadata(probe.join("trials.jsonl")).unwrap().len();
    let size = before_trials + (trials / 2).div_ceil(page) * page + 4 * page;

    let mnt = tmp.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args([
            "-t",
            "tmpfs",
            "-o",
            &format!("size={size}"),
            "tare-test-enospc",
        ])
        .arg(&mnt)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipped: cannot mount a tmpfs here (not root?)");
        return;
    }
    let _unmount = Mount(mnt.clone());
    let run = mnt.join("run");
    let out = debug_run(&exp, &run, true);
    // The run's first line (what it runs, where), then the error's one line.
    let all = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    let err = all.lines().last().unwrap_or_default();
    assert!(err.starts_with("tare: the run stopped"), "{all}");
    assert!(
        err.contains(&format!(
            "resume with `tare run --resume {}`",
            run.display()
        )),
        "{err}"
    );
    assert_eq!(err.matches("No space left on device").count(), 1, "{err}");
    no_temporary_files(&run);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
