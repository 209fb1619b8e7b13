//! Runs the guest-console and Podman-output fuzz targets (crates/deploy/fuzz) for a bounded
//! time, so every test run also fuzzes it (docs/fuzzing.md).

#[test]
fn guest_console_reading_survives_bounded_fuzzing() {
    tare_testbed::fuzz::run(env!("CARGO_MANIFEST_DIR"), "vm_console", "seeds", 10);
}

#[test]
fn podman_output_reading_survives_bounded_fuzzing() {
    tare_testbed::fuzz::run(
        env!("CARGO_MANIFEST_DIR"),
        "podman_output",
        "seeds_podman",
        5,
    );
}
