//! Runs the response-parser fuzz target (crates/http/fuzz) for a bounded
//! time, so every test run also fuzzes. Needs `cargo fuzz` (installed by
//! scripts/setup.sh); the fuzz build uses nightly flags on the stable
//! toolchain through `RUSTC_BOOTSTRAP=1`.

#[test]
fn response_parser_survives_bounded_fuzzing() {
    tare_testbed::fuzz::run(env!("CARGO_MANIFEST_DIR"), "response", "seeds", 20);
}
