//! Runs tare mysql's fuzz target (crates/mysql/fuzz: the reply scanner and
//! the packet parsers) for a bounded time, so every test run also fuzzes.
//! Needs `cargo fuzz` (installed by scripts/setup.sh); the fuzz build uses
//! nightly flags on the stable toolchain through `RUSTC_BOOTSTRAP=1`.

#[test]
fn mysql_replies_survive_bounded_fuzzing() {
    tare_testbed::fuzz::run(env!("CARGO_MANIFEST_DIR"), "replies", "seeds/replies", 3);
}
