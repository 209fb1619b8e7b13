//! Fuzzes tare serve's request parser: whatever bytes a client sends, in
//! whatever two reads they arrive, it never panics, never consumes more
//! than it was given, and answers a well-formed stream the same way
//! whole or split (`tare_serve::fuzzing::requests`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tare_serve::fuzzing::requests(data));
