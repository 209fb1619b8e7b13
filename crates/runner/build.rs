//! Records the commit tare was built from (`TARE_COMMIT`) for provenance,
//! and the line `tare --version` prints (`TARE_VERSION_LINE`: the version
//! and, when known, the commit). Best-effort: outside a git checkout (a
//! crates.io build) the commit stays unset.

use std::process::Command;

fn git(root: &std::path::Path, args: &[&str]) -> Option<String> {
    Command::new("git")
        .args(args)
        .current_dir(root)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

fn main() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // Rebuilt when HEAD moves, its branch gets a commit, or the index
    // changes; asked of git, so a worktree's own HEAD is the one watched.
    let branch = git(&root, &["symbolic-ref", "-q", "HEAD"]);
    for f in ["HEAD", "index"].into_iter().chain(branch.as_deref()) {
        if let Some(p) = git(
            &root,
            &["rev-parse", "--path-format=absolute", "--git-path", f],
        ) {
            if std::path::Path::new(&p).exists() {
                println!("cargo:rerun-if-changed={p}");
            }
        }
    }
    let commit =
        git(&root, &["describe", "--always", "--dirty", "--abbrev=12"]).unwrap_or_default();
    let version = env!("CARGO_PKG_VERSION");
    let line = if commit.is_empty() {
        version.to_string()
    } else {
        format!("{version} ({commit})")
    };
    println!("cargo:rustc-env=TARE_COMMIT={commit}");
    println!("cargo:rustc-env=TARE_VERSION_LINE={line}");
}
