//! An incremental HTTP/1.1 response parser.
//!
//! Bytes arrive in reads of any size; [`Parser::feed`] consumes what belongs
//! to the current response and says when it is complete. The head is parsed
//! with `httparse` straight from the read buffer when it arrived whole (the
//! common case, no copy); only a head split across reads is buffered. Bodies
//! are skipped, never copied: Content-Length counts down, chunked encoding runs
//! a byte-level state machine, and a body without either ends at EOF.

/// Largest response head accepted; beyond it the response is an error.
pub(crate) const MAX_HEAD: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("malformed response head: {0}")]
    Head(&'static str),
    #[error("response head larger than {MAX_HEAD} bytes")]
    HeadTooLarge,
    #[error("invalid Content-Length")]
    ContentLength,
    #[error("malformed chunked body")]
    Chunk,
    #[error("connection closed before the response was complete")]
    Truncated,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// The response needs more bytes.
    More,
    /// The response is complete; `used` bytes of the last feed belonged to it.
    Done { used: usize },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Reading hex digits of a chunk size.
    Size {
        value: u64,
        digits: u8,
    },
    /// Skipping a chunk extension up to CR/LF.
    Ext {
        value: u64,
    },
    /// Expecting the LF of a size line.
    SizeLf {
        value: u64,
    },
    Data {
        remaining: u64,
    },
    DataCr,
    DataLf,
    /// At the start of a trailer line (or the final empty line).
    TrailerStart,
    TrailerLine,
    TrailerLf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Length { remaining: u64 },
    Chunked(Chunk),
    UntilClose,
}

/// Parser state for one connection; reset (not reallocated) per response.
#[derive(Debug)]
pub struct Parser {
    state: State,
    /// A head split across reads, kept until it is whole.
    head: Vec<u8>,
    /// The request was HEAD: the response has no body whatever it says.
    head_request: bool,
    pub status: u16,
    /// The server will close after this response.
    pub close: bool,
}

impl Parser {
    pub fn new(head_request: bool) -> Self {
        Self {
            state: State::Head,
            head: Vec::new(),
            head_request,
            status: 0,
            close: false,
        }
    }

    /// Whether the next request is HEAD (a mix draws each request anew).
    #[inline]
    pub(crate) fn set_head(&mut self, head_request: bool) {
        self.head_request = head_request;
    }

    /// Ready for the next response on the same connection.
    pub fn reset(&mut self) {
        self.state = State::Head;
        self.head.clear();
        self.status = 0;
        self.close = false;
    }

    /// True once any byte of the current response has been seen.
    pub fn started(&self) -> bool {
        self.state != State::Head || !self.head.is_empty()
    }

    /// Feeds newly read bytes.
    pub fn feed(&mut self, data: &[u8]) -> Result<Progress, ParseError> {
        let mut used = 0;
        loop {
            match self.state {
                State::Head => {
                    let (body_at, done) = self.parse_head(&data[used..])?;
                    used += body_at;
                    if !done {
                        return Ok(Progress::More);
                    }
                    // 1xx (but not 101) precedes the real response.
                    if (100..200).contains(&self.status) && self.status != 101 {
                        self.reset();
                        continue;
                    }
                }
                State::Length { remaining } => {
                    let take = remaining.min((data.len() - used) as u64);
                    used += take as usize;
                    let left = remaining - take;
                    if left == 0 {
                        return Ok(Progress::Done { used });
                    }
                    self.state = State::Length { remaining: left };
                    return Ok(Progress::More);
                }
                State::Chunked(c) => {
                    let (n, next) = chunked(c, &data[used..])?;
                    used += n;
                    match next {
                        None => return Ok(Progress::Done { used }),
                        Some(c) => {
                            self.state = State::Chunked(c);
                            return Ok(Progress::More);
                        }
                    }
                }
                State::UntilClose => return Ok(Progress::More),
            }
            if let State::Length { remaining: 0 } = self.state {
                return Ok(Progress::Done { used });
            }
        }
    }

