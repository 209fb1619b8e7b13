//! The request, serialized once: every send on every connection writes these
//! same bytes.

/// Builds `METHOD PATH HTTP/1.1` with Host (unless given), the user's
/// headers, `Content-Length` for a body, and `Connection: close` when each
/// request gets its own connection.
pub(crate) fn build(
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

/// Parses a header as `-H 'Name: value'` and an experiment's
/// `[load.http] headers` give it: the name a token (RFC 9110 §5.1), the
/// value without CR, LF or NUL (RFC 9110 §5.5: they would end the header
/// or be refused), both trimmed.
pub fn parse_header(text: &str) -> Result<(String, String), String> {
    let (k, v) = text
        .split_once(':')
        .ok_or_else(|| format!("invalid header {text:?}: expected 'Name: value'"))?;
    let k = k.trim();
    if k.is_empty() || !k.bytes().all(is_tchar) {
        return Err(format!(
            "invalid header name in {text:?}: letters, digits and !#$%&'*+-.^_`|~ only"
        ));
    }
    let v = v.trim();
    if v.bytes().any(|b| b == b'\r' || b == b'\n') {
        return Err(format!("invalid header {text:?}: line breaks in the value"));
    }
    if v.bytes().any(|b| b == 0) {
        return Err(format!("invalid header {text:?}: a NUL byte in the value"));
    }
    Ok((k.to_string(), v.to_string()))
}

/// A method as tare sends it: an uppercase token (`GET`, `POST`,
/// `PURGE`, `MKCOL`, `VERSION-CONTROL`).
pub fn check_method(method: &str) -> Result<(), String> {
    if method.is_empty()
        || !method
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b == b'-' || b == b'_')
    {
        return Err(format!(
            "invalid method {method:?}: an uppercase token such as GET or POST"
        ));
    }
    Ok(())
}

/// RFC 9110 §5.6.2 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
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
        assert!(parse_header("A: b\0").is_err());
        assert!(parse_header("A\0: b").is_err());
        assert!(parse_header("A B: c").is_err());
        assert!(parse_header("(a): c").is_err());
        assert_eq!(
            parse_header("X-Trace_id.1: a:b").unwrap(),
            ("X-Trace_id.1".into(), "a:b".into())
        );
    }

    #[test]
    fn methods_are_uppercase_tokens() {
        for ok in ["GET", "POST", "VERSION-CONTROL", "M_SEARCH"] {
            assert!(check_method(ok).is_ok(), "{ok}");
        }
        for bad in ["", "get", "GE T", "GET\0", "GET\r\n"] {
            assert!(check_method(bad).is_err(), "{bad:?}");
        }
    }
}
