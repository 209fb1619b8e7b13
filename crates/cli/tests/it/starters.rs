//! `tare init`, `tare completions`, `tare man` and `tare --version`, through
//! the real binary: every starter `tare init` writes passes `tare run
//! --check`; the generated completion scripts and man pages are well formed.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::tare_in as tare;

fn ok(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn every_starter_is_written_and_passes_check() {
    let dir = tempfile::tempdir().unwrap();
    for kind in tare_runner::starter::kinds() {
        let out = tare(&["init", kind], dir.path());
        ok(&out, &format!("tare init {kind}"));
        let file = format!("{kind}.toml");
        assert!(dir.path().join(&file).is_file(), "{file} written");
        let check = tare(&["run", "--check", &file], dir.path());
        let text = ok(&check, &format!("tare run --check {file}"));
        assert!(text.contains("cells"), "{kind}: {text}");
    }
    // The default kind is the embedded default target.
    let out = tare(&["init", "--out", "-"], dir.path());
    assert!(ok(&out, "tare init --out -").contains("kind = \"tare-serve\""));
}

#[test]
fn init_never_replaces_a_file_unless_told() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("mine.toml"), "# my experiment\n").unwrap();
    let out = tare(&["init", "nginx", "--out", "mine.toml"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("mine.toml exists"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("mine.toml")).unwrap(),
        "# my experiment\n"
    );
    let out = tare(
        &["init", "nginx", "--out", "mine.toml", "--force"],
        dir.path(),
    );
    ok(&out, "tare init --force");
    let text = std::fs::read_to_string(dir.path().join("mine.toml")).unwrap();
    assert!(text.contains("kind = \"nginx\""), "{text}");

    let out = tare(&["init", "apache"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("apache") && err.contains("postgres"), "{err}");
}

#[test]
fn completions_are_generated_for_each_shell() {
    let dir = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let text = ok(&tare(&["completions", shell], dir.path()), shell);
        for word in ["tare", "run", "compare", "resume"] {
            assert!(text.contains(word), "{shell} completions name {word}");
        }
    }
    // bash parses the script it would source.
    let script = dir.path().join("tare.bash");
    std::fs::write(
        &script,
        ok(&tare(&["completions", "bash"], dir.path()), "bash"),
    )
    .unwrap();
    let st = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .status()
        .unwrap();
    assert!(st.success(), "bash -n on the completion script");
    let out = tare(&["completions", "tcsh"], dir.path());
    assert_eq!(out.status.code(), Some(2), "an unknown shell is refused");
}

#[test]
fn man_pages_are_generated() {
    let dir = tempfile::tempdir().unwrap();
    let page = ok(&tare(&["man"], dir.path()), "tare man");
    assert!(
        page.starts_with(".ie") || page.contains(".TH tare"),
        "{page}"
    );
    assert!(page.contains(".TH tare 1"), "{page}");
    assert!(page.contains("run") && page.contains("compare"));
    ok(
        &tare(&["man", "--dir", "pages"], dir.path()),
        "tare man --dir",
    );
    for f in ["tare.1", "tare-run.1", "tare-http.1", "tare-init.1"] {
        let p = dir.path().join("pages").join(f);
        let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(text.contains(".TH"), "{f}");
    }
}

#[test]
fn version_names_the_version_and_the_commit() {
    let dir = tempfile::tempdir().unwrap();
    let line = ok(&tare(&["--version"], dir.path()), "tare --version");
    let want = format!("tare {}", env!("CARGO_PKG_VERSION"));
    assert!(line.starts_with(&want), "{line}");
    // Built from a git checkout (this test runs in one): the commit follows.
    let in_git = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .is_ok_and(|o| o.status.success());
    if in_git {
        assert!(
            line.trim_end().ends_with(')') && line.contains(" ("),
            "{line}"
        );
    }
}

/// Regression: `tare run --check FILE | head -1` panicked with "failed
/// printing to stdout: Broken pipe" and a backtrace; `tare completions
/// powershell | head -c 10` printed "tare: Broken pipe" and exited 2.
#[test]
fn output_cut_short_by_its_reader_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    // 400 cells, a line each in --check's listing: more than a pipe holds
    // (64 KiB), so tare is still writing when its reader goes away.
    let mut text = String::from("[target]\nkind = \"tare-serve\"\n[factors]\nconnections = [");
    text.push_str(
        &(1..=400)
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(", "),
    );
    text.push_str("]\nplacement = [\"native\"]\n[load]\nthreads = 1\n");
    std::fs::write(dir.path().join("many.toml"), text).unwrap();
    cut_short(&["run", "--check", "many.toml"], dir.path());
    cut_short(&["completions", "powershell"], dir.path());
}

/// Runs tare, reads a little of its output and goes away, as `head` does.
fn cut_short(args: &[&str], dir: &Path) {
    use std::io::Read as _;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_tare"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    out.read_exact(&mut first).unwrap();
    drop(out);
    let err = crate::support::stderr_of(&mut child);
    let status = child.wait().unwrap();
    assert!(err.is_empty(), "tare {args:?} said: {err}");
    assert!(
        matches!(status.code(), Some(0) | Some(141)),
        "tare {args:?}: {status:?}"
    );
}
