//! The PostgreSQL v3 wire protocol, as much of it as a load generator needs.
//!
//! Frontend messages on the hot path (Query, Parse, Bind, Execute, Sync) are
//! written by hand into a caller's reusable buffer: no allocation, and the
//! length prefix patched in place once the body is written. Startup and
//! authentication messages come from `postgres-protocol` (they are sent once
//! per connection). Backend messages are framed here without copying: a
//! [`Frames`] iterator hands out `(tag, body)` slices of the read buffer.
//!
//! Reference: PostgreSQL documentation, chapter 55 "Frontend/Backend Protocol",
//! section 55.7 "Message Formats".

use std::fmt;

/// Appends a message with tag `tag` whose body `body` writes; the 4-byte
/// length (which counts itself, not the tag) is patched afterwards.
#[inline]
fn message(buf: &mut Vec<u8>, tag: u8, body: impl FnOnce(&mut Vec<u8>)) {
    buf.push(tag);
    let at = buf.len();
    buf.extend_from_slice(&[0; 4]);
    body(buf);
    let len = (buf.len() - at) as u32;
    buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

fn cstr(buf: &mut Vec<u8>, s: &[u8]) {
    buf.extend_from_slice(s);
    buf.push(0);
}

/// `Query` (simple protocol). `sql` is written by `text` so variables can be
/// substituted straight into the output buffer.
#[inline]
pub(crate) fn query(buf: &mut Vec<u8>, text: impl FnOnce(&mut Vec<u8>)) {
    message(buf, b'Q', |b| {
        text(b);
        b.push(0);
    });
}

/// `Parse` of statement `name` (empty: the unnamed statement), with no
/// declared parameter types (the server infers them, as libpq's
/// `PQprepare(..., NULL)` lets it).
pub(crate) fn parse(buf: &mut Vec<u8>, name: &str, sql: &str) {
    message(buf, b'P', |b| {
        cstr(b, name.as_bytes());
        cstr(b, sql.as_bytes());
        b.extend_from_slice(&0u16.to_be_bytes());
    });
}

/// `Bind` of statement `name` to the unnamed portal with `nparams` text
/// parameters, each written by `param(i, buf)` (which says `false` for a
/// NULL); results in text format.
#[inline]
pub(crate) fn bind(
    buf: &mut Vec<u8>,
    name: &str,
    nparams: usize,
    mut param: impl FnMut(usize, &mut Vec<u8>) -> bool,
) {
    message(buf, b'B', |b| {
        b.push(0); // unnamed portal
        cstr(b, name.as_bytes());
        b.extend_from_slice(&0u16.to_be_bytes()); // all parameters in text format
        b.extend_from_slice(&(nparams as u16).to_be_bytes());
        for i in 0..nparams {
            let at = b.len();
            b.extend_from_slice(&[0; 4]);
            // `false`: a NULL, length -1 and no bytes.
            let len = if param(i, b) {
                (b.len() - at - 4) as u32
            } else {
                u32::MAX
            };
            b[at..at + 4].copy_from_slice(&len.to_be_bytes());
        }
        b.extend_from_slice(&0u16.to_be_bytes()); // results: default (text)
    });
}

/// `Execute` of the unnamed portal, all rows.
pub(crate) const EXECUTE: [u8; 10] = [b'E', 0, 0, 0, 9, 0, 0, 0, 0, 0];
/// `Sync`: ends the implicit transaction and asks for `ReadyForQuery`.
pub(crate) const SYNC: [u8; 5] = [b'S', 0, 0, 0, 4];
/// Describe of the unnamed portal: the server then sends the
/// RowDescription that `\gset` needs (Execute alone sends none).
pub(crate) const DESCRIBE_PORTAL: [u8; 7] = [b'D', 0, 0, 0, 6, b'P', 0];
/// `Terminate`: a polite goodbye before closing.
pub(crate) const TERMINATE: [u8; 5] = [b'X', 0, 0, 0, 4];

/// Backend message tags tare reacts to.
pub(crate) mod tag {
    pub(crate) const AUTHENTICATION: u8 = b'R';
    pub(crate) const ERROR: u8 = b'E';
    pub(crate) const READY: u8 = b'Z';
    pub(crate) const DATA_ROW: u8 = b'D';
    pub(crate) const COPY_IN: u8 = b'G';
    pub(crate) const COPY_OUT: u8 = b'H';
    pub(crate) const COPY_BOTH: u8 = b'W';
    pub(crate) const ROW_DESCRIPTION: u8 = b'T';
    pub(crate) const COMMAND_COMPLETE: u8 = b'C';
    pub(crate) const EMPTY_QUERY: u8 = b'I';
}

/// The column names of a RowDescription body (`None` if malformed).
pub(crate) fn column_names(body: &[u8]) -> Option<Vec<String>> {
    let n = u16::from_be_bytes(body.get(..2)?.try_into().ok()?) as usize;
    let mut pos = 2;
    let mut names = Vec::with_capacity(n.min(1024));
    for _ in 0..n {
        let len = body.get(pos..)?.iter().position(|b| *b == 0)?;
        names.push(String::from_utf8_lossy(&body[pos..pos + len]).into_owned());
        pos += len + 1 + 18;
    }
    (pos <= body.len()).then_some(names)
}

/// The values of a DataRow body, `None` for SQL NULL (`None` if malformed).
pub(crate) fn row_values(body: &[u8]) -> Option<Vec<Option<String>>> {
    let n = u16::from_be_bytes(body.get(..2)?.try_into().ok()?) as usize;
    let mut pos = 2;
    let mut values = Vec::with_capacity(n.min(1024));
    for _ in 0..n {
        let len = i32::from_be_bytes(body.get(pos..pos + 4)?.try_into().ok()?);
        pos += 4;
        if len < 0 {
            values.push(None);
            continue;
        }
        let v = body.get(pos..pos + len as usize)?;
        values.push(Some(String::from_utf8_lossy(v).into_owned()));
        pos += len as usize;
    }
    Some(values)
}

/// Largest backend message accepted: 1 GiB is PostgreSQL's own limit on a
/// field value (`MaxAllocSize`), so anything longer is a framing error.
pub(crate) const MAX_MESSAGE: usize = 1 << 30;

/// Complete backend messages at the front of a read buffer.
pub(crate) struct Frames<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Frames<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Bytes consumed by the messages returned so far.
    pub(crate) fn consumed(&self) -> usize {
        self.pos
    }

    /// The next complete message, `Ok(None)` if more bytes are needed, or an
    /// error if the length field is impossible (the stream is not PostgreSQL).
    #[inline]
    pub(crate) fn next_frame(&mut self) -> Result<Option<(u8, &'a [u8])>, FrameError> {
        let rest = &self.buf[self.pos..];
        if rest.len() < 5 {
            return Ok(None);
        }
        let len = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        if !(4..=MAX_MESSAGE).contains(&len) {
            return Err(FrameError { tag: rest[0], len });
        }
        if rest.len() < 1 + len {
            return Ok(None);
        }
        self.pos += 1 + len;
        Ok(Some((rest[0], &rest[5..1 + len])))
    }

    /// How many bytes the incomplete message at the front needs in total,
    /// when its header is already there (to grow the buffer once).
    pub(crate) fn pending_len(&self) -> Option<usize> {
        let rest = &self.buf[self.pos..];
        (rest.len() >= 5)
            .then(|| 1 + u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameError {
    pub tag: u8,
    pub len: usize,
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid message from server (tag {:?}, length {}): not a PostgreSQL server?",
            self.tag as char, self.len
        )
    }
}

/// The fields of an `ErrorResponse` or `NoticeResponse` tare reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerError {
    /// `ERROR`, `FATAL`, `PANIC` (the non-localized `V` field when present).
    pub severity: String,
    /// Five-character SQLSTATE (`28P01`, `3D000`, ...).
    pub code: String,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
    /// `P`: where in the statement (1-based, in characters) the error is.
    pub position: Option<u32>,
    /// `p` and `q`: the same in a statement the server ran internally
    /// (PL/pgSQL's), with that statement's text.
    pub internal_position: Option<u32>,
    pub internal_query: Option<String>,
    /// `W`: the call stack (`PL/pgSQL function ... line 1 at PERFORM`).
    pub context: Option<String>,
}

