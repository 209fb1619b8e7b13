//! A response head scanner that reads only what a load generator needs.
//!
//! Why not `httparse`: it splits every header into a name/value slice and
//! validates each byte on the way, then the caller walks the slices again to
//! find three headers. For nginx's 8-header response that was ~8% of a
//! loopback request's CPU under io_uring (perf). This scanner finds each
//! line with `memchr`, checks the name (a token) and the value (no control
//! characters) in one branch-free pass each, and looks closer only at
//! `Content-Length`, `Transfer-Encoding` and `Connection`.
//!
//! It accepts and rejects what `httparse` (the crate's defaults for
//! responses) does on every input of the differential test below: an
//! `HTTP/1.0` or `HTTP/1.1` status line with a three-digit code, header
//! names of token characters followed directly by a colon, values without
//! control characters other than tab, lines ending in CRLF or a bare LF, and
//! no obsolete line folding.

use crate::response::ParseError;

/// Headers per response; nginx sends about 8.
pub(crate) const MAX_HEADERS: usize = 48;

/// What the head says about the body and the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Head {
    /// Bytes of the head, up to and including its empty line.
    pub len: usize,
    pub status: u16,
    /// HTTP/1.0.
    pub http10: bool,
    pub content_length: Option<u64>,
    /// The last transfer coding is `chunked`.
    pub chunked: bool,
    /// `Connection: close` / `keep-alive` (the last one named wins).
    pub close: Option<bool>,
}

/// RFC 9110 `tchar`.
const fn token_table() -> [bool; 256] {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        b += 1;
    }
    t
}
static TOKEN: [bool; 256] = token_table();

/// Bytes allowed in a header value or a reason phrase: visible ASCII,
/// space, tab and obs-text (0x80 and up).
#[inline]
fn clean(v: &[u8]) -> bool {
    // Branch-free so it vectorizes: a header value is scanned whole.
    !v.iter().fold(false, |bad, &b| {
        bad | ((b < 0x20) & (b != b'\t')) | (b == 0x7f)
    })
}

#[inline]
fn is_token(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().fold(true, |ok, &b| ok & TOKEN[b as usize])
}

const MALFORMED: ParseError = ParseError::Head("not an HTTP/1.x response");

/// The line starting at `at`, without its line ending, and where the next
/// line starts; `None` if the line is not complete yet.
#[inline]
fn line(buf: &[u8], at: usize) -> Result<Option<(&[u8], usize)>, ParseError> {
    let Some(nl) = memchr::memchr(b'\n', &buf[at..]) else {
        return Ok(None);
    };
    let mut l = &buf[at..at + nl];
    if let [rest @ .., b'\r'] = l {
        l = rest;
    }
    // A CR anywhere else is not a line ending and not allowed.
    Ok(Some((l, at + nl + 1)))
}

/// Scans a response head at the start of `buf`: `Ok(None)` while it is
/// incomplete, the head once its empty line has arrived.
pub(crate) fn scan(buf: &[u8]) -> Result<Option<Head>, ParseError> {
    const PREFIX: &[u8] = b"HTTP/1.";
    let n = buf.len().min(PREFIX.len());
    if buf[..n] != PREFIX[..n] {
        return Err(MALFORMED);
    }
    let mut lines = [(0u32, 0u32); MAX_HEADERS + 1];
    match split_lines(buf, &mut lines) {
        Some((len, count)) => whole(&buf[..len], &lines[..count]),
        None => by_line(buf),
    }
}

/// Finds the head's lines (without their endings) in one pass: the head's
/// length and line count, or `None` if the head is not complete yet or has
/// too many lines (the line-by-line scan then says which).
#[inline]
fn split_lines(buf: &[u8], lines: &mut [(u32, u32); MAX_HEADERS + 1]) -> Option<(usize, usize)> {
    let mut start = 0;
    for (count, nl) in memchr::memchr_iter(b'\n', buf).enumerate() {
        let end = if nl > start && buf[nl - 1] == b'\r' {
            nl - 1
        } else {
            nl
        };
        if end == start && count > 0 {
            return Some((nl + 1, count));
        }
        if count == lines.len() {
            return None;
        }
        lines[count] = (start as u32, end as u32);
        start = nl + 1;
    }
    None
}

/// A complete head: every byte checked at once (branch-free, so it
/// vectorizes), then each line's structure.
fn whole(head: &[u8], lines: &[(u32, u32)]) -> Result<Option<Head>, ParseError> {
    let ctl = head.iter().fold(false, |bad, &b| {
        bad | ((b < 0x20) & (b != b'\t') & (b != b'\r') & (b != b'\n')) | (b == 0x7f)
    });
    let stray_cr = head
        .iter()
        .zip(&head[1..])
        .fold(false, |bad, (&a, &b)| bad | ((a == b'\r') & (b != b'\n')));
    if ctl || stray_cr {
        return Err(MALFORMED);
    }
    let at = |(a, b): (u32, u32)| &head[a as usize..b as usize];
    let mut h = status(at(lines[0]))?;
    for &l in &lines[1..] {
        let l = at(l);
        let name_len = l.iter().take_while(|&&b| TOKEN[b as usize]).count();
        if name_len == 0 || l.get(name_len) != Some(&b':') {
            return Err(MALFORMED);
        }
        interpret(&l[..name_len], &l[name_len + 1..], &mut h)?;
    }
    h.len = head.len();
    Ok(Some(h))
}

