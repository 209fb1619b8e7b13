//! RESP, the Redis serialization protocol: commands written as arrays of
//! bulk strings, and replies read back.
//!
//! Two readers of the server's bytes:
//! - [`Parser`], the hot path: an incremental scanner that finds where each
//!   reply ends and whether it is an error, in whatever pieces the bytes
//!   arrive, without buffering a reply (a bulk payload is skipped, not
//!   copied). Every reply it reports is counted by the engine.
//! - [`parse_value`], for tare's own few commands before a run (`AUTH`,
//!   `SELECT`, `INFO`): one whole RESP2 value out of a buffer.
//!
//! Both are bounded (nesting depth, line length, bulk length, element
//! counts) and answer any input with a value or a [`ProtocolError`], never
//! a panic: `crates/redis/fuzz` checks it (docs/fuzzing.md). The grammar is
//! <https://redis.io/docs/latest/develop/reference/protocol-spec/>, RESP2 and
//! RESP3's additions.

use std::fmt;

/// Deepest nesting of aggregates accepted (Redis's own replies nest 2 or 3
/// deep; 32 leaves room for scripts returning nested tables).
pub(crate) const MAX_DEPTH: usize = 32;
/// Longest simple line (`+OK`, an error's text) accepted.
pub(crate) const MAX_LINE: usize = 64 * 1024;
/// Largest bulk string (Redis's own `proto-max-bulk-len` default).
pub(crate) const MAX_BULK: u64 = 512 * 1024 * 1024;
/// Most elements of one aggregate.
pub(crate) const MAX_ELEMENTS: u64 = 1 << 32;

/// Bytes of an error's first word kept: `ERR`, `WRONGTYPE`, `NOAUTH`...
const KIND_LEN: usize = 24;

/// The first word of an error reply (`-ERR unknown command` → `ERR`), which
/// errors are counted by.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ErrorKind {
    bytes: [u8; KIND_LEN],
    len: u8,
}

impl ErrorKind {
    /// The kind of the error whose text starts with `text`.
    pub fn of(text: &[u8]) -> ErrorKind {
        let word = text
            .split(|b| *b == b' ' || *b == b'\r' || *b == b'\n')
            .next()
            .unwrap_or_default();
        let mut k = ErrorKind {
            bytes: [0; KIND_LEN],
            len: 0,
        };
        for &b in word.iter().take(KIND_LEN) {
            // Printable ASCII only: a kind ends up in JSON and on terminals.
            k.bytes[k.len as usize] = if b.is_ascii_graphic() { b } else { b'?' };
            k.len += 1;
        }
        if k.len == 0 {
            k.bytes[0] = b'?';
            k.len = 1;
        }
        k
    }

    pub fn as_str(&self) -> &str {
        // Only ASCII graphic bytes are ever stored.
        std::str::from_utf8(&self.bytes[..self.len as usize]).unwrap_or("?")
    }
}

impl fmt::Debug for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ErrorKind({})", self.as_str())
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One complete top-level reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Anything but an error (an error nested in an array, as `EXEC`
    /// returns, is part of a reply, not one).
    Ok,
    /// `-KIND text` or RESP3's `!len` bulk error.
    Error(ErrorKind),
}

/// Bytes that are not RESP: the connection cannot be trusted after this.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    #[error("unexpected byte {0:#04x} where a reply's type was expected")]
    Type(u8),
    #[error("a reply line longer than {MAX_LINE} bytes")]
    LineTooLong,
    #[error("a line not ended by CRLF")]
    BadLineEnd,
    #[error("invalid length {0:?}")]
    Length(String),
    #[error("replies nested deeper than {MAX_DEPTH}")]
    TooDeep,
}

/// What an open aggregate is, for what its end means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Frame {
    /// An array, set or map: its end completes a value.
    Value,
    /// RESP3's `|` attribute: its end leaves the value it describes to come.
    Attribute,
    /// RESP3's `>` push at the top level: out of band, not a reply.
    Push,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// The next byte is a type.
    Type,
    /// Inside a line of type `kind`, `len` bytes so far.
    Line { kind: u8, len: usize },
    /// Skipping a bulk payload; `error`: a top-level `!` whose first bytes
    /// name its kind.
    Bulk { left: u64, error: bool },
    /// The CRLF after a bulk payload: `seen` of its two bytes so far.
    BulkEnd { seen: u8, error: bool },
}

