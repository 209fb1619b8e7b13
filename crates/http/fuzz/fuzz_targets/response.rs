//! Fuzzes the HTTP response parser: whatever bytes a server sends, in
//! whatever pieces they arrive, the parser never panics, never claims more
//! bytes than it was given, and finds the same response end whether the
//! bytes come whole or split.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tare_http::response::{Parser, Progress};

/// Feeds `pieces` in order; returns the absolute end of the first complete
/// response, `Err(())` on a parse error, `Ok(None)` if still incomplete.
fn parse(head_request: bool, pieces: &[&[u8]]) -> Result<Option<usize>, ()> {
    let mut p = Parser::new(head_request);
    let mut offset = 0;
    for piece in pieces {
        match p.feed(piece) {
            Ok(Progress::Done { used }) => {
                assert!(used <= piece.len(), "used {used} of {}", piece.len());
                return Ok(Some(offset + used));
            }
            Ok(Progress::More) => offset += piece.len(),
            Err(_) => return Err(()),
        }
    }
    Ok(None)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let head_request = data[0] & 1 == 1;
    let body = &data[2..];
    let split = (data[1] as usize * body.len()) / 256;
    let whole = parse(head_request, &[body]);
    let split = parse(head_request, &[&body[..split], &body[split..]]);
    if let (Ok(Some(a)), Ok(Some(b))) = (whole, split) {
        assert_eq!(a, b, "response end differs when split");
    }
    if whole.is_ok_and(|w| w.is_some()) {
        assert!(split.is_ok(), "whole parses, split errors");
    }
});
