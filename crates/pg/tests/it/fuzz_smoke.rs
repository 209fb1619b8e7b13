//! Runs tare pg's fuzz targets (crates/pg/fuzz: the server's replies, the
//! start-up exchange, pgbench scripts, the password file) for a bounded
//! time each, so every test run also fuzzes. Needs `cargo fuzz` (installed
//! by scripts/setup.sh); the fuzz build uses nightly flags on the stable
//! toolchain through `RUSTC_BOOTSTRAP=1`.

#[test]
fn backend_messages_survive_bounded_fuzzing() {
    fuzz("backend", "seeds/backend", 3);
}

#[test]
fn startup_exchange_survives_bounded_fuzzing() {
    fuzz("startup", "seeds/startup", 3);
}

#[test]
fn script_parser_survives_bounded_fuzzing() {
    fuzz("script", "seeds/script", 4);
}

#[test]
fn password_file_survives_bounded_fuzzing() {
    fuzz("passfile", "seeds/passfile", 3);
}

/// This crate's fuzz target `target` for `seconds` (`tare_testbed::fuzz::run`).
fn fuzz(target: &str, seeds: &str, seconds: u32) {
    tare_testbed::fuzz::run(env!("CARGO_MANIFEST_DIR"), target, seeds, seconds);
}