impl ServerError {
    pub fn parse(body: &[u8]) -> ServerError {
        let mut e = ServerError::default();
        let mut localized_severity = String::new();
        for field in body.split(|b| *b == 0) {
            let Some((&kind, value)) = field.split_first() else {
                continue;
            };
            let value = String::from_utf8_lossy(value).into_owned();
            match kind {
                b'S' => localized_severity = value,
                b'V' => e.severity = value,
                b'C' => e.code = value,
                b'M' => e.message = value,
                b'D' => e.detail = Some(value),
                b'H' => e.hint = Some(value),
                b'P' => e.position = value.parse().ok(),
                b'p' => e.internal_position = value.parse().ok(),
                b'q' => e.internal_query = Some(value),
                b'W' => e.context = Some(value),
                _ => {}
            }
        }
        if e.severity.is_empty() {
            e.severity = localized_severity;
        }
        e
    }

    /// The SQLSTATE class: its first two characters (PostgreSQL
    /// documentation, Appendix A "PostgreSQL Error Codes").
    pub fn class(&self) -> &str {
        self.code.get(..2).unwrap_or("??")
    }
}

/// Just the SQLSTATE of an `ErrorResponse`, without allocating (hot path).
pub(crate) fn sqlstate(body: &[u8]) -> [u8; 5] {
    for field in body.split(|b| *b == 0) {
        if field.len() == 6 && field[0] == b'C' {
            let mut code = [0u8; 5];
            code.copy_from_slice(&field[1..]);
            return code;
        }
    }
    *b"?????"
}

