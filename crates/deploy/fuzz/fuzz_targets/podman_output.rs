//! Fuzzes the reading of what Podman and the system print for the Podman
//! placements (listings, `podman info`, /etc/subuid, a pasta command line):
//! whatever the bytes, tare reads what it can and never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tare_deploy::fuzzing::podman_output(data);
});
