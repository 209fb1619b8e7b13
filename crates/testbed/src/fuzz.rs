//! Bounded fuzzing inside the test suite: each crate with a parser runs its
//! cargo-fuzz targets (its `fuzz/` directory) for a few seconds, so every
//! test run also fuzzes (docs/fuzzing.md). Needs `cargo fuzz` (installed by
//! scripts/setup.sh); the fuzz build uses nightly flags on the stable
//! toolchain through `RUSTC_BOOTSTRAP=1`.

use std::os::fd::AsRawFd;
use std::process::Command;

/// Where every crate's fuzz build goes: one directory for all of them, so
/// libFuzzer and the dependencies the fuzz crates share are compiled once
/// per suite instead of once per crate (each fuzz crate is its own
/// workspace; with a target directory each, the fuzz builds were most of
/// the suite's time). `$CARGO_TARGET_DIR/fuzz` when that is set, else
/// `target/fuzz` at the top of the workspace.
fn shared_target_dir(crate_dir: &str) -> std::path::PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => std::path::PathBuf::from(dir).join("fuzz"),
        // crate_dir is crates/<name>: the workspace is two levels up.
        None => std::path::Path::new(crate_dir).join("../../target/fuzz"),
    }
}

/// Holds an exclusive lock named after fuzz target `target` in the shared
/// target directory until dropped. Two crates may name a target alike (the
/// net and tool crates' `wire`): their binaries are the same path there, and
/// `cargo fuzz run` runs that path after its build, so without the lock one
/// smoke test could fuzz the other crate's binary.
fn lock_target_name(crate_dir: &str, target: &str) -> std::fs::File {
    let dir = shared_target_dir(crate_dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = std::fs::File::create(dir.join(format!(".smoke-{target}.lock"))).unwrap();
    // SAFETY: flock on a descriptor this function owns; the lock goes with
    // the file when the caller drops it.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(rc, 0, "locking the fuzz target name {target}");
    file
}

/// Runs fuzz target `target` of the crate at `crate_dir` (its
/// `CARGO_MANIFEST_DIR`) for `seconds`, its checked-in seeds in `seeds`
/// (under `fuzz/`); fails with the fuzzer's last 40 lines when it finds a
/// crash.
pub fn run(crate_dir: &str, target: &str, seeds: &str, seconds: u32) {
    run_within(crate_dir, target, seeds, seconds, 1024);
}

/// [`run`], failing an input that makes the target's process hold more
/// than `rss_mb` MB, or ask for a quarter of that in one allocation: for a
/// parser of a person's file, whose memory must stay near the file's size
/// (docs/fuzzing.md; a `duration = "1000000h"` once asked for 28.8 GB).
pub fn run_within(crate_dir: &str, target: &str, seeds: &str, seconds: u32, rss_mb: u32) {
    let has_cargo_fuzz = Command::new("cargo")
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        has_cargo_fuzz,
        "cargo-fuzz is missing: run scripts/setup.sh (cargo install cargo-fuzz)"
    );
    // New inputs go to a scratch corpus, never into the checked-in seeds.
    let corpus =
        std::env::temp_dir().join(format!("tare-fuzz-corpus-{target}-{}", std::process::id()));
    std::fs::create_dir_all(&corpus).unwrap();
    let same_name = lock_target_name(crate_dir, target);
    let out = Command::new("cargo")
        .current_dir(crate_dir)
        .env("RUSTC_BOOTSTRAP", "1")
        // scripts/test.sh lints the workspace through clippy-driver as the
        // workspace's rustc; the fuzz builds go without it, here as in its
        // fuzz-build phase, so they agree and nothing is built twice.
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CLIPPY_ARGS")
        // An unoptimised build (`--dev`): it compiles in half the time of
        // cargo fuzz's release build (87 s against 181 s for the deploy
        // target here) and these runs last seconds, so the build is most
        // of their cost; longer campaigns use the release build
        // (docs/fuzzing.md, "Running a target longer").
        .args(["fuzz", "run", "--dev", "-s", "none", "--target-dir"])
        .arg(shared_target_dir(crate_dir))
        .arg(target)
        .arg(&corpus)
        .arg(format!("fuzz/{seeds}"))
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .arg(format!("-rss_limit_mb={rss_mb}"))
        .arg(format!("-malloc_limit_mb={}", rss_mb / 4))
        .output()
        .expect("cargo fuzz runs");
    drop(same_name);
    let _ = std::fs::remove_dir_all(&corpus);
    let log = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = log.lines().collect();
    assert!(
        out.status.success(),
        "fuzzing {target} found a failure:\n{}",
        lines[lines.len().saturating_sub(40)..].join("\n")
    );
    assert!(log.contains("Done "), "fuzzer {target} did not run:\n{log}");
}

#[cfg(test)]
mod tests {
    use super::{lock_target_name, shared_target_dir};
    use std::os::fd::AsRawFd;

    #[test]
    fn a_target_name_is_held_by_one_smoke_test_at_a_time() {
        let crate_dir = env!("CARGO_MANIFEST_DIR");
        let name = format!("lock-test-{}", std::process::id());
        let held = lock_target_name(crate_dir, &name);
        let path = shared_target_dir(crate_dir).join(format!(".smoke-{name}.lock"));
        let other = std::fs::File::open(&path).unwrap();
        // SAFETY: a non-blocking flock on a descriptor this test owns.
        let try_lock = || unsafe { libc::flock(other.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        assert_eq!(try_lock(), -1, "a second holder must wait");
        drop(held);
        assert_eq!(try_lock(), 0, "free once the first is dropped");
        drop(other);
        std::fs::remove_file(&path).unwrap();
    }
}
