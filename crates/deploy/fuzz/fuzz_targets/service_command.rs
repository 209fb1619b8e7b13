//! Fuzzes the reading of a service's command line (`kind = "command"`):
//! whatever text a user writes, `Service::placeholders` names the
//! placeholders it uses or the first mistake, and a deployment fills a
//! checked text in; neither panics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    tare_deploy::fuzzing::service_command(&text);
});
