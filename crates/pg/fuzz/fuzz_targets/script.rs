//! Fuzzes pgbench scripts, user files: parsed and compiled in every query
//! mode, each command run once (`tare_pg::fuzzing::script`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tare_pg::fuzzing::script(data));
