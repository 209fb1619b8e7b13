//! Pointing a reverse proxy at another backend before building it, so a
//! user's proxy config can be measured in front of a backend tare started
//! (`tare tune` on seed 003's set-up: docs/studies.md, seed 003) without ever
//! reaching the servers the config names. Every `server` of every `upstream`
//! block, and every `proxy_pass` to a bare address, is pointed at the
//! backend; what cannot be pointed there for certain (a server chosen by a
//! variable, TLS, a non-HTTP backend, TCP proxying in `stream`) is an error
//! naming the statement, never a guess.

use thiserror::Error;

use crate::payload::{Payload, Statement};

/// Directives that pass requests to a backend that is not plain HTTP.
const OTHER_PASSES: &[&str] = &[
    "fastcgi_pass",
    "uwsgi_pass",
    "scgi_pass",
    "grpc_pass",
    "memcached_pass",
];

#[derive(Debug, Error, PartialEq, Eq)]
pub enum RetargetError {
    #[error("{at}: `proxy_pass {arg}` chooses its server with a variable, so tare cannot point it at the backend; name an upstream block or an address")]
    Variable { at: String, arg: String },
    #[error("{at}: `proxy_pass {arg}`: only http:// can be pointed at tare's backend (tare serve speaks plain HTTP)")]
    Scheme { at: String, arg: String },
    #[error("{at}: upstream {name} has no `server` to point at the backend")]
    EmptyUpstream { at: String, name: String },
    #[error("{at}: `{directive}` passes requests to a non-HTTP backend; tare's backend is tare serve (HTTP), reached with proxy_pass")]
    OtherPass { at: String, directive: String },
    #[error("{at}: TCP proxying in `stream` is not an HTTP reverse proxy; tare measures http proxying only")]
    Stream { at: String },
    #[error("{file}: no `proxy_pass` in the http block: this is not a reverse-proxy config")]
    NotAProxy { file: String },
}

/// What [`retarget`] made.
#[derive(Debug, Clone, PartialEq)]
pub struct Retargeted {
    pub payload: Payload,
    /// Names of the upstream blocks pointed at the backend.
    pub upstreams: Vec<String>,
    /// `proxy_pass` statements found (pointed at an upstream or the backend).
    pub proxy_passes: usize,
    /// The first proxied location with a literal prefix (`location /api/`),
    /// a path that reaches the backend; `/` when there is none.
    pub path: String,
}

/// Is there a `proxy_pass` in the http context (includes followed)?
pub fn is_proxy(payload: &Payload) -> bool {
    fn go(stmts: &[Statement], in_stream: bool) -> bool {
        stmts.iter().any(|s| {
            let stream = in_stream || s.directive == "stream";
            (s.directive == "proxy_pass" && !in_stream)
                || s.block.as_deref().is_some_and(|b| go(b, stream))
        })
    }
    // Included files are entries of `config` too; a file included from
    // `stream` is rare enough that counting it as http errs on "a proxy".
    payload.config.iter().any(|c| go(&c.parsed, false))
}

/// A copy of `payload` whose upstream servers and bare `proxy_pass`
/// addresses are `backend` (`host:port`, or any placeholder the caller
/// replaces later).
pub fn retarget(payload: &Payload, backend: &str) -> Result<Retargeted, RetargetError> {
    let mut out = payload.clone();
    let upstream_names = upstream_names(payload);
    let mut walk = Walk {
        backend,
        upstream_names: &upstream_names,
        upstreams: Vec::new(),
        proxy_passes: 0,
        path: None,
    };
    for config in &mut out.config {
        let file = config.file.clone();
        walk.block(&file, &mut config.parsed, false)?;
    }
    if walk.proxy_passes == 0 {
        return Err(RetargetError::NotAProxy {
            file: payload
                .config
                .first()
                .map(|c| c.file.clone())
                .unwrap_or_default(),
        });
    }
    Ok(Retargeted {
        upstreams: walk.upstreams,
        proxy_passes: walk.proxy_passes,
        path: walk.path.unwrap_or_else(|| "/".into()),
        payload: out,
    })
}

fn upstream_names(payload: &Payload) -> Vec<String> {
    fn go(stmts: &[Statement], out: &mut Vec<String>) {
        for s in stmts {
            if s.directive == "upstream" {
                if let Some(name) = s.args.first() {
                    out.push(name.clone());
                }
            }
            if let Some(b) = &s.block {
                go(b, out);
            }
        }
    }
    let mut out = Vec::new();
    for c in &payload.config {
        go(&c.parsed, &mut out);
    }
    out
}

