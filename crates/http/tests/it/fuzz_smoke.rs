//! Runs the HTTP engine's fuzz targets (crates/http/fuzz) for a bounded
//! time each, so every test run also fuzzes: the response parser, and
//! the parsers of a request mix's files (a URL file, a requests file).
//! Needs `cargo fuzz` (installed by scripts/setup.sh); the fuzz build uses
//! nightly flags on the stable toolchain through `RUSTC_BOOTSTRAP=1`.

#[test]
fn response_parser_survives_bounded_fuzzing() {
    tare_testbed::fuzz::run(env!("CARGO_MANIFEST_DIR"), "response", "seeds", 6);
}

/// A person's file: memory must stay near its size (docs/fuzzing.md).
#[test]
fn url_file_parser_survives_bounded_fuzzing() {
    tare_testbed::fuzz::run_within(env!("CARGO_MANIFEST_DIR"), "url_file", "url-seeds", 4, 512);
}

#[test]
fn requests_file_parser_survives_bounded_fuzzing() {
    tare_testbed::fuzz::run_within(
        env!("CARGO_MANIFEST_DIR"),
        "requests_file",
        "requests-seeds",
        4,
        512,
    );
}