/// An incremental reply scanner: [`Parser::feed`] takes the bytes as they
/// arrive and reports each reply as it completes.
#[derive(Clone, Debug)]
pub struct Parser {
    state: State,
    /// The start of the current line (a length, or an error's kind).
    line: [u8; 32],
    kept: usize,
    last: u8,
    /// Open aggregates: elements still to come, and what each is.
    stack: Vec<(u64, Frame)>,
}

impl Default for Parser {
    fn default() -> Self {
        Self::new()
    }
}

impl Parser {
    pub fn new() -> Parser {
        Parser {
            state: State::Type,
            line: [0; 32],
            kept: 0,
            last: 0,
            stack: Vec::with_capacity(4),
        }
    }

    /// Whether the bytes so far end exactly between replies.
    #[cfg(test)]
    pub(crate) fn at_boundary(&self) -> bool {
        self.state == State::Type && self.stack.is_empty()
    }

    /// Consumes all of `buf`, calling `on` for every reply it completes.
    /// After an error the parser is spent (the connection must be closed).
    pub fn feed(&mut self, buf: &[u8], mut on: impl FnMut(Reply)) -> Result<(), ProtocolError> {
        let mut i = 0;
        while i < buf.len() {
            match self.state {
                State::Type => {
                    let kind = buf[i];
                    if !b"+-:$*_#,(!=%~>|".contains(&kind) {
                        return Err(ProtocolError::Type(kind));
                    }
                    self.state = State::Line { kind, len: 0 };
                    self.kept = 0;
                    self.last = 0;
                    i += 1;
                }
                State::Line { kind, len } => {
                    let rest = &buf[i..];
                    let (take, end) = match rest.iter().position(|b| *b == b'\n') {
                        Some(p) => (p + 1, true),
                        None => (rest.len(), false),
                    };
                    let piece = &rest[..take];
                    let room = self.line.len() - self.kept;
                    let keep = room.min(piece.len());
                    self.line[self.kept..self.kept + keep].copy_from_slice(&piece[..keep]);
                    self.kept += keep;
                    let len = len + take;
                    if len > MAX_LINE {
                        return Err(ProtocolError::LineTooLong);
                    }
                    let before_nl = if take >= 2 {
                        piece[take - 2]
                    } else if take == 1 {
                        self.last
                    } else {
                        0
                    };
                    self.last = *piece.last().unwrap_or(&self.last);
                    i += take;
                    if !end {
                        self.state = State::Line { kind, len };
                        continue;
                    }
                    if before_nl != b'\r' || len < 2 {
                        return Err(ProtocolError::BadLineEnd);
                    }
                    self.state = State::Type;
                    self.line_done(kind, len - 2, &mut on)?;
                }
                State::Bulk { left, error } => {
                    let take = (left.min((buf.len() - i) as u64)) as usize;
                    if error && self.kept < self.line.len() {
                        let keep = (self.line.len() - self.kept).min(take);
                        self.line[self.kept..self.kept + keep].copy_from_slice(&buf[i..i + keep]);
                        self.kept += keep;
                    }
                    i += take;
                    let left = left - take as u64;
                    self.state = if left == 0 {
                        State::BulkEnd { seen: 0, error }
                    } else {
                        State::Bulk { left, error }
                    };
                }
                State::BulkEnd { seen, error } => {
                    let want = if seen == 0 { b'\r' } else { b'\n' };
                    if buf[i] != want {
                        return Err(ProtocolError::BadLineEnd);
                    }
                    i += 1;
                    if seen == 0 {
                        self.state = State::BulkEnd { seen: 1, error };
                    } else {
                        self.state = State::Type;
                        let reply = if error {
                            Reply::Error(ErrorKind::of(&self.line[..self.kept]))
                        } else {
                            Reply::Ok
                        };
                        self.value_done(reply, &mut on);
                    }
                }
            }
        }
        Ok(())
    }

