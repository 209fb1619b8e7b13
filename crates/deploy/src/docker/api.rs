//! The few Docker Engine API calls tare makes, over the engine's Unix
//! socket, synchronously: one connection per call, HTTP/1.1 with
//! `Connection: close`, JSON in and out (docs/placements.md, "Docker").
//!
//! Written here rather than taken from an async client library: tare makes
//! about fifteen kinds of call, each next to a container start that takes
//! far longer, and the library with its runtime and generated models was a
//! third of the workspace's dependencies and most of a clean build's time
//! (docs/testing.md, "Where the build time goes").

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

/// Where the engine listens when `DOCKER_HOST` is not set.
const DEFAULT_SOCKET: &str = "/var/run/docker.sock";
/// The most of one answer tare reads (a listing, an inspection, a log tail,
/// an import's progress lines are kilobytes).
const MAX_REPLY: u64 = 64 << 20;

/// A failed call: the engine's own status and message, or why there was no
/// answer.
#[derive(Debug)]
pub(crate) enum ApiError {
    /// The engine answered with an error status (`message` is its
    /// `{"message": ...}`).
    Status { status: u16, message: String },
    /// No usable answer: the socket, a timeout, bytes that are not HTTP.
    Transport(String),
}

impl ApiError {
    /// True when the engine said the object does not exist.
    pub(crate) fn is_not_found(&self) -> bool {
        matches!(self, ApiError::Status { status: 404, .. })
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiError::Status { status, message } => {
                write!(f, "Docker responded with status code {status}: {message}")
            }
            ApiError::Transport(why) => write!(f, "{why}"),
        }
    }
}

impl From<ApiError> for crate::error::DeployError {
    fn from(e: ApiError) -> Self {
        crate::error::DeployError::Docker(e.to_string())
    }
}

/// The engine at `DOCKER_HOST` (`unix://PATH`) or the default socket.
pub(crate) struct Docker {
    socket: PathBuf,
}

impl Docker {
    /// The engine's socket, checked with `/_ping`.
    pub(crate) fn connect() -> Result<Docker, String> {
        let socket = match std::env::var("DOCKER_HOST") {
            Ok(host) if !host.is_empty() => match host.strip_prefix("unix://") {
                Some(path) => PathBuf::from(path),
                None => {
                    return Err(format!(
                        "DOCKER_HOST={host}: tare reaches Docker only at unix://PATH"
                    ))
                }
            },
            _ => PathBuf::from(DEFAULT_SOCKET),
        };
        let docker = Docker { socket };
        let pong = docker
            .call("GET", "/_ping", None, Duration::from_secs(30))
            .map_err(|e| e.to_string())?;
        if pong.trim_ascii() != b"OK" {
            return Err(format!(
                "{}: /_ping answered {:?}, not OK",
                docker.socket.display(),
                String::from_utf8_lossy(&pong[..pong.len().min(80)])
            ));
        }
        Ok(docker)
    }

    /// `GET path`, its JSON.
    pub(crate) fn get(&self, path: &str) -> Result<Value, ApiError> {
        json(&self.call("GET", path, None, Duration::from_secs(120))?)
    }

    /// `GET path`, its raw body (a container's log).
    pub(crate) fn raw_get(&self, path: &str) -> Result<Vec<u8>, ApiError> {
        self.call("GET", path, None, Duration::from_secs(120))
    }

    /// `POST path` with a JSON body (or none), its JSON (or null when the
    /// answer has no body).
    pub(crate) fn post(&self, path: &str, body: Option<&Value>) -> Result<Value, ApiError> {
        let bytes = body.map(|b| b.to_string().into_bytes());
        let body = bytes.as_deref().map(|b| ("application/json", b));
        let reply = self.call("POST", path, body, Duration::from_secs(120))?;
        if reply.is_empty() {
            return Ok(Value::Null);
        }
        json(&reply)
    }

    /// `DELETE path`.
    pub(crate) fn delete(&self, path: &str) -> Result<(), ApiError> {
        self.call("DELETE", path, None, Duration::from_secs(120))
            .map(drop)
    }

    /// `method path` with a tar body; the raw answer.
    pub(crate) fn send_tar(
        &self,
        method: &str,
        path: &str,
        tar: &[u8],
        timeout: Duration,
    ) -> Result<Vec<u8>, ApiError> {
        self.call(method, path, Some(("application/x-tar", tar)), timeout)
    }

