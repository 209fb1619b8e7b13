//! Fuzzes the external load tools' output parsers (each tool's) and
//! the argument placeholders: never a panic, and every number a parser
//! accepts is finite and not negative (`tare_tool::fuzzing::external`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tare_tool::fuzzing::external(data));
