//! Fuzzes the merge of generators' records as they arrive from remote
//! hosts (docs/remote.md): each input line is one host's JSON record, read
//! as `tare_record::merge` gets it, with a clock offset taken from the
//! line's length; merging them returns a record or an error, never panics
//! or grows without bound (a start far from the others is refused).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tare_record::merge::{merge, Part};
use tare_record::LoadResult;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let parts: Vec<Part> = text
        .lines()
        .take(8)
        .enumerate()
        .map(|(i, line)| Part {
            host: format!("h{i}"),
            clock_offset_s: (line.len() % 7) as f64 - 3.0,
            clock_rtt_s: 0.001,
            result: serde_json::from_str::<LoadResult>(line).map_err(|e| e.to_string()),
        })
        .collect();
    let _ = merge(&parts);
});
