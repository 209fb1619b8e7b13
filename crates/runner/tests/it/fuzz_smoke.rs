//! Runs the experiment-file fuzz target (crates/runner/fuzz) for a bounded
//! time, so every test run also fuzzes. Needs `cargo fuzz` (installed by
//! scripts/setup.sh); the fuzz build uses nightly flags on the stable
//! toolchain through `RUSTC_BOOTSTRAP=1`.

#[test]
fn experiment_parser_survives_bounded_fuzzing() {
    tare_testbed::fuzz::run_within(
        env!("CARGO_MANIFEST_DIR"),
        "experiment",
        "seeds",
        4,
        MEMORY_MB,
    );
}

/// `tare_record::merge` of records as remote generators send them: fuzzed
/// here, where the fuzz build already has tare-record (docs/remote.md).
#[test]
fn merging_remote_records_survives_bounded_fuzzing() {
    fuzz("merge", "merge-seeds", 3);
}

/// The parser of a person's file runs within a memory limit: 384 MB for
/// the process, 96 MB for one allocation (`tare_testbed::fuzz::run_within`).
const MEMORY_MB: u32 = 384;

/// This crate's fuzz target `target` for `seconds` (`tare_testbed::fuzz::run`).
fn fuzz(target: &str, seeds: &str, seconds: u32) {
    tare_testbed::fuzz::run(env!("CARGO_MANIFEST_DIR"), target, seeds, seconds);
}
