//! Fuzzes the responder's parsers of a client's bytes: the connection
//! header and the UDP request header never panic, and whatever they accept
//! is within the documented sizes and encodes back to the same bytes
//! (`tare_net::fuzzing::wire`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tare_net::fuzzing::wire(data));