/// The head line by line, for one that is not complete yet: waits while
/// what has arrived can still become a valid head.
fn by_line(buf: &[u8]) -> Result<Option<Head>, ParseError> {
    let Some((status_line, mut at)) = line(buf, 0)? else {
        return partial_status(buf);
    };
    let mut head = status(status_line)?;
    let mut headers = 0;
    loop {
        let Some((l, next)) = line(buf, at)? else {
            return partial_header(&buf[at..]);
        };
        at = next;
        if l.is_empty() {
            head.len = at;
            return Ok(Some(head));
        }
        headers += 1;
        if headers > MAX_HEADERS {
            return Err(ParseError::Head("too many headers"));
        }
        header(l, &mut head)?;
    }
}

/// A line cut off by the end of the data so far: waiting is right only if
/// the line can still turn out valid (a trailing CR may be half a CRLF).
fn unterminated(p: &[u8]) -> &[u8] {
    match p {
        [rest @ .., b'\r'] => rest,
        _ => p,
    }
}

/// An incomplete status line: `Ok(None)` if it is the start of a valid one.
fn partial_status(p: &[u8]) -> Result<Option<Head>, ParseError> {
    let p = unterminated(p);
    let ok = p.iter().enumerate().all(|(i, &b)| match i {
        0..=6 => true, // "HTTP/1.", checked by the caller
        7 => b == b'0' || b == b'1',
        8 | 12 => b == b' ',
        9..=11 => b.is_ascii_digit(),
        _ => clean(&[b]),
    });
    if ok {
        Ok(None)
    } else {
        Err(MALFORMED)
    }
}

/// An incomplete header line (or the empty line's lone CR).
fn partial_header(p: &[u8]) -> Result<Option<Head>, ParseError> {
    if p.is_empty() || p == b"\r" {
        return Ok(None);
    }
    let p = unterminated(p);
    let ok = match memchr::memchr(b':', p) {
        None => is_token(p),
        Some(colon) => is_token(&p[..colon]) && clean(&p[colon + 1..]),
    };
    if ok {
        Ok(None)
    } else {
        Err(MALFORMED)
    }
}

/// `HTTP/1.x SSS reason`.
fn status(l: &[u8]) -> Result<Head, ParseError> {
    let [b'H', b'T', b'T', b'P', b'/', b'1', b'.', minor, rest @ ..] = l else {
        return Err(MALFORMED);
    };
    let http10 = match minor {
        b'0' => true,
        b'1' => false,
        _ => return Err(MALFORMED),
    };
    let [b' ', d0, d1, d2, reason @ ..] = rest else {
        return Err(MALFORMED);
    };
    if !(d0.is_ascii_digit() && d1.is_ascii_digit() && d2.is_ascii_digit()) {
        return Err(MALFORMED);
    }
    match reason {
        [] => {}
        [b' ', r @ ..] if clean(r) => {}
        _ => return Err(MALFORMED),
    }
    let status = (d0 - b'0') as u16 * 100 + (d1 - b'0') as u16 * 10 + (d2 - b'0') as u16;
    Ok(Head {
        status,
        http10,
        ..Head::default()
    })
}

/// `name: value`; records the three headers that matter.
#[inline]
fn header(l: &[u8], head: &mut Head) -> Result<(), ParseError> {
    let Some(colon) = memchr::memchr(b':', l) else {
        return Err(MALFORMED);
    };
    let (name, value) = (&l[..colon], &l[colon + 1..]);
    if !is_token(name) || !clean(value) {
        return Err(MALFORMED);
    }
    interpret(name, value, head)
}