    /// A line of `kind` ended; its text (without CRLF) is `text_len` bytes,
    /// the first of them in `self.line`.
    fn line_done(
        &mut self,
        kind: u8,
        text_len: usize,
        on: &mut impl FnMut(Reply),
    ) -> Result<(), ProtocolError> {
        let kept = self.kept.min(text_len);
        match kind {
            b'-' => {
                let reply = if self.stack.is_empty() {
                    Reply::Error(ErrorKind::of(&self.line[..kept]))
                } else {
                    Reply::Ok
                };
                self.value_done(reply, on);
            }
            b'+' | b':' | b'_' | b'#' | b',' | b'(' => self.value_done(Reply::Ok, on),
            b'$' | b'!' | b'=' => {
                let n = self.length(text_len)?;
                match n {
                    -1 => self.value_done(Reply::Ok, on),
                    n if n >= 0 && (n as u64) <= MAX_BULK => {
                        let error = kind == b'!' && self.stack.is_empty();
                        self.kept = 0;
                        self.state = if n == 0 {
                            State::BulkEnd { seen: 0, error }
                        } else {
                            State::Bulk {
                                left: n as u64,
                                error,
                            }
                        };
                    }
                    _ => return Err(self.bad_length(text_len)),
                }
            }
            _ => {
                // Aggregates: * ~ > (n elements), % | (n pairs).
                let n = self.length(text_len)?;
                if n == -1 && matches!(kind, b'*' | b'~' | b'%') {
                    self.value_done(Reply::Ok, on);
                    return Ok(());
                }
                if n < 0 || n as u64 > MAX_ELEMENTS {
                    return Err(self.bad_length(text_len));
                }
                let n = if matches!(kind, b'%' | b'|') {
                    2 * n as u64
                } else {
                    n as u64
                };
                let frame = match kind {
                    b'|' => Frame::Attribute,
                    b'>' if self.stack.is_empty() => Frame::Push,
                    _ => Frame::Value,
                };
                if n == 0 {
                    match frame {
                        Frame::Attribute => {}
                        Frame::Push => {}
                        Frame::Value => self.value_done(Reply::Ok, on),
                    }
                    return Ok(());
                }
                if self.stack.len() >= MAX_DEPTH {
                    return Err(ProtocolError::TooDeep);
                }
                self.stack.push((n, frame));
            }
        }
        Ok(())
    }

    /// The line's integer; the whole line must fit what is kept.
    fn length(&self, text_len: usize) -> Result<i64, ProtocolError> {
        if text_len > self.line.len() - 2 {
            return Err(self.bad_length(text_len));
        }
        std::str::from_utf8(&self.line[..text_len])
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .ok_or_else(|| self.bad_length(text_len))
    }

    fn bad_length(&self, text_len: usize) -> ProtocolError {
        let shown = &self.line[..self.kept.min(text_len)];
        ProtocolError::Length(String::from_utf8_lossy(shown).into_owned())
    }

    /// A value ended: it completes its enclosing aggregates, and at the top
    /// level it is a reply.
    fn value_done(&mut self, reply: Reply, on: &mut impl FnMut(Reply)) {
        loop {
            let Some(top) = self.stack.last_mut() else {
                on(reply);
                return;
            };
            top.0 -= 1;
            if top.0 > 0 {
                return;
            }
            let (_, frame) = self.stack.pop().unwrap_or((0, Frame::Value));
            match frame {
                // The attribute is over; the value it describes comes next.
                Frame::Attribute => return,
                // An out-of-band push is no command's reply.
                Frame::Push => return,
                Frame::Value => {}
            }
        }
    }
}

/// A whole RESP2 value, as [`parse_value`] returns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Value>>),
}

impl Value {
    /// The text of a simple or bulk string.
    pub fn text(&self) -> Option<String> {
        match self {
            Value::Simple(s) => Some(s.clone()),
            Value::Bulk(Some(b)) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        }
    }
}

