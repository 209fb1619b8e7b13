//! Fuzzes the experiment file: whatever text a user's `.toml` holds,
//! `Experiment::parse` returns the experiment or an error naming the file,
//! line and key; it never panics.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use tare_runner::{ConfigSource, Experiment};

fuzz_target!(|data: &[u8]| {
    // `Experiment::load` reads the file with `read_to_string`: bytes that
    // are not UTF-8 are a read error and never reach the parser.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // A config variant's `file = ...` is read from disk, relative to the
    // examples (so the seeds' configs resolve). Device and kernel files
    // (`/dev/zero` never ends) are not the parser's business: skip them.
    if ["/dev", "/proc", "/sys"].iter().any(|p| text.contains(p)) {
        return;
    }
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../examples");
    let _ = Experiment::parse(
        text,
        Path::new("fuzz.toml"),
        &ConfigSource::RelativeTo(examples),
    );
});
