//! Runs the profile's perf-record fuzz target (crates/monitor/fuzz) for a
//! bounded time, so every test run also fuzzes. Needs `cargo fuzz`
//! (installed by scripts/setup.sh); the fuzz build uses nightly flags on
//! the stable toolchain through `RUSTC_BOOTSTRAP=1`.

#[test]
fn perf_records_survive_bounded_fuzzing() {
    tare_testbed::fuzz::run(env!("CARGO_MANIFEST_DIR"), "perf_records", "seeds", 3);
}
