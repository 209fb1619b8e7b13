//! Runs tare serve's request-parser fuzz target (crates/serve/fuzz) for a
//! bounded time, so every test run also fuzzes. Needs `cargo fuzz`
//! (installed by scripts/setup.sh); the fuzz build uses nightly flags on
//! the stable toolchain through `RUSTC_BOOTSTRAP=1`.

#[test]
fn request_parser_survives_bounded_fuzzing() {
    fuzz("requests", "seeds", 3);
}

/// This crate's fuzz target `target` for `seconds` (`tare_testbed::fuzz::run`).
fn fuzz(target: &str, seeds: &str, seconds: u32) {
    tare_testbed::fuzz::run(env!("CARGO_MANIFEST_DIR"), target, seeds, seconds);
}
