//! Runs the nginx configuration fuzz target (crates/nginx/fuzz) for a
//! bounded time, so every test run also fuzzes. Needs `cargo fuzz`
//! (installed by scripts/setup.sh); the fuzz build uses nightly flags on
//! the stable toolchain through `RUSTC_BOOTSTRAP=1`.

#[test]
fn config_parser_and_builder_survive_bounded_fuzzing() {
    tare_testbed::fuzz::run_within(env!("CARGO_MANIFEST_DIR"), "config", "seeds", 4, MEMORY_MB);
}

/// The parser of a person's file runs within a memory limit: 384 MB for
/// the process, 96 MB for one allocation (`tare_testbed::fuzz::run_within`).
const MEMORY_MB: u32 = 384;
