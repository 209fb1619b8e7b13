//! Fuzzes what tare pg reads from a server once connected: framing
//! (whole or split across reads), then each reply as the engine and the
//! session read it (`tare_pg::fuzzing::backend`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tare_pg::fuzzing::backend(data));
