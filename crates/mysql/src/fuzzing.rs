//! Byte-taking entry points for the fuzz targets in `crates/mysql/fuzz`
//! (docs/fuzzing.md): whatever a server sends, the parsers return an
//! error or a value, never panic, and the scanner never claims more bytes
//! than it was given.

use crate::protocol::{self, Scanner};

/// Feeds `data` to a reply scanner in the chunks a read might deliver
/// (the first byte picks the split), then to the one-packet parsers.
pub fn replies(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let step = (first as usize % 37) + 1;
    for mut s in [Scanner::query(), Scanner::prepare()] {
        let mut at = 0;
        let mut end = 0;
        while end < rest.len() {
            end = (end + step).min(rest.len());
            match s.scan(&rest[at..end]) {
                Ok((used, _)) => {
                    assert!(at + used <= end, "the scanner used bytes it was not given");
                    at += used;
                }
                Err(_) => break,
            }
        }
    }
    let _ = protocol::parse_handshake(rest);
    let _ = protocol::parse_auth_reply(rest);
    let _ = protocol::parse_ok(rest);
    let _ = protocol::parse_err(rest);
    let _ = protocol::text_row(rest, (first % 8) as usize);
}