    /// The connection reached end of stream.
    pub(crate) fn eof(&mut self) -> Result<Progress, ParseError> {
        match self.state {
            State::UntilClose => Ok(Progress::Done { used: 0 }),
            _ => Err(ParseError::Truncated),
        }
    }

    /// Parses the head from `data` (prefixed by any buffered part). Returns
    /// how many bytes of `data` it consumed and whether the head is complete.
    fn parse_head(&mut self, data: &[u8]) -> Result<(usize, bool), ParseError> {
        let buffered = self.head.len();
        let whole: &[u8] = if buffered == 0 {
            data
        } else {
            self.head.extend_from_slice(data);
            &self.head
        };
        let Some(head) = crate::head::scan(whole)? else {
            if whole.len() > MAX_HEAD {
                return Err(ParseError::HeadTooLarge);
            }
            if buffered == 0 {
                self.head.extend_from_slice(data);
            }
            return Ok((data.len(), false));
        };
        let len = head.len;
        if len > MAX_HEAD {
            return Err(ParseError::HeadTooLarge);
        }
        let status = head.status;
        let close = head.close.unwrap_or(head.http10);
        let length = head.content_length;
        let chunked_te = head.chunked;
        self.status = status;
        self.close = close;
        let no_body =
            self.head_request || (100..200).contains(&status) || status == 204 || status == 304;
        self.state = if no_body {
            State::Length { remaining: 0 }
        } else if chunked_te {
            State::Chunked(Chunk::Size {
                value: 0,
                digits: 0,
            })
        } else if let Some(n) = length {
            State::Length { remaining: n }
        } else {
            self.close = true;
            State::UntilClose
        };
        // Bytes of `data` that were head: all of the head minus what was
        // buffered before this call.
        let used = len - buffered;
        self.head.clear();
        Ok((used, true))
    }
}

