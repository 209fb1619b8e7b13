//! Runs tare serve's request-parser fuzz target (crates/serve/fuzz) for a
//! bounded time, so every test run also fuzzes. Needs `cargo fuzz`
//! (installed by scripts/setup.sh); the fuzz build uses nightly flags on
//! the stable toolchain through `RUSTC_BOOTSTRAP=1`.

use std::process::Command;

#[test]
fn request_parser_survives_bounded_fuzzing() {
    fuzz("requests", "seeds", 8);
}

/// Runs fuzz target `target` of this crate's `fuzz/` for `seconds`, its
/// checked-in seeds in `seeds` (under `fuzz/`); fails with the fuzzer's last
/// 40 lines when it finds a crash.
fn fuzz(target: &str, seeds: &str, seconds: u32) {
    let has_cargo_fuzz = Command::new("cargo")
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        has_cargo_fuzz,
        "cargo-fuzz is missing: run scripts/setup.sh (cargo install cargo-fuzz)"
    );
    let dir = env!("CARGO_MANIFEST_DIR");
    // New inputs go to a scratch corpus, never into the checked-in seeds.
    let corpus =
        std::env::temp_dir().join(format!("tare-fuzz-corpus-{target}-{}", std::process::id()));
    std::fs::create_dir_all(&corpus).unwrap();
    let out = Command::new("cargo")
        .current_dir(dir)
        .env("RUSTC_BOOTSTRAP", "1")
        .args(["fuzz", "run", "-s", "none", target])
        .arg(&corpus)
        .arg(format!("fuzz/{seeds}"))
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .arg("-rss_limit_mb=1024")
        .output()
        .expect("cargo fuzz runs");
    let _ = std::fs::remove_dir_all(&corpus);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "fuzzing {target} found a failure:\n{}",
        log.lines()
            .rev()
            .take(40)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(log.contains("Done "), "fuzzer {target} did not run:\n{log}");
}