/// The transaction status of a `ReadyForQuery` body (`I` idle, `T` in a
/// transaction block, `E` in a failed one); `I` when the server left it out.
#[inline]
pub(crate) fn ready_status(body: &[u8]) -> u8 {
    body.first().copied().unwrap_or(b'I')
}

impl fmt::Display for ServerError {
    /// libpq's layout: `FATAL:  message` (two spaces), then `DETAIL:  ...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:  {}", self.severity, self.message)?;
        if let Some(d) = &self.detail {
            write!(f, " DETAIL:  {d}")?;
        }
        Ok(())
    }
}

/// Appends the decimal text of `v` without going through `fmt` (the
/// parameter of nearly every pgbench statement is an integer).
#[inline]
pub(crate) fn push_int(buf: &mut Vec<u8>, v: i64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    let neg = v < 0;
    let mut n = v.unsigned_abs();
    loop {
        i -= 1;
        tmp[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if neg {
        buf.push(b'-');
    }
    buf.extend_from_slice(&tmp[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use postgres_protocol::message::frontend as pp;

    #[test]
    fn hand_written_messages_match_postgres_protocol() {
        let mut ours = Vec::new();
        parse(&mut ours, "P0_1", "select $1");
        bind(&mut ours, "P0_1", 1, |_, b| {
            push_int(b, -42);
            true
        });
        ours.extend_from_slice(&EXECUTE);
        ours.extend_from_slice(&SYNC);
        query(&mut ours, |b| b.extend_from_slice(b"select 1"));

        let mut theirs = BytesMut::new();
        pp::parse("P0_1", "select $1", std::iter::empty(), &mut theirs).unwrap();
        pp::bind(
            "",
            "P0_1",
            std::iter::empty::<i16>(),
            ["-42"],
            |v, buf| {
                buf.extend_from_slice(v.as_bytes());
                Ok(postgres_protocol::IsNull::No)
            },
            std::iter::empty::<i16>(),
            &mut theirs,
        )
        .map_err(|_| ())
        .unwrap();
        pp::execute("", 0, &mut theirs).unwrap();
        pp::sync(&mut theirs);
        pp::query("select 1", &mut theirs).unwrap();
        assert_eq!(ours, theirs.to_vec());
    }

    #[test]
    fn frames_split_complete_messages_and_wait_for_the_rest() {
        let mut buf = vec![b'Z', 0, 0, 0, 5, b'I'];
        buf.extend_from_slice(&[b'C', 0, 0, 0, 13]);
        buf.extend_from_slice(b"SELECT");
        let mut f = Frames::new(&buf);
        assert_eq!(f.next_frame().unwrap(), Some((b'Z', &b"I"[..])));
        assert_eq!(f.next_frame().unwrap(), None);
        assert_eq!(f.consumed(), 6);
        assert_eq!(f.pending_len(), Some(14));
    }

    #[test]
    fn impossible_length_is_an_error() {
        let buf = [b'H', b'T', b'T', b'P', b'/', b'1'];
        assert!(Frames::new(&buf).next_frame().is_err());
    }

    #[test]
    fn error_fields_and_class() {
        let body = b"SERROR\0VERROR\0C23505\0Mduplicate key\0Dkey (id)=(1)\0\0";
        let e = ServerError::parse(body);
        assert_eq!(e.code, "23505");
        assert_eq!(e.class(), "23");
        assert_eq!(&sqlstate(body), b"23505");
        assert_eq!(e.to_string(), "ERROR:  duplicate key DETAIL:  key (id)=(1)");
    }

    /// Regression (found reading the engine's reply handling for fuzzing):
    /// the engine took the status at the body's offset in its read buffer,
    /// so a `ReadyForQuery` without a body yielded the next message's tag
    /// (`E` here: a needless ROLLBACK after a failed statement).
    #[test]
    fn an_empty_ready_for_query_is_idle_not_the_next_messages_tag() {
        let buf = [b'Z', 0, 0, 0, 4, b'E', 0, 0, 0, 4];
        let mut f = Frames::new(&buf);
        let (t, body) = f.next_frame().unwrap().unwrap();
        assert_eq!((t, body), (b'Z', &b""[..]));
        assert_eq!(ready_status(body), b'I');
        assert_eq!(ready_status(b"T"), b'T');
    }

    #[test]
    fn integers_format_like_display() {
        for v in [0, 7, -7, 1234567890, i64::MIN, i64::MAX] {
            let mut b = Vec::new();
            push_int(&mut b, v);
            assert_eq!(String::from_utf8(b).unwrap(), v.to_string());
        }
    }
}
