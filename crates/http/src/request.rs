//! The request, serialized once: every send on every connection writes these
//! same bytes.

/// Builds `METHOD PATH HTTP/1.1` with Host (unless given), the user's
/// headers, `Content-Length` for a body, and `Connection: close` when each
/// request gets its own connection.
pub fn build(
    method: &str,
    path: &str,
    authority: &str,
    headers: &[(String, String)],
    body: &[u8],
    keepalive: bool,
) -> Vec<u8> {
    let has = |name: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    let mut out = format!("{method} {path} HTTP/1.1\r\n");
    if !has("host") {
        out.push_str(&format!("Host: {authority}\r\n"));
    }
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() && !has("content-length") {
        out.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    if !keepalive && !has("connection") {
        out.push_str("Connection: close\r\n");
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// Parses a `-H 'Name: value'` argument.
pub fn parse_header(text: &str) -> Result<(String, String), String> {
    let (k, v) = text
        .split_once(':')
        .ok_or_else(|| format!("invalid header {text:?}: expected 'Name: value'"))?;
    let k = k.trim();
    if k.is_empty() || !k.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
        return Err(format!("invalid header name in {text:?}"));
    }
    let v = v.trim();
    if v.bytes().any(|b| b == b'\r' || b == b'\n') {
        return Err(format!("invalid header {text:?}: line breaks in the value"));
    }
    Ok((k.to_string(), v.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_get_is_what_wrk_sends() {
        let r = build("GET", "/", "127.0.0.1:8080", &[], b"", true);
        assert_eq!(r, b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n");
    }

    #[test]
    fn body_headers_and_close() {
        let h = vec![("X-A".to_string(), "1".to_string())];
        let r = build("POST", "/p", "h", &h, b"abc", false);
        let s = String::from_utf8(r).unwrap();
        assert_eq!(
            s,
            "POST /p HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc"
        );
    }

    #[test]
    fn user_host_replaces_default() {
        let h = vec![("host".to_string(), "example".to_string())];
        let s = String::from_utf8(build("GET", "/", "h", &h, b"", true)).unwrap();
        assert_eq!(s.matches("ost:").count(), 1);
    }

    #[test]
    fn header_parsing() {
        assert_eq!(parse_header("A: b c").unwrap(), ("A".into(), "b c".into()));
        assert!(parse_header("nocolon").is_err());
        assert!(parse_header(": v").is_err());
        assert!(parse_header("A: b\r\nX: y").is_err());
    }
}
