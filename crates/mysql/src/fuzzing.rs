//! Byte-taking entry points for the fuzz targets in `crates/mysql/fuzz`
//! (docs/fuzzing.md): whatever a server sends, the parsers return an
//! error or a value, never panic; the reply scanner never claims more
//! bytes than it was given, and finds the same replies whether the bytes
//! arrive whole or in pieces.

use crate::protocol::{self, Reply, Scanner};

/// Every reply `scanner` finds in `data` fed `step` bytes at a time (the
/// whole of it when `step` is 0), or `Err` at the first protocol error.
fn scan_all(mut scanner: Scanner, data: &[u8], step: usize) -> Result<Vec<Reply>, ()> {
    let mut out = Vec::new();
    let (mut at, mut end) = (0, 0);
    while end < data.len() {
        end = if step == 0 {
            data.len()
        } else {
            (end + step).min(data.len())
        };
        loop {
            let (used, r) = scanner.scan(&data[at..end]).map_err(|_| ())?;
            assert!(at + used <= end, "the scanner used bytes it was not given");
            at += used;
            match r {
                Some(r) => out.push(r),
                None => break,
            }
        }
    }
    Ok(out)
}

/// The first byte picks the piece size; the rest is what a server sent.
pub fn replies(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let step = (first as usize % 37) + 1;
    for make in [Scanner::query, Scanner::prepare] {
        let whole = scan_all(make(), rest, 0);
        let pieces = scan_all(make(), rest, step);
        if let (Ok(w), Ok(p)) = (&whole, &pieces) {
            assert_eq!(w, p, "replies differ when fed {step} bytes at a time");
        }
    }
    let _ = protocol::parse_handshake(rest);
    let _ = protocol::parse_auth_reply(rest);
    let _ = protocol::parse_ok(rest);
    let _ = protocol::parse_err(rest);
    let _ = protocol::text_row(rest, (first % 8) as usize);
}
