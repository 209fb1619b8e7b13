//! Runs the tool parsers' fuzz targets (crates/tool/fuzz) for a bounded
//! time, so every test run also fuzzes (docs/fuzzing.md).

#[test]
fn tool_output_parsers_survive_bounded_fuzzing() {
    tare_testbed::fuzz::run(env!("CARGO_MANIFEST_DIR"), "outputs", "seeds/outputs", 3);
}

#[test]
fn agent_wire_survives_bounded_fuzzing() {
    tare_testbed::fuzz::run(env!("CARGO_MANIFEST_DIR"), "wire", "seeds/wire", 3);
}

#[test]
fn external_load_tool_parsers_survive_bounded_fuzzing() {
    tare_testbed::fuzz::run(env!("CARGO_MANIFEST_DIR"), "external", "seeds/external", 3);
}

#[test]
fn jmeter_results_parser_survives_bounded_fuzzing() {
    tare_testbed::fuzz::run(env!("CARGO_MANIFEST_DIR"), "jtl", "seeds/jtl", 3);
}
