//! Fuzzes the profile's parsers of the kernel's bytes: a perf ring's
//! records (`tare_monitor::profile::records::parse`) and `/proc/kallsyms`
//! text (`Kallsyms::parse`). Never a panic; a sample's callchain fits in
//! the bytes it came from; a lookup answers for any address.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tare_monitor::profile::{records, Kallsyms};

fuzz_target!(|data: &[u8]| {
    let mut out = Vec::new();
    records::parse(data, &mut out);
    let chained: usize = out.iter().map(|s| 40 + 8 * s.chain.len()).sum();
    assert!(chained <= data.len(), "{chained} bytes of samples from {}", data.len());
    let k = Kallsyms::parse(&String::from_utf8_lossy(data));
    for s in &out {
        let _ = k.lookup(s.ip);
    }
    let _ = k.lookup(u64::from_ne_bytes(
        data.get(..8).and_then(|b| b.try_into().ok()).unwrap_or([0; 8]),
    ));
});
