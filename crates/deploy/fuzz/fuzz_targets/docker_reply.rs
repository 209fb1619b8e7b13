//! Fuzzes the reading of the Docker engine's answers (an HTTP/1.1 reply,
//! chunked or sized, a log's frames, an import's progress stream): whatever
//! the bytes, tare reads what it can and never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tare_deploy::fuzzing::docker_reply(data);
});
