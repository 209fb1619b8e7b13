//! The response bytes, built once at start-up.

use crate::config::ServeConfig;

pub(crate) struct Responses {
    /// Response to a keep-alive request.
    pub keep: Vec<u8>,
    /// Response to a request that asked to close (`Connection: close`, or
    /// HTTP/1.0 without keep-alive).
    pub close: Vec<u8>,
    /// The same for HEAD requests: headers only.
    pub keep_head: Vec<u8>,
    pub close_head: Vec<u8>,
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn build(c: &ServeConfig, close: bool, head: bool) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {} {}\r\nServer: tare\r\n",
        c.status,
        reason(c.status)
    );
    out.push_str("Content-Type: text/plain\r\n");
    if c.chunked {
        out.push_str("Transfer-Encoding: chunked\r\n");
    } else {
        out.push_str(&format!("Content-Length: {}\r\n", c.body_size));
    }
    if close {
        out.push_str("Connection: close\r\n");
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    if head {
        return bytes;
    }
    if c.chunked {
        // Two chunks when possible, so clients see a real chunk boundary.
        let first = c.body_size / 2;
        for part in [first, c.body_size - first] {
            if part > 0 {
                bytes.extend_from_slice(format!("{part:x}\r\n").as_bytes());
                bytes.resize(bytes.len() + part, b'x');
                bytes.extend_from_slice(b"\r\n");
            }
        }
        bytes.extend_from_slice(b"0\r\n\r\n");
    } else {
        bytes.resize(bytes.len() + c.body_size, b'x');
    }
    bytes
}

impl Responses {
    pub(crate) fn new(c: &ServeConfig) -> Self {
        Self {
            keep: build(c, false, false),
            close: build(c, true, false),
            keep_head: build(c, false, true),
            close_head: build(c, true, true),
        }
    }

    pub(crate) fn get(&self, close: bool, head: bool) -> &[u8] {
        match (close, head) {
            (false, false) => &self.keep,
            (true, false) => &self.close,
            (false, true) => &self.keep_head,
            (true, true) => &self.close_head,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_length_matches_body() {
        let r = Responses::new(&ServeConfig {
            body_size: 5,
            ..Default::default()
        });
        let s = String::from_utf8(r.keep.clone()).unwrap();
        assert!(s.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(s.ends_with("\r\n\r\nxxxxx"));
        assert!(s.contains("Content-Length: 5\r\n"));
        assert!(String::from_utf8_lossy(&r.close).contains("Connection: close"));
    }

    #[test]
    fn chunked_body_is_well_formed() {
        let r = Responses::new(&ServeConfig {
            body_size: 5,
            chunked: true,
            ..Default::default()
        });
        let s = String::from_utf8(r.keep.clone()).unwrap();
        assert!(
            s.ends_with("\r\n\r\n2\r\nxx\r\n3\r\nxxx\r\n0\r\n\r\n"),
            "{s:?}"
        );
    }
}
