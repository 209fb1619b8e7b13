//! Runs the wire-format fuzz target (crates/net/fuzz) for a bounded time,
//! so every test run also fuzzes (docs/fuzzing.md).

#[test]
fn wire_parsers_survive_bounded_fuzzing() {
    tare_testbed::fuzz::run(env!("CARGO_MANIFEST_DIR"), "wire", "seeds/wire", 3);
}