/// The first value in `buf` and the bytes it took; `Ok(None)` while
/// incomplete.
pub fn parse_value(buf: &[u8]) -> Result<Option<(Value, usize)>, ProtocolError> {
    parse_at(buf, 0, 0)
}

fn parse_at(buf: &[u8], at: usize, depth: usize) -> Result<Option<(Value, usize)>, ProtocolError> {
    if depth > MAX_DEPTH {
        return Err(ProtocolError::TooDeep);
    }
    let Some(&kind) = buf.get(at) else {
        return Ok(None);
    };
    let rest = &buf[at + 1..];
    // The same bounds as the incremental parser's: a line of at most
    // MAX_LINE bytes with its CRLF, a length of at most 30 characters.
    let Some(nl) = rest.iter().take(MAX_LINE).position(|b| *b == b'\n') else {
        return if rest.len() >= MAX_LINE {
            Err(ProtocolError::LineTooLong)
        } else {
            Ok(None)
        };
    };
    if nl == 0 || rest[nl - 1] != b'\r' {
        return Err(ProtocolError::BadLineEnd);
    }
    let line = &rest[..nl - 1];
    let next = at + 1 + nl + 1;
    let text = || String::from_utf8_lossy(line).into_owned();
    let int = || {
        if line.len() > 30 {
            return Err(ProtocolError::Length(text()));
        }
        std::str::from_utf8(line)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .ok_or_else(|| ProtocolError::Length(text()))
    };
    match kind {
        b'+' => Ok(Some((Value::Simple(text()), next))),
        b'-' => Ok(Some((Value::Error(text()), next))),
        b':' => Ok(Some((Value::Int(int()?), next))),
        b'$' => match int()? {
            -1 => Ok(Some((Value::Bulk(None), next))),
            n if n >= 0 && n as u64 <= MAX_BULK => {
                let n = n as usize;
                if buf.len() < next + n + 2 {
                    return Ok(None);
                }
                if &buf[next + n..next + n + 2] != b"\r\n" {
                    return Err(ProtocolError::BadLineEnd);
                }
                Ok(Some((
                    Value::Bulk(Some(buf[next..next + n].to_vec())),
                    next + n + 2,
                )))
            }
            _ => Err(ProtocolError::Length(text())),
        },
        b'*' => match int()? {
            -1 => Ok(Some((Value::Array(None), next))),
            n if n >= 0 && n as u64 <= MAX_ELEMENTS => {
                // Each element takes at least 3 bytes: no allocation beyond
                // what the buffer could hold.
                let mut items = Vec::with_capacity((n as usize).min(buf.len() / 3));
                let mut pos = next;
                for _ in 0..n {
                    match parse_at(buf, pos, depth + 1)? {
                        Some((v, end)) => {
                            items.push(v);
                            pos = end;
                        }
                        None => return Ok(None),
                    }
                }
                Ok(Some((Value::Array(Some(items)), pos)))
            }
            _ => Err(ProtocolError::Length(text())),
        },
        other => Err(ProtocolError::Type(other)),
    }
}

