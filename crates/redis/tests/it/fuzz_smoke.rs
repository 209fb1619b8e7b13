//! Runs tare redis's fuzz target (crates/redis/fuzz: the RESP reply
//! readers) for a bounded time, so every test run also fuzzes. Needs
//! `cargo fuzz` (installed by scripts/setup.sh); the fuzz build uses
//! nightly flags on the stable toolchain through `RUSTC_BOOTSTRAP=1`.

#[test]
fn resp_replies_survive_bounded_fuzzing() {
    tare_testbed::fuzz::run(env!("CARGO_MANIFEST_DIR"), "resp", "seeds/resp", 4);
}