/// Records what a (valid) header says, if it is one of the three.
#[inline]
fn interpret(name: &[u8], value: &[u8], head: &mut Head) -> Result<(), ParseError> {
    let value = value.trim_ascii();
    // Only three names matter: test the length first, it rules out most.
    match name.len() {
        14 if name.eq_ignore_ascii_case(b"content-length") => {
            let n = parse_u64(value).ok_or(ParseError::ContentLength)?;
            if head.content_length.is_some_and(|old| old != n) {
                return Err(ParseError::ContentLength);
            }
            head.content_length = Some(n);
        }
        17 if name.eq_ignore_ascii_case(b"transfer-encoding") => {
            head.chunked = value
                .split(|b| *b == b',')
                .next_back()
                .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        }
        10 if name.eq_ignore_ascii_case(b"connection") => {
            for token in value.split(|b| *b == b',') {
                let t = token.trim_ascii();
                if t.eq_ignore_ascii_case(b"close") {
                    head.close = Some(true);
                } else if t.eq_ignore_ascii_case(b"keep-alive") {
                    head.close = Some(false);
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Decimal digits only (as `u64::from_str` after a trim, minus its `+`).
fn parse_u64(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 {
        return None;
    }
    v.iter().try_fold(0u64, |n, &b| {
        b.is_ascii_digit().then(|| n * 10 + (b - b'0') as u64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NGINX: &[u8] = b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Tue, 24 Nov 2026 18:00:00 GMT\r\nContent-Type: text/html\r\nContent-Length: 13\r\nLast-Modified: Tue, 24 Nov 2026 17:00:00 GMT\r\nConnection: keep-alive\r\nETag: \"6543-d\"\r\nAccept-Ranges: bytes\r\n\r\nhello, world\n";

    #[test]
    fn reads_what_matters_from_an_nginx_head() {
        let h = scan(NGINX).unwrap().unwrap();
        assert_eq!(h.len, NGINX.len() - 13);
        assert_eq!(h.status, 200);
        assert_eq!(h.content_length, Some(13));
        assert_eq!(h.close, Some(false));
        assert!(!h.chunked && !h.http10);
        for cut in 0..h.len {
            assert_eq!(scan(&NGINX[..cut]), Ok(None), "cut at {cut}");
        }
    }

    /// What `httparse` (as the parser used it before) makes of `buf`:
    /// complete with its length, partial, or an error.
    fn reference(buf: &[u8]) -> Result<Option<usize>, ()> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut headers);
        match resp.parse(buf) {
            Ok(httparse::Status::Complete(n)) => Ok(Some(n)),
            Ok(httparse::Status::Partial) => Ok(None),
            Err(_) => Err(()),
        }
    }

    fn agree(buf: &[u8]) {
        let scanned = scan(buf);
        // A Content-Length that is not a number is our error, not a
        // syntax error for httparse.
        if scanned == Err(ParseError::ContentLength) {
            return;
        }
        let ours = scanned.map(|h| h.map(|h| h.len)).map_err(|_| ());
        assert_eq!(ours, reference(buf), "{:?}", String::from_utf8_lossy(buf));
    }

    #[test]
    fn agrees_with_httparse_on_odd_heads() {
        let cases: &[&[u8]] = &[
            b"HTTP/1.1 200 OK\r\n\r\n",
            b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n",
            b"HTTP/1.1 200\r\n\r\n",
            b"HTTP/1.1 200 \r\n\r\n",
            b"HTTP/1.1 200 OK\n\n",
            b"HTTP/1.1 200 OK\r\nA: b\n\r\n",
            b"HTTP/1.2 200 OK\r\n\r\n",
            b"HTTP/2.0 200 OK\r\n\r\n",
            b"HTTP/1.1 20 OK\r\n\r\n",
            b"HTTP/1.1 2000 OK\r\n\r\n",
            b"HTTP/1.1  200 OK\r\n\r\n",
            b"HTTP/1.1 200 O\x01K\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nNo colon\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nBad name: x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\n: empty\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nX:\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nX: tab\there\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nX: ctl\x07\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nX: del\x7f\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nX: obs \xe2\x80\x94 text\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nX : a\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n",
            b"HTTP/1.1 200 OK\r\r\n\r\n",
            b"garbage\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r",
            b"HTTP/1.1 200 OK\r\nContent-Length:  7  \r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: +7\r\n\r\n",
        ];
        for c in cases {
            agree(c);
        }
    }

    #[test]
    fn agrees_with_httparse_on_mutations_of_a_real_head() {
        // Every single-byte change of the nginx head to a byte of interest,
        // and every prefix: a cheap, exhaustive differential fuzz.
        let head = &NGINX[..NGINX.len() - 13];
        let bytes = [
            0u8, b'\t', b'\n', b'\r', b' ', b':', b'"', b'(', b'A', b'x', b'5', 0x7f, 0x80, 0xff,
        ];
        let mut buf = head.to_vec();
        for i in 0..head.len() {
            for &b in &bytes {
                buf[i] = b;
                agree(&buf);
            }
            buf[i] = head[i];
            agree(&head[..i]);
        }
    }

    #[test]
    fn the_three_headers_that_matter() {
        let h = scan(b"HTTP/1.1 200 OK\r\nTRANSFER-ENCODING: gzip, Chunked\r\nconnection: Keep-Alive, close\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(h.chunked);
        assert_eq!(h.close, Some(true));
        let h = scan(b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!((h.http10, h.content_length), (true, Some(3)));
        assert_eq!(
            scan(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n"),
            Err(ParseError::ContentLength)
        );
        assert_eq!(
            scan(b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n"),
            Err(ParseError::ContentLength)
        );
        let many: Vec<u8> = [&b"HTTP/1.1 200 OK\r\n"[..]]
            .into_iter()
            .chain(std::iter::repeat_n(&b"X: y\r\n"[..], MAX_HEADERS + 1))
            .chain([&b"\r\n"[..]])
            .flatten()
            .copied()
            .collect();
        assert_eq!(scan(&many), Err(ParseError::Head("too many headers")));
    }
}
