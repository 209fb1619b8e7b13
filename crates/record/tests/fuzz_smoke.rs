//! Runs the merge fuzz target (crates/record/fuzz) for a bounded time, so
//! every test run also fuzzes the reading of remote generators' records.

#[test]
fn merge_survives_bounded_fuzzing() {
    tare_testbed::fuzz::run(env!("CARGO_MANIFEST_DIR"), "merge", "seeds/merge", 5);
}