struct Walk<'a> {
    backend: &'a str,
    upstream_names: &'a [String],
    upstreams: Vec<String>,
    proxy_passes: usize,
    path: Option<String>,
}

impl Walk<'_> {
    fn block(
        &mut self,
        file: &str,
        stmts: &mut [Statement],
        in_stream: bool,
    ) -> Result<(), RetargetError> {
        for s in stmts.iter_mut() {
            let at = format!("{file}:{}", s.line);
            match s.directive.as_str() {
                "stream" => return Err(RetargetError::Stream { at }),
                "proxy_pass" if in_stream => return Err(RetargetError::Stream { at }),
                "upstream" => self.upstream(&at, s)?,
                "proxy_pass" => self.proxy_pass(&at, s)?,
                d if OTHER_PASSES.contains(&d) => {
                    return Err(RetargetError::OtherPass {
                        at,
                        directive: d.to_string(),
                    })
                }
                _ => {}
            }
            if s.directive == "location" && self.path.is_none() {
                self.path = proxied_prefix(s);
            }
            if s.directive != "upstream" {
                if let Some(block) = &mut s.block {
                    self.block(file, block, in_stream)?;
                }
            }
        }
        Ok(())
    }

    fn upstream(&mut self, at: &str, s: &mut Statement) -> Result<(), RetargetError> {
        let name = s.args.first().cloned().unwrap_or_default();
        let servers: Vec<&mut Statement> = s
            .block
            .iter_mut()
            .flatten()
            .filter(|c| c.directive == "server")
            .collect();
        if servers.is_empty() {
            return Err(RetargetError::EmptyUpstream {
                at: at.to_string(),
                name,
            });
        }
        for server in servers {
            // The address is the first argument; weight=, max_fails=,
            // backup... stay: they shape how nginx uses the pool.
            match server.args.first_mut() {
                Some(addr) => *addr = self.backend.to_string(),
                None => server.args.push(self.backend.to_string()),
            }
        }
        self.upstreams.push(name);
        Ok(())
    }

    fn proxy_pass(&mut self, at: &str, s: &mut Statement) -> Result<(), RetargetError> {
        let arg = s.args.first().cloned().unwrap_or_default();
        let err_scheme = || RetargetError::Scheme {
            at: at.to_string(),
            arg: arg.clone(),
        };
        let Some((scheme, rest)) = arg.split_once("://") else {
            return Err(err_scheme());
        };
        if !scheme.eq_ignore_ascii_case("http") {
            return Err(err_scheme());
        }
        // `http://unix:/run/app.sock:/uri`: the socket path ends at the ':'.
        let (host, uri) = match rest.strip_prefix("unix:") {
            Some(sock) => match sock.find(':') {
                Some(i) => (&rest[..5 + i], &sock[i + 1..]),
                None => (rest, ""),
            },
            None => match rest.find('/') {
                Some(i) => (&rest[..i], &rest[i..]),
                None => (rest, ""),
            },
        };
        if host.contains('$') {
            return Err(RetargetError::Variable {
                at: at.to_string(),
                arg,
            });
        }
        self.proxy_passes += 1;
        if self.upstream_names.iter().any(|n| n == host) {
            return Ok(());
        }
        s.args[0] = format!("http://{}{uri}", self.backend);
        Ok(())
    }
}

