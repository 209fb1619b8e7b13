//! Fuzzes the start-up and authentication state machine with whatever a
//! server answers (`tare_pg::fuzzing::startup`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tare_pg::fuzzing::startup(data));