    /// One request on a connection of its own; the body of a 2xx answer.
    fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<(&str, &[u8])>,
        timeout: Duration,
    ) -> Result<Vec<u8>, ApiError> {
        let transport = |what: &str, e: std::io::Error| {
            ApiError::Transport(format!("{} ({what}): {e}", self.socket.display()))
        };
        let mut conn = UnixStream::connect(&self.socket).map_err(|e| transport("connect", e))?;
        conn.set_read_timeout(Some(timeout))
            .and_then(|()| conn.set_write_timeout(Some(timeout)))
            .map_err(|e| transport("timeout", e))?;
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: docker\r\nUser-Agent: tare\r\nConnection: close\r\n"
        );
        if let Some((kind, bytes)) = body {
            head.push_str(&format!(
                "Content-Type: {kind}\r\nContent-Length: {}\r\n",
                bytes.len()
            ));
        }
        head.push_str("\r\n");
        conn.write_all(head.as_bytes())
            .and_then(|()| conn.write_all(body.map_or(&[][..], |(_, b)| b)))
            .map_err(|e| transport(&format!("{method} {path}"), e))?;
        let mut reply = Vec::new();
        conn.take(MAX_REPLY)
            .read_to_end(&mut reply)
            .map_err(|e| transport(&format!("reading the answer to {method} {path}"), e))?;
        let (status, body) = parse_reply(&reply)
            .map_err(|why| ApiError::Transport(format!("{method} {path}: {why}")))?;
        if (200..300).contains(&status) {
            return Ok(body);
        }
        Err(ApiError::Status {
            status,
            message: error_message(&body),
        })
    }
}

fn json(bytes: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::Transport(format!("the engine's answer is not JSON: {e}")))
}

/// The engine's `{"message": ...}`, or the body's first line.
pub(crate) fn error_message(body: &[u8]) -> String {
    match serde_json::from_slice::<Value>(body) {
        Ok(v) => match v.get("message").and_then(Value::as_str) {
            Some(m) => m.to_string(),
            None => v.to_string(),
        },
        Err(_) => String::from_utf8_lossy(body)
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(300)
            .collect(),
    }
}

/// An HTTP/1.1 answer read to the end of its connection: its status and
/// body (de-chunked when the engine streamed it).
pub(crate) fn parse_reply(bytes: &[u8]) -> Result<(u16, Vec<u8>), String> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut reply = httparse::Response::new(&mut headers);
    let head_len = match reply.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            return Err(format!(
                "the answer ended in its head ({} bytes)",
                bytes.len()
            ))
        }
        Err(e) => return Err(format!("not an HTTP answer: {e}")),
    };
    let status = reply.code.unwrap_or(0);
    let header = |name: &str| {
        reply
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_ascii_lowercase())
    };
    let rest = &bytes[head_len..];
    if header("transfer-encoding").is_some_and(|te| te.ends_with("chunked")) {
        return dechunk(rest).map(|body| (status, body));
    }
    match header("content-length") {
        Some(len) => {
            let len: usize = len
                .parse()
                .map_err(|_| format!("Content-Length {len:?} is not a number"))?;
            match rest.get(..len) {
                Some(body) => Ok((status, body.to_vec())),
                None => Err(format!(
                    "the answer ended after {} of its {len} bytes",
                    rest.len()
                )),
            }
        }
        None => Ok((status, rest.to_vec())),
    }
}

/// A chunked body, whole.
fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let line_end = memchr_crlf(rest).ok_or("a chunk's size line has no end")?;
        let line =
            std::str::from_utf8(&rest[..line_end]).map_err(|_| "a chunk size is not text")?;
        let hex = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(hex, 16)
            .map_err(|_| format!("chunk size {hex:?} is not hexadecimal"))?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        let chunk = rest
            .get(..size)
            .ok_or_else(|| format!("a chunk of {size} bytes ended after {}", rest.len()))?;
        body.extend_from_slice(chunk);
        rest = rest
            .get(size..)
            .and_then(|r| r.strip_prefix(b"\r\n"))
            .ok_or("a chunk does not end in CRLF")?;
    }
}

fn memchr_crlf(bytes: &[u8]) -> Option<usize> {
    bytes.windows(2).position(|w| w == b"\r\n")
}

