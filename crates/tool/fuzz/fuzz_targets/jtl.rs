//! Fuzzes JMeter's results file (JTL) parser: never a panic, every
//! completed request in the histogram and the timeline once
//! (`tare_tool::fuzzing::jtl`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tare_tool::fuzzing::jtl(data));