/// `location /api/ { proxy_pass ...; }` → `/api/`: a prefix a request can
/// have (no regex, no named location).
fn proxied_prefix(location: &Statement) -> Option<String> {
    let block = location.block.as_deref()?;
    if !block.iter().any(|s| s.directive == "proxy_pass") {
        return None;
    }
    let (modifier, path) = match location.args.as_slice() {
        [path] => ("", path.as_str()),
        [m, path] => (m.as_str(), path.as_str()),
        _ => return None,
    };
    (matches!(modifier, "" | "=" | "^~") && path.starts_with('/')).then(|| path.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(json: &str) -> Payload {
        serde_json::from_str(json).unwrap()
    }

    fn stmt(p: &Payload, path: &[usize]) -> Statement {
        let mut list = &p.config[0].parsed;
        let (last, inner) = path.split_last().unwrap();
        for &i in inner {
            list = list[i].block.as_ref().unwrap();
        }
        list[*last].clone()
    }

    const SEED003: &str = r#"{"config":[{"file":"n.conf","parsed":[
        {"directive":"http","line":1,"args":[],"block":[
          {"directive":"upstream","line":2,"args":["backend"],"block":[
            {"directive":"server","line":3,"args":["10.0.0.1:8080","weight=3"]},
            {"directive":"server","line":4,"args":["unix:/run/app.sock","backup"]}]},
          {"directive":"server","line":5,"args":[],"block":[
            {"directive":"location","line":6,"args":["~","\\.php$"],"block":[
              {"directive":"proxy_pass","line":7,"args":["http://backend"]}]},
            {"directive":"location","line":8,"args":["/api/"],"block":[
              {"directive":"proxy_pass","line":9,"args":["http://backend/v1/"]}]},
            {"directive":"location","line":10,"args":["/direct"],"block":[
              {"directive":"proxy_pass","line":11,"args":["http://192.0.2.7:9000/x$request_uri"]}]},
            {"directive":"location","line":12,"args":["/sock"],"block":[
              {"directive":"proxy_pass","line":13,"args":["http://unix:/run/a.sock:/u"]}]}]}]}]}]}"#;

    #[test]
    fn upstream_servers_and_bare_addresses_point_at_the_backend() {
        let p = payload(SEED003);
        assert!(is_proxy(&p));
        let r = retarget(&p, "127.0.0.1:8080").unwrap();
        assert_eq!(r.upstreams, ["backend"]);
        assert_eq!(r.proxy_passes, 4);
        assert_eq!(r.path, "/api/");
        let q = &r.payload;
        assert_eq!(stmt(q, &[0, 0, 0]).args, ["127.0.0.1:8080", "weight=3"]);
        assert_eq!(stmt(q, &[0, 0, 1]).args, ["127.0.0.1:8080", "backup"]);
        // Upstream names stay; addresses move, the URI stays.
        assert_eq!(stmt(q, &[0, 1, 0, 0]).args, ["http://backend"]);
        assert_eq!(
            stmt(q, &[0, 1, 2, 0]).args,
            ["http://127.0.0.1:8080/x$request_uri"]
        );
        assert_eq!(stmt(q, &[0, 1, 3, 0]).args, ["http://127.0.0.1:8080/u"]);
    }

    fn one_location(pass: &str) -> Payload {
        payload(&format!(
            r#"{{"config":[{{"file":"n.conf","parsed":[{{"directive":"http","line":1,"args":[],"block":[
              {{"directive":"location","line":2,"args":["/"],"block":[
                {{"directive":"{}","line":3,"args":["{}"]}}]}}]}}]}}]}}"#,
            pass.split_once(' ').unwrap().0,
            pass.split_once(' ').unwrap().1
        ))
    }

    #[test]
    fn what_cannot_be_pointed_at_the_backend_is_an_error_naming_the_statement() {
        for (pass, needle) in [
            ("proxy_pass http://$app_host", "variable"),
            ("proxy_pass https://backend", "only http://"),
            ("fastcgi_pass 127.0.0.1:9000", "non-HTTP"),
        ] {
            let e = retarget(&one_location(pass), "b:1")
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("n.conf:3: "), "{e}");
            assert!(e.contains(needle), "{pass}: {e}");
        }
        let empty = payload(
            r#"{"config":[{"file":"n.conf","parsed":[{"directive":"http","line":1,"args":[],"block":[
              {"directive":"upstream","line":2,"args":["app"],"block":[{"directive":"zone","line":3,"args":["z","64k"]}]},
              {"directive":"location","line":4,"args":["/"],"block":[
                {"directive":"proxy_pass","line":5,"args":["http://app"]}]}]}]}]}"#,
        );
        let e = retarget(&empty, "b:1").unwrap_err();
        assert!(matches!(e, RetargetError::EmptyUpstream { .. }), "{e}");
    }

    #[test]
    fn a_static_server_is_not_a_proxy() {
        let p = payload(
            r#"{"config":[{"file":"s.conf","parsed":[{"directive":"http","line":1,"args":[],"block":[
              {"directive":"server","line":2,"args":[],"block":[{"directive":"root","line":3,"args":["/www"]}]}]}]}]}"#,
        );
        assert!(!is_proxy(&p));
        assert_eq!(
            retarget(&p, "b:1").unwrap_err().to_string(),
            "s.conf: no `proxy_pass` in the http block: this is not a reverse-proxy config"
        );
        let stream = payload(
            r#"{"config":[{"file":"s.conf","parsed":[{"directive":"stream","line":1,"args":[],"block":[
              {"directive":"server","line":2,"args":[],"block":[{"directive":"proxy_pass","line":3,"args":["db:5432"]}]}]}]}]}"#,
        );
        assert!(!is_proxy(&stream));
        assert!(matches!(
            retarget(&stream, "b:1"),
            Err(RetargetError::Stream { .. })
        ));
    }
}