/// A container's log as the engine sends it without a terminal: frames of
/// an 8-byte header (stream, three zero bytes, big-endian length) and that
/// many bytes; stdout and stderr interleaved as they were written.
pub(crate) fn demux_log(mut bytes: &[u8]) -> String {
    let mut out = Vec::new();
    while bytes.len() >= 8 && bytes[0] <= 2 && bytes[1..4] == [0, 0, 0] {
        let len = u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
        let end = (8 + len).min(bytes.len());
        out.extend_from_slice(&bytes[8..end]);
        bytes = &bytes[end..];
    }
    // A container with a terminal sends its output raw.
    out.extend_from_slice(bytes);
    String::from_utf8_lossy(&out).into_owned()
}

/// The first error in a stream of JSON progress messages (an image
/// import's answer): the engine reports a failed import there, with a 200.
pub(crate) fn stream_error(bytes: &[u8]) -> Option<String> {
    serde_json::Deserializer::from_slice(bytes)
        .into_iter::<Value>()
        .map_while(Result::ok)
        .find_map(|v| {
            v.get("error")
                .or_else(|| v.pointer("/errorDetail/message"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
}

/// `s` for a URL's query: every byte but the unreserved ones escaped.
pub(crate) fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The `filters` query value selecting objects that carry `label`.
pub(crate) fn label_filter(label: &str) -> String {
    query_escape(&serde_json::json!({ "label": [label] }).to_string())
}

/// Appends `src` as a plain regular-file entry named `name`, keeping mode,
/// owner and mtime. Written by hand because the tar crate emits GNU sparse
/// entries for files with holes (linkers leave them), which the engine's
/// extractor rejects ("unhandled tar header type 83").
pub(crate) fn append_regular(
    b: &mut tar::Builder<Vec<u8>>,
    name: &std::path::Path,
    src: &std::path::Path,
) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let file = std::fs::File::open(src)?;
    let md = file.metadata()?;
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Regular);
    h.set_size(md.len());
    h.set_mode(md.mode() & 0o7777);
    h.set_uid(md.uid().into());
    h.set_gid(md.gid().into());
    h.set_mtime(md.mtime().max(0) as u64);
    b.append_data(&mut h, name, file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_answer_is_dechunked() {
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4;x=y\r\n\":1}\r\n0\r\n\r\n";
        let (status, body) = parse_reply(raw).unwrap();
        assert_eq!(status, 200);
        assert_eq!(body, b"{\"a\":1}");
    }

    #[test]
    fn a_sized_answer_is_cut_at_its_length_and_a_short_one_is_an_error() {
        let raw = b"HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\n\r\nhelloEXTRA";
        assert_eq!(parse_reply(raw).unwrap(), (404, b"hello".to_vec()));
        let short = b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nhello";
        assert!(parse_reply(short).unwrap_err().contains("5 of its 50"));
        assert!(parse_reply(b"HTTP/1.1 200").is_err());
        assert!(parse_reply(b"\x00\x01garbage\r\n\r\n").is_err());
    }

    #[test]
    fn an_error_status_carries_the_engines_message() {
        assert_eq!(
            error_message(br#"{"message":"No such container: x"}"#),
            "No such container: x"
        );
        assert_eq!(error_message(b"page not found\nmore"), "page not found");
    }

    #[test]
    fn a_log_is_demultiplexed_in_order() {
        let mut raw = vec![1, 0, 0, 0, 0, 0, 0, 3];
        raw.extend_from_slice(b"out");
        raw.extend_from_slice(&[2, 0, 0, 0, 0, 0, 0, 4]);
        raw.extend_from_slice(b"err\n");
        assert_eq!(demux_log(&raw), "outerr\n");
        assert_eq!(demux_log(b"plain text"), "plain text");
        // A frame longer than what arrived keeps what arrived.
        assert_eq!(demux_log(&[1, 0, 0, 0, 0, 0, 0, 9, b'a']), "a");
    }

    #[test]
    fn an_import_error_is_found_in_its_progress_stream() {
        let ok = br#"{"status":"sha256:abc"}"#;
        assert_eq!(stream_error(ok), None);
        let failed = br#"{"status":"Downloading"}
{"errorDetail":{"message":"unhandled tar header type 83"},"error":"unhandled tar header type 83"}"#;
        assert_eq!(
            stream_error(failed).as_deref(),
            Some("unhandled tar header type 83")
        );
    }

    #[test]
    fn query_values_are_escaped() {
        assert_eq!(query_escape("LABEL a=\"b c\""), "LABEL%20a%3D%22b%20c%22");
        assert_eq!(
            label_filter("tare.owner"),
            "%7B%22label%22%3A%5B%22tare.owner%22%5D%7D"
        );
    }
}
