//! Byte-taking entry points for the fuzz target in `crates/net/fuzz`
//! (docs/fuzzing.md): what the responder does with a client's first bytes.

use crate::wire::{Datagram, Header, Mode, Trailer, HEADER_LEN, MAX_TCP_SIZE, MAX_UDP_SIZE};

/// A connection header and a datagram parsed from the same bytes: never a
/// panic; whatever parses is within the documented sizes and encodes back
/// to the bytes it came from.
pub fn wire(data: &[u8]) {
    if let Ok(h) = Header::parse(data) {
        // The sizes its mode uses are within the limits (a sink's response
        // size and a source's request size are not read).
        let ok = |n: u32| (1..=MAX_TCP_SIZE).contains(&(n as usize));
        match h.mode {
            Mode::Rr | Mode::Crr => assert!(ok(h.request) && ok(h.response)),
            Mode::Sink => assert!(ok(h.request)),
            Mode::Source => assert!(ok(h.response)),
        }
        let mut again = h.encode();
        // The two reserved bytes are not read.
        again[6..8].copy_from_slice(&data[6..8]);
        assert_eq!(&again[..], &data[..HEADER_LEN]);
    }
    if let Ok(d) = Datagram::parse(data) {
        assert!((HEADER_LEN..=MAX_UDP_SIZE).contains(&(d.response as usize)));
        let mut b = [0u8; HEADER_LEN];
        d.write(&mut b);
        assert_eq!(&b[..], &data[..HEADER_LEN]);
    }
    if let Ok(b) = <&[u8; HEADER_LEN]>::try_from(data.get(..HEADER_LEN).unwrap_or(&[])) {
        assert_eq!(&Trailer::parse(b).encode(), b);
    }
}