/// A command as RESP writes it: an array of bulk strings.
pub fn encode(args: &[&[u8]], out: &mut Vec<u8>) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replies(pieces: &[&[u8]]) -> Result<Vec<Reply>, ProtocolError> {
        let mut p = Parser::new();
        let mut out = Vec::new();
        for piece in pieces {
            p.feed(piece, |r| out.push(r))?;
        }
        Ok(out)
    }

    fn err(kind: &str) -> Reply {
        Reply::Error(ErrorKind::of(kind.as_bytes()))
    }

    #[test]
    fn replies_of_every_type_are_found_whole_and_byte_by_byte() {
        let stream: &[u8] = b"+OK\r\n-ERR unknown command 'FOO'\r\n:42\r\n$3\r\nabc\r\n$-1\r\n\
            *2\r\n$1\r\na\r\n*1\r\n:1\r\n*-1\r\n*0\r\n$0\r\n\r\n-WRONGTYPE Operation\r\n\
            _\r\n#t\r\n,1.5\r\n(123\r\n%1\r\n+k\r\n+v\r\n~1\r\n+x\r\n=7\r\ntxt:abc\r\n\
            !9\r\nSYNTAX xy\r\n|1\r\n+a\r\n+b\r\n+after-attr\r\n>2\r\n+pubsub\r\n+msg\r\n\
            *2\r\n-ERR inner\r\n+OK\r\n";
        let want = vec![
            Reply::Ok,
            err("ERR"),
            Reply::Ok,
            Reply::Ok,
            Reply::Ok,
            Reply::Ok,
            Reply::Ok,
            Reply::Ok,
            Reply::Ok,
            err("WRONGTYPE"),
            Reply::Ok,
            Reply::Ok,
            Reply::Ok,
            Reply::Ok,
            Reply::Ok,
            Reply::Ok,
            Reply::Ok,
            err("SYNTAX"),
            Reply::Ok,
            // The push is not a reply; the error inside an array is not one.
            Reply::Ok,
        ];
        assert_eq!(replies(&[stream]).unwrap(), want);
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(replies(&bytes).unwrap(), want);
        let mut p = Parser::new();
        p.feed(stream, |_| {}).unwrap();
        assert!(p.at_boundary());
    }

    #[test]
    fn an_error_kind_is_its_first_word() {
        let r = replies(&[b"-NOAUTH Authentication required.\r\n"]).unwrap();
        assert_eq!(r, vec![err("NOAUTH")]);
        if let Reply::Error(k) = r[0] {
            assert_eq!(k.as_str(), "NOAUTH");
        }
        assert_eq!(ErrorKind::of(b"").as_str(), "?");
        assert_eq!(ErrorKind::of(b"\x01bad").as_str(), "?bad");
    }

    #[test]
    fn malformed_replies_are_errors_not_panics() {
        for bad in [
            &b"?\r\n"[..],
            b"+OK\n",
            b"$abc\r\n",
            b"$-2\r\n",
            b"$3\r\nabcd\r\n",
            b"*-5\r\n",
            b"$99999999999999999999\r\n",
            b"$1073741824\r\n",
        ] {
            assert!(
                replies(&[bad]).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        let deep = "*1\r\n".repeat(MAX_DEPTH + 1);
        assert_eq!(
            replies(&[deep.as_bytes()]),
            Err(ProtocolError::TooDeep),
            "bounded nesting"
        );
        let long = format!("+{}\r\n", "x".repeat(MAX_LINE));
        assert_eq!(replies(&[long.as_bytes()]), Err(ProtocolError::LineTooLong));
    }

    #[test]
    fn an_incomplete_reply_is_not_reported() {
        assert_eq!(replies(&[b"$5\r\nab"]).unwrap(), vec![]);
        assert_eq!(replies(&[b"*2\r\n+a\r\n"]).unwrap(), vec![]);
    }

    #[test]
    fn whole_values_parse() {
        let (v, n) = parse_value(b"*2\r\n$3\r\nfoo\r\n:7\r\nrest")
            .unwrap()
            .unwrap();
        assert_eq!(n, 17);
        assert_eq!(
            v,
            Value::Array(Some(vec![
                Value::Bulk(Some(b"foo".to_vec())),
                Value::Int(7)
            ]))
        );
        assert_eq!(parse_value(b"$5\r\nab").unwrap(), None);
        assert_eq!(parse_value(b"").unwrap(), None);
        assert!(parse_value(b"$2\r\nabc\r\n").is_err());
        assert!(parse_value("*1\r\n".repeat(40).as_bytes()).is_err());
        assert_eq!(
            parse_value(b"-ERR x\r\n").unwrap().unwrap().0,
            Value::Error("ERR x".into())
        );
    }

    #[test]
    fn commands_are_arrays_of_bulk_strings() {
        let mut out = Vec::new();
        encode(&[b"SET", b"k", b"vv"], &mut out);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nvv\r\n");
    }
}
