//! Fuzzes the reading of `docker image inspect` output (`kind = "image"`):
//! whatever JSON the engine prints, an image's config is read into what
//! tare runs, or refused with a message; it never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tare_deploy::fuzzing::image_config(&String::from_utf8_lossy(data));
});
