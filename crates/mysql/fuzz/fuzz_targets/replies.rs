//! Fuzzes what tare mysql reads from a server: the reply scanner (result
//! sets, OK, ERR, prepare replies) fed whole and in pieces, and the
//! handshake, authentication, OK, ERR and text-row parsers.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tare_mysql::fuzzing::replies(data);
});
