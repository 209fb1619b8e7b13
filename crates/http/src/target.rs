//! The target of a run: URL parts for the request line and Host header, and
//! the resolved endpoint sockets connect to.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use tare_engine::Endpoint;

use crate::HttpError;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The URL as given (for reports).
    pub url: String,
    /// `host[:port]` for the Host header, as in the URL.
    pub authority: String,
    /// Path and query for the request line (`/` when empty).
    pub path: String,
    pub endpoint: Endpoint,
}

/// Splits `http://host[:port][/path][?query]`. Only `http` is supported:
/// TLS cost is not what tare measures (yet), so https is an error, not a
/// silent downgrade.
pub fn split_url(url: &str) -> Result<(String, String, u16, String), HttpError> {
    let bad = |why: &str| HttpError::Url(format!("invalid URL {url:?}: {why}"));
    let rest = match url.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
        Some((scheme, _)) if scheme.eq_ignore_ascii_case("https") => {
            return Err(bad("https is not supported; use http://"))
        }
        Some((scheme, _)) => return Err(bad(&format!("unsupported scheme {scheme:?}"))),
        None => return Err(bad("expected http://HOST[:PORT]/PATH")),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    if authority.is_empty() {
        return Err(bad("missing host"));
    }
    if authority.contains('@') {
        return Err(bad(
            "user information in URLs is not supported; use -H 'Authorization: ...'",
        ));
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6
            .split_once(']')
            .ok_or_else(|| bad("unclosed '[' in host"))?;
        let port = match after {
            "" => None,
            p => Some(
                p.strip_prefix(':')
                    .ok_or_else(|| bad("garbage after ']'"))?,
            ),
        };
        (h.to_string(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad("invalid host"));
    }
    let port = match port {
        None => 80,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| bad(&format!("invalid port {p:?}")))?,
    };
    let tail = tail.split('#').next().unwrap_or("");
    let path = if tail.is_empty() {
        "/".to_string()
    } else if tail.starts_with('?') {
        format!("/{tail}")
    } else {
        tail.to_string()
    };
    if path.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad(
            "spaces or control characters in the path (percent-encode them)",
        ));
    }
    Ok((authority.to_string(), host, port, path))
}

impl Target {
    /// Parses `url`; with `unix`, connections go to that socket and the URL
    /// only supplies the Host header and path.
    pub fn new(url: &str, unix: Option<PathBuf>, allow_remote: bool) -> Result<Target, HttpError> {
        let (authority, host, port, path) = split_url(url)?;
        let endpoint = match unix {
            Some(p) => Endpoint::Unix(p),
            None => Endpoint::Tcp(resolve(&host, port)?),
        };
        if !allow_remote && !endpoint.is_local() {
            return Err(HttpError::NotLocal {
                addr: endpoint.to_string(),
            });
        }
        Ok(Target {
            url: url.to_string(),
            authority,
            path,
            endpoint,
        })
    }
}

fn resolve(host: &str, port: u16) -> Result<SocketAddr, HttpError> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| HttpError::Url(format!("cannot resolve {host}: {e}")))?
        .collect();
    // Prefer IPv4, as wrk's getaddrinfo order usually does for localhost.
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| addrs.first())
        .copied()
        .ok_or_else(|| HttpError::Url(format!("{host} resolves to no address")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_urls() {
        let (a, h, p, path) = split_url("http://127.0.0.1:8080/x?y=1").unwrap();
        assert_eq!(
            (a.as_str(), h.as_str(), p, path.as_str()),
            ("127.0.0.1:8080", "127.0.0.1", 8080, "/x?y=1")
        );
        let (_, h, p, path) = split_url("http://localhost").unwrap();
        assert_eq!((h.as_str(), p, path.as_str()), ("localhost", 80, "/"));
        let (_, h, p, _) = split_url("http://[::1]:81/").unwrap();
        assert_eq!((h.as_str(), p), ("::1", 81));
        let (_, _, _, path) = split_url("http://h?q").unwrap();
        assert_eq!(path, "/?q");
    }

    #[test]
    fn rejects_bad_urls_with_reasons() {
        for bad in [
            "127.0.0.1:8080",
            "https://x/",
            "ftp://x/",
            "http://",
            "http://h:0/",
            "http://h:99999/",
            "http://h:abc/",
            "http://[::1/",
            "http://u:p@h/",
            "http://h/a b",
        ] {
            let e = split_url(bad).unwrap_err().to_string();
            assert!(e.contains("invalid URL"), "{bad}: {e}");
        }
    }

    #[test]
    fn remote_needs_permission() {
        let e = Target::new("http://192.0.2.1/", None, false).unwrap_err();
        assert!(matches!(e, HttpError::NotLocal { .. }));
        assert!(Target::new("http://192.0.2.1/", None, true).is_ok());
        assert!(Target::new("http://localhost:1/", None, false).is_ok());
    }
}