/// Runs the chunked-body state machine over `data`. Returns bytes consumed
/// and the next state, or `None` when the body (with trailers) is complete.
fn chunked(mut c: Chunk, data: &[u8]) -> Result<(usize, Option<Chunk>), ParseError> {
    let mut i = 0;
    while i < data.len() {
        if let Chunk::Data { remaining } = c {
            let take = remaining.min((data.len() - i) as u64);
            i += take as usize;
            c = if remaining == take {
                Chunk::DataCr
            } else {
                Chunk::Data {
                    remaining: remaining - take,
                }
            };
            continue;
        }
        let b = data[i];
        i += 1;
        let end_of_size = |value: u64| {
            if value == 0 {
                Chunk::TrailerStart
            } else {
                Chunk::Data { remaining: value }
            }
        };
        c = match c {
            Chunk::Size { value, digits } => match b {
                b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                    if digits >= 15 {
                        return Err(ParseError::Chunk);
                    }
                    let d = (b as char).to_digit(16).expect("hex digit") as u64;
                    Chunk::Size {
                        value: value * 16 + d,
                        digits: digits + 1,
                    }
                }
                b';' | b' ' | b'\t' if digits > 0 => Chunk::Ext { value },
                b'\r' if digits > 0 => Chunk::SizeLf { value },
                b'\n' if digits > 0 => end_of_size(value),
                _ => return Err(ParseError::Chunk),
            },
            Chunk::Ext { value } => match b {
                b'\r' => Chunk::SizeLf { value },
                b'\n' => end_of_size(value),
                _ => Chunk::Ext { value },
            },
            Chunk::SizeLf { value } => match b {
                b'\n' => end_of_size(value),
                _ => return Err(ParseError::Chunk),
            },
            Chunk::DataCr => match b {
                b'\r' => Chunk::DataLf,
                b'\n' => Chunk::Size {
                    value: 0,
                    digits: 0,
                },
                _ => return Err(ParseError::Chunk),
            },
            Chunk::DataLf => match b {
                b'\n' => Chunk::Size {
                    value: 0,
                    digits: 0,
                },
                _ => return Err(ParseError::Chunk),
            },
            Chunk::TrailerStart => match b {
                b'\r' => Chunk::TrailerLf,
                b'\n' => return Ok((i, None)),
                _ => Chunk::TrailerLine,
            },
            Chunk::TrailerLine => match b {
                b'\n' => Chunk::TrailerStart,
                _ => Chunk::TrailerLine,
            },
            Chunk::TrailerLf => match b {
                b'\n' => return Ok((i, None)),
                _ => return Err(ParseError::Chunk),
            },
            Chunk::Data { .. } => unreachable!("handled above"),
        };
    }
    Ok((i, Some(c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `bytes` in pieces of every size from 1 to len and checks the
    /// parser finishes exactly at the end each time.
    fn complete_in_any_split(bytes: &[u8], head_request: bool) -> Parser {
        let mut last = None;
        for step in 1..=bytes.len() {
            let mut p = Parser::new(head_request);
            let mut at = 0;
            let mut done = false;
            while at < bytes.len() {
                let end = (at + step).min(bytes.len());
                match p.feed(&bytes[at..end]).unwrap() {
                    Progress::Done { used } => {
                        assert_eq!(at + used, bytes.len(), "step {step}");
                        done = true;
                        break;
                    }
                    Progress::More => at = end,
                }
            }
            assert!(done, "step {step}: not complete");
            last = Some(p);
        }
        last.unwrap()
    }

    #[test]
    fn content_length() {
        let p = complete_in_any_split(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false);
        assert_eq!(p.status, 200);
        assert!(!p.close);
    }

    #[test]
    fn chunked_with_extensions_and_trailers() {
        let r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n";
        complete_in_any_split(r, false);
    }

    #[test]
    fn connection_close_and_http10() {
        let p = complete_in_any_split(
            b"HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            false,
        );
        assert!(p.close);
        assert_eq!(p.status, 404);
        let p = complete_in_any_split(b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", false);
        assert!(p.close);
    }

    #[test]
    fn body_until_close_ends_at_eof() {
        let mut p = Parser::new(false);
        assert_eq!(
            p.feed(b"HTTP/1.1 200 OK\r\n\r\nabc").unwrap(),
            Progress::More
        );
        assert_eq!(p.feed(b"def").unwrap(), Progress::More);
        assert_eq!(p.eof().unwrap(), Progress::Done { used: 0 });
        assert!(p.close);
    }

    #[test]
    fn head_and_204_have_no_body() {
        complete_in_any_split(b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", true);
        complete_in_any_split(b"HTTP/1.1 204 No Content\r\n\r\n", false);
    }

    #[test]
    fn skips_100_continue() {
        let p = complete_in_any_split(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
            false,
        );
        assert_eq!(p.status, 201);
    }

    #[test]
    fn reports_only_its_own_bytes() {
        let mut p = Parser::new(false);
        let two = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxHTTP/1.1";
        assert_eq!(
            p.feed(two).unwrap(),
            Progress::Done {
                used: two.len() - 8
            }
        );
    }

    #[test]
    fn truncated_and_garbage_are_errors() {
        let mut p = Parser::new(false);
        p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
            .unwrap();
        assert_eq!(p.eof(), Err(ParseError::Truncated));
        assert!(Parser::new(false).feed(b"garbage\r\n\r\n").is_err());
        assert!(Parser::new(false)
            .feed(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n")
            .is_err());
        assert!(Parser::new(false)
            .feed(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n")
            .is_err());
        assert!(Parser::new(false)
            .feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
            .is_err());
        assert!(Parser::new(false)
            .feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n")
            .is_err());
    }

    #[test]
    fn oversized_head_is_an_error() {
        let mut p = Parser::new(false);
        p.feed(b"HTTP/1.1 200 OK\r\n").unwrap();
        let filler = format!("X-Filler: {}\r\n", "a".repeat(1000));
        let mut err = None;
        for _ in 0..100 {
            if let Err(e) = p.feed(filler.as_bytes()) {
                err = Some(e);
                break;
            }
        }
        assert!(matches!(
            err,
            Some(ParseError::HeadTooLarge) | Some(ParseError::Head(_))
        ));
    }
}
