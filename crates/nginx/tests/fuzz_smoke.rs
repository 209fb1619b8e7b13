//! Runs the nginx configuration fuzz target (crates/nginx/fuzz) for a
//! bounded time, so every test run also fuzzes. Needs `cargo fuzz`
//! (installed by scripts/setup.sh); the fuzz build uses nightly flags on
//! the stable toolchain through `RUSTC_BOOTSTRAP=1`.

#[test]
fn config_parser_and_builder_survive_bounded_fuzzing() {
    fuzz("config", "seeds", 10);
}

/// This crate's fuzz target `target` for `seconds` (`tare_testbed::fuzz::run`).
fn fuzz(target: &str, seeds: &str, seconds: u32) {
    tare_testbed::fuzz::run(env!("CARGO_MANIFEST_DIR"), target, seeds, seconds);
}
