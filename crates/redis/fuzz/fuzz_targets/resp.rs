//! Fuzzes the RESP reply readers: whatever bytes a server sends, in
//! whatever pieces they arrive, the incremental parser never panics and
//! finds the same replies whole or split; the whole-value parser never
//! panics, and a value it reads is one reply to the incremental parser.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tare_redis::resp::{parse_value, Parser, Reply};

/// The replies in `pieces`, or `Err` at the first protocol error.
fn replies(pieces: &[&[u8]]) -> Result<Vec<Reply>, ()> {
    let mut p = Parser::new();
    let mut out = Vec::new();
    for piece in pieces {
        p.feed(piece, |r| out.push(r)).map_err(|_| ())?;
    }
    Ok(out)
}

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let body = &data[1..];
    let split = (data[0] as usize * body.len()) / 256;
    let whole = replies(&[body]);
    let parts = replies(&[&body[..split], &body[split..]]);
    assert_eq!(whole, parts, "replies differ when split at {split}");
    if let Ok(Some((_, used))) = parse_value(body) {
        assert!(used <= body.len());
        let one = replies(&[&body[..used]]).expect("a value parse_value read is RESP");
        assert_eq!(one.len(), 1, "one value, one reply");
    }
});
