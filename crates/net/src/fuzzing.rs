//! Byte-taking entry points for the fuzz target in `crates/net/fuzz`
//! (docs/fuzzing.md): what the responder does with a client's first bytes.

use crate::wire::{Datagram, Header, Trailer, HEADER_LEN, MAX_TCP_SIZE, MAX_UDP_SIZE};

/// A connection header and a datagram parsed from the same bytes: never a
/// panic; whatever parses is within the documented sizes and encodes back
/// to the bytes it came from.
pub fn wire(data: &[u8]) {
    if let Ok(h) = Header::parse(data) {
        assert!(h.request as usize <= MAX_TCP_SIZE && h.response as usize <= MAX_TCP_SIZE);
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
