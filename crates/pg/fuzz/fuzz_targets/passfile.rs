//! Fuzzes the password file lookup (`~/.pgpass`), a user file
//! (`tare_pg::fuzzing::passfile`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tare_pg::fuzzing::passfile(data));
