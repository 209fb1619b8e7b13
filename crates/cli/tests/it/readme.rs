//! The README is what a newcomer reads first: every command it shows exists
//! (`tare <cmd> --help` succeeds), every experiment it shows or names passes
//! `tare run --check`, every page it links exists, and it stays short
//! (under 200 lines, no table cell over 300 characters).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).expect("README.md")
}

use crate::support::tare_in as tare;

fn assert_ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The README's fenced blocks of one language, in order.
fn blocks(text: &str, lang: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (&mut current, line.trim_start().strip_prefix("```")) {
            (None, Some(info)) if info.trim() == lang => current = Some(String::new()),
            (None, Some(_)) => current = Some("\u{0}".into()), // another language: skipped
            (Some(block), Some(_)) => {
                if !block.starts_with('\u{0}') {
                    out.push(std::mem::take(block));
                }
                current = None;
            }
            (Some(block), None) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(current.is_none(), "README: a ``` block is never closed");
    out
}

/// Every `tare <sub> [<sub>]` the README names, in code spans and in its
/// shell blocks, as the words clap knows (flags and arguments dropped).
fn commands(text: &str) -> BTreeSet<Vec<String>> {
    let mut spans: Vec<String> = blocks(text, "sh")
        .iter()
        .flat_map(|b| b.lines().map(str::to_owned).collect::<Vec<_>>())
        .collect();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            spans.push(part.to_owned());
        }
    }
    let mut found = BTreeSet::new();
    for span in spans {
        let span = span.split('#').next().unwrap_or_default();
        let words: Vec<&str> = span.split_whitespace().collect();
        for (i, w) in words.iter().enumerate() {
            if *w != "tare" && !(*w == "run" && i > 0 && words[i - 1] == "--") {
                continue;
            }
            let start = if *w == "tare" { i + 1 } else { i };
            let cmd: Vec<String> = words[start..]
                .iter()
                .take_while(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
                .filter(|w| !w.starts_with('-'))
                .take(2)
                .map(|w| w.to_string())
                .collect();
            if !cmd.is_empty() {
                found.insert(cmd);
            }
        }
    }
    found
}

#[test]
fn every_command_the_readme_shows_exists() {
    let text = readme();
    let commands = commands(&text);
    for want in [&["run"][..], &["http"], &["init"], &["compare"]] {
        assert!(
            commands.contains(&want.iter().map(|w| w.to_string()).collect::<Vec<_>>()),
            "README should show tare {want:?}; found {commands:?}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    for cmd in &commands {
        // `tare nginx parse` is a command, `tare run check` is not: a second
        // word is kept only where the first is a command with subcommands.
        let mut args: Vec<&str> = cmd.iter().map(String::as_str).collect();
        args.push("--help");
        let out = tare(&args, dir.path());
        if !out.status.success() && args.len() == 3 {
            let out = tare(&[args[0], "--help"], dir.path());
            assert_ok(&out, &format!("tare {} --help", args[0]));
        } else {
            assert_ok(&out, &format!("tare {} --help", cmd.join(" ")));
        }
    }
}

#[test]
fn every_experiment_the_readme_shows_or_names_passes_check() {
    let text = readme();
    let dir = tempfile::tempdir().unwrap();
    let shown = blocks(&text, "toml");
    assert!(!shown.is_empty(), "README shows no experiment file");
    for (i, toml) in shown.iter().enumerate() {
        let file = dir.path().join(format!("readme-{i}.toml"));
        std::fs::write(&file, toml).unwrap();
        // The files an experiment copies are relative to it.
        std::fs::create_dir_all(dir.path().join("site")).unwrap();
        let out = tare(&["run", "--check", file.to_str().unwrap()], dir.path());
        assert_ok(&out, &format!("README's experiment block {i}:\n{toml}"));
    }
    let mut named = 0;
    for word in text.split(|c: char| c.is_whitespace() || "`()[]".contains(c)) {
        if word.starts_with("examples/") && word.ends_with(".toml") {
            let out = tare(&["run", "--check", word], &root());
            assert_ok(&out, &format!("tare run --check {word}"));
            named += 1;
        }
    }
    assert!(named > 0, "README names no example file");
}

#[test]
fn the_readme_is_short_and_its_links_exist() {
    let text = readme();
    let lines = text.lines().count();
    assert!(lines < 200, "README has {lines} lines (under 200)");
    for line in text.lines().filter(|l| l.starts_with('|')) {
        for cell in line.split('|') {
            let n = cell.chars().count();
            assert!(n <= 300, "a README table cell of {n} characters: {cell}");
        }
    }
    for front in ["README.md", "docs/README.md", "bench/README.md"] {
        let page = root().join(front);
        let text = std::fs::read_to_string(&page).unwrap();
        let base = page.parent().unwrap();
        for target in text.split("](").skip(1) {
            let link = target.split(')').next().unwrap_or_default();
            let path = link.split('#').next().unwrap_or_default();
            if path.is_empty() || path.contains("://") || path.starts_with("mailto:") {
                continue;
            }
            assert!(
                base.join(path).exists(),
                "{front} links {link}, which does not exist"
            );
        }
    }
}
