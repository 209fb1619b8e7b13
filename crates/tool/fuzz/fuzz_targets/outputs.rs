//! Fuzzes the three tools' output parsers (fio JSON, hpcc's summary,
//! sysbench's text): never a panic, and every metric accepted is finite
//! (`tare_tool::fuzzing::outputs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tare_tool::fuzzing::outputs(data));
