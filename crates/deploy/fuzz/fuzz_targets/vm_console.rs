//! Fuzzes the reading of a guest's serial console: whatever bytes a guest
//! (its kernel, its init, its server) prints, `guest_report` returns what
//! the `facts` line says or nothing, and `console_tail` (an error's last
//! lines, a panic line first) returns some of its lines; neither panics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The console log is read lossily as text, as `placements::vm` does.
    let text = String::from_utf8_lossy(data);
    let _ = tare_deploy::vm::init::guest_report(&text);
    let _ = tare_deploy::vm::init::console_tail(&text, 8);
});
