//! Entry point for the fuzz target in `crates/serve/fuzz`, not an API: the
//! request parser fed bytes the way a worker's reads deliver them.

use crate::worker::parse_requests;

/// What a connection's bytes ask for, read in two pieces split at `split`
/// as a worker reads them (the unparsed tail of one read waits for the
/// next): the answers (close after it, HEAD) and whether a request was
/// malformed. Stops at a malformed request or one that closes.
fn answers(data: &[u8], split: usize) -> (Vec<(bool, bool)>, bool) {
    let mut inbuf: Vec<u8> = Vec::new();
    let mut all = Vec::new();
    for piece in [&data[..split], &data[split..]] {
        inbuf.extend_from_slice(piece);
        let mut answers = Vec::new();
        let (consumed, bad) = parse_requests(&inbuf, &mut answers);
        assert!(
            consumed <= inbuf.len(),
            "consumed {consumed} of {}",
            inbuf.len()
        );
        if let Some(i) = answers.iter().position(|a| a.0) {
            assert_eq!(i + 1, answers.len(), "answers after a close");
        }
        if bad {
            return (all, true);
        }
        // Parsing the consumed bytes again finds the same requests.
        let mut again = Vec::new();
        assert_eq!(
            parse_requests(&inbuf[..consumed], &mut again),
            (consumed, false)
        );
        assert_eq!(again, answers, "the consumed prefix parses differently");
        let closes = answers.last().is_some_and(|a| a.0);
        all.extend(answers);
        if closes {
            break;
        }
        inbuf.drain(..consumed);
    }
    (all, false)
}

/// Requests as a client sends them: whole, and split at the first byte's
/// share of the rest; a stream that is well formed either way asks for
/// the same responses.
pub fn requests(data: &[u8]) {
    let Some((&first, data)) = data.split_first() else {
        return;
    };
    let split = first as usize * data.len() / 256;
    let whole = answers(data, data.len());
    let split = answers(data, split);
    assert_eq!(whole.1, split.1, "malformed only when split (or whole)");
    // A malformed request drops the answers of its read, so with one the
    // answers depend on where reads end.
    if !whole.1 {
        assert_eq!(whole.0, split.0, "answers differ when split");
    }
}
