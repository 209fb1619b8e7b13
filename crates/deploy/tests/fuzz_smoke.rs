//! Runs the guest-console fuzz target (crates/deploy/fuzz) for a bounded
//! time, so every test run also fuzzes it (docs/fuzzing.md).

#[test]
fn guest_console_reading_survives_bounded_fuzzing() {
    tare_testbed::fuzz::run(env!("CARGO_MANIFEST_DIR"), "vm_console", "seeds", 10);
}
