//! Fuzzes what the tool agent reads from its socket (a request line) and
//! what the engine reads back (a reply), and the mountinfo reader
//! (`tare_tool::fuzzing::wire`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tare_tool::fuzzing::wire(data));
