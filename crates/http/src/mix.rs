//! A request mix (docs/http.md, "Request mixes"): several named requests,
//! one drawn at random by weight for every request sent, from a seeded
//! generator, so a run is reproducible.
//!
//! Two files make one:
//! - a URL file, as http_load takes it (`http_load -p 10 -s 10
//!   urls/raw_nginx.urls`, the IBM study's load, docs/studies.md): one URL
//!   or path a line, every line equally likely ([`parse_urls`]);
//! - a requests file: TOML `[[request]]` tables with a name, method, path,
//!   headers, body and weight ([`parse_requests`]).
//!
//! tare loads one address (the URL given, or the cell's): a URL file's
//! lines all name one server, or are bare paths, and only their paths and
//! queries are sent there ([`UrlFile::check_server`]).

use serde::Deserialize;

use crate::request::{check_method, parse_header};
use crate::target::split_url;

/// The most named requests a mix holds (distinct URL-file paths, or
/// `[[request]]` tables): every one is serialized once and counted by
/// name, with a latency histogram per name and thread (36 KB each, made
/// when the name is first drawn), so a thousand names cost at most 36 MB
/// a thread. A URL file may repeat a path any number of times.
pub const MAX_REQUESTS: usize = 1000;
/// The largest weight of one request.
pub const MAX_WEIGHT: u64 = 1_000_000;
/// The longest request name (it is a column of the reports).
pub const MAX_NAME: usize = 200;

/// One request of a mix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Named {
    pub name: String,
    pub method: String,
    /// Path and query, starting with `/`.
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// How often it is drawn relative to the others (at least 1).
    pub weight: u64,
}

/// The mix a run sends, and the seed its draws start from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mix {
    pub requests: Vec<Named>,
    /// Each worker thread draws from its own generator, seeded from this
    /// and its index (`--seed`; the same seed, the same sequence).
    pub seed: u64,
}

/// The seed when none is given: a run is reproducible by default.
pub const DEFAULT_SEED: u64 = 0x7a7e_3132;

impl Mix {
    pub fn new(requests: Vec<Named>) -> Mix {
        Mix {
            requests,
            seed: DEFAULT_SEED,
        }
    }
}

/// A URL file, read: the one server its URLs name (if any line is a full
/// URL), and its distinct paths in first-seen order, each weighted by the
/// lines that name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UrlFile {
    /// The first full URL, and the `host[:port]` every full URL names.
    pub first_url: Option<String>,
    pub server: Option<String>,
    pub paths: Vec<(String, u64)>,
}

/// Reads a URL file: one `http://HOST[:PORT]/PATH` or `/PATH` a line;
/// blank lines and lines starting with `#` are skipped. Every full URL
/// must name the same server (compared as written, host case aside).
pub fn parse_urls(text: &str) -> Result<UrlFile, String> {
    let mut file = UrlFile {
        first_url: None,
        server: None,
        paths: Vec::new(),
    };
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut server_line = 0;
    for (n, line) in text.lines().enumerate() {
        let n = n + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let path = if line.starts_with('/') {
            check_path(line).map_err(|e| format!("line {n}: {e}"))?;
            line.to_string()
        } else {
            let (authority, _, _, path) = split_url(line).map_err(|e| format!("line {n}: {e}"))?;
            let authority = authority.to_ascii_lowercase();
            match &file.server {
                None => {
                    file.server = Some(authority);
                    file.first_url = Some(line.to_string());
                    server_line = n;
                }
                Some(s) if *s != authority => {
                    return Err(format!(
                        "line {n}: names {authority}, line {server_line} names {s}: a URL file names one server (tare loads one address)"
                    ))
                }
                Some(_) => {}
            }
            path
        };
        match index.get(&path) {
            Some(&i) => file.paths[i].1 += 1,
            None => {
                if file.paths.len() == MAX_REQUESTS {
                    return Err(format!("line {n}: more than {MAX_REQUESTS} distinct URLs"));
                }
                index.insert(path.clone(), file.paths.len());
                file.paths.push((path, 1));
            }
        }
    }
    if file.paths.is_empty() {
        return Err("no URL in it (one URL or /path a line)".into());
    }
    Ok(file)
}

impl UrlFile {
    /// Refuses a file whose URLs name another server than `authority`
    /// (the URL `tare http` was given): tare loads one address, and would
    /// otherwise send the file's paths somewhere its URLs do not say.
    pub fn check_server(&self, authority: &str) -> Result<(), String> {
        match &self.server {
            Some(s) if !s.eq_ignore_ascii_case(authority) => Err(format!(
                "its URLs name {s}, not the target {authority}: tare loads one address (give paths, or the target's URLs)"
            )),
            _ => Ok(()),
        }
    }

    /// The mix: each distinct path a request named by it, with `method`,
    /// `headers` and `body` (what `-m`, `-H` and `--body` give).
    pub fn mix(&self, method: &str, headers: &[(String, String)], body: &[u8]) -> Vec<Named> {
        self.paths
            .iter()
            .map(|(path, weight)| Named {
                name: path.clone(),
                method: method.to_string(),
                path: path.clone(),
                headers: headers.to_vec(),
                body: body.to_vec(),
                weight: *weight,
            })
            .collect()
    }
}

/// A requests file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    request: Vec<RawRequest>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequest {
    name: String,
    method: Option<String>,
    path: String,
    #[serde(default)]
    headers: Vec<String>,
    body: Option<String>,
    weight: Option<i64>,
}

/// Reads a requests file (TOML):
///
/// ```toml
/// [[request]]
/// name = "login"          # unique; the name counts are kept under
/// method = "POST"         # default GET
/// path = "/api/login"     # path and query
/// headers = ["Content-Type: application/json"]
/// body = '{"user":"a"}'
/// weight = 2              # default 1; drawn 2 times in (sum of weights)
/// ```
pub fn parse_requests(text: &str) -> Result<Vec<Named>, String> {
    let raw: RawFile = toml::from_str(text).map_err(|e| one_line(&e))?;
    if raw.request.is_empty() {
        return Err("no [[request]] in it".into());
    }
    if raw.request.len() > MAX_REQUESTS {
        return Err(format!("more than {MAX_REQUESTS} requests"));
    }
    let mut out: Vec<Named> = Vec::with_capacity(raw.request.len());
    for (i, r) in raw.request.into_iter().enumerate() {
        let at = format!("request {} ({:?})", i + 1, r.name);
        check_name(&r.name).map_err(|e| format!("{at}: name {e}"))?;
        if out.iter().any(|o| o.name == r.name) {
            return Err(format!("{at}: a second request with this name"));
        }
        let method = r.method.unwrap_or_else(|| "GET".into());
        check_method(&method).map_err(|e| format!("{at}: {e}"))?;
        check_path(&r.path).map_err(|e| format!("{at}: {e}"))?;
        let headers = r
            .headers
            .iter()
            .map(|h| parse_header(h))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{at}: {e}"))?;
        let body = r.body.unwrap_or_default().into_bytes();
        if body.len() > tare_engine::bounds::MAX_BODY {
            return Err(format!(
                "{at}: body larger than {}",
                tare_engine::bounds::show_bytes(tare_engine::bounds::MAX_BODY as u64)
            ));
        }
        let weight = match r.weight {
            None => 1,
            Some(w) if (1..=MAX_WEIGHT as i64).contains(&w) => w as u64,
            Some(w) => {
                return Err(format!(
                    "{at}: weight {w}: must be 1 to {MAX_WEIGHT} (leave a request out to send it never)"
                ))
            }
        };
        out.push(Named {
            name: r.name,
            method,
            path: r.path,
            headers,
            body,
            weight,
        });
    }
    Ok(out)
}

/// A TOML error on one line: `line 3, column 1: ...`.
fn one_line(e: &toml::de::Error) -> String {
    let msg = e.message().trim().replace('\n', " ");
    match e.span() {
        Some(s) => format!("at byte {}: {msg}", s.start),
        None => msg,
    }
}

/// A path as a request line takes it: `/`, then no spaces or control
/// characters (percent-encode them).
fn check_path(path: &str) -> Result<(), String> {
    if !path.starts_with('/') {
        return Err(format!("path {path:?} must start with /"));
    }
    if path.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "path {path:?} holds spaces or control characters (percent-encode them)"
        ));
    }
    Ok(())
}

fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("is empty".into());
    }
    if name.len() > MAX_NAME {
        return Err(format!("is longer than {MAX_NAME} bytes"));
    }
    if name.chars().any(char::is_control) {
        return Err("holds control characters".into());
    }
    Ok(())
}

/// Reads a mix's file whole, bounded as every file tare reads is
/// ([`tare_engine::bounds::read_file`]); errors name the file.
pub fn read(path: &std::path::Path) -> Result<String, String> {
    tare_engine::bounds::read_file(path).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_files_weigh_lines_and_name_one_server() {
        let f = parse_urls(
            "http://127.0.0.1:8080/a\n\n# comment\nhttp://127.0.0.1:8080/b?x=1\n/a\n  http://127.0.0.1:8080/a  \n",
        )
        .unwrap();
        assert_eq!(f.server.as_deref(), Some("127.0.0.1:8080"));
        assert_eq!(
            f.paths,
            vec![("/a".to_string(), 3), ("/b?x=1".to_string(), 1)]
        );
        assert!(f.check_server("127.0.0.1:8080").is_ok());
        let e = f.check_server("127.0.0.1:9090").unwrap_err();
        assert!(e.contains("not the target"), "{e}");
        let paths = parse_urls("/x\n/y\n").unwrap();
        assert_eq!(paths.server, None);
        assert!(paths.check_server("anything:1").is_ok());
    }

    #[test]
    fn bad_url_files_are_one_line_each() {
        for (text, says) in [
            ("", "no URL"),
            ("\n# only a comment\n", "no URL"),
            ("http://a/x\nhttp://b/y\n", "line 2: names b"),
            ("https://a/x\n", "line 1"),
            ("index.html\n", "line 1"),
            ("/a b\n", "line 1"),
            ("/a\u{7}\n", "line 1"),
        ] {
            let e = parse_urls(text).unwrap_err();
            assert!(e.contains(says) && !e.contains('\n'), "{text:?}: {e}");
        }
    }

    #[test]
    fn a_url_file_holds_at_most_max_requests_paths_repeated_at_will() {
        let many: String = (0..=MAX_REQUESTS).map(|i| format!("/p{i}\n")).collect();
        let e = parse_urls(&many).unwrap_err();
        assert!(e.contains("more than 1000 distinct"), "{e}");
        let repeated = "/same\n".repeat(50_000);
        assert_eq!(
            parse_urls(&repeated).unwrap().paths,
            vec![("/same".into(), 50_000)]
        );
    }

    #[test]
    fn requests_files_are_typed_and_checked() {
        let r = parse_requests(
            "[[request]]\nname = \"home\"\npath = \"/\"\n\n[[request]]\nname = \"post\"\nmethod = \"POST\"\npath = \"/p?q\"\nheaders = [\"X-A: 1\"]\nbody = \"b\"\nweight = 3\n",
        )
        .unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].method.as_str(), r[0].weight), ("GET", 1));
        assert_eq!(r[1].headers, vec![("X-A".to_string(), "1".to_string())]);
        assert_eq!((r[1].body.as_slice(), r[1].weight), (&b"b"[..], 3));
        for (text, says) in [
            ("", "no [[request]]"),
            ("[[request]]\nname = \"a\"\npath = \"/\"\nweight = 0\n", "weight 0"),
            ("[[request]]\nname = \"a\"\npath = \"/\"\nweight = -1\n", "weight -1"),
            ("[[request]]\nname = \"a\"\npath = \"x\"\n", "must start with /"),
            ("[[request]]\nname = \"\"\npath = \"/\"\n", "name is empty"),
            ("[[request]]\nname = \"a\"\npath = \"/\"\nmethod = \"get\"\n", "invalid method"),
            ("[[request]]\nname = \"a\"\npath = \"/\"\nheaders = [\"x\"]\n", "invalid header"),
            ("[[request]]\nname = \"a\"\npath = \"/\"\n[[request]]\nname = \"a\"\npath = \"/b\"\n", "second request"),
            ("[[request]]\nname = \"a\"\npath = \"/\"\ncolour = 1\n", "unknown field"),
            ("[[request]]\nname = \"a\"\n", "missing field"),
            ("[[request]\n", "at byte"),
        ] {
            let e = parse_requests(text).unwrap_err();
            assert!(e.contains(says) && !e.contains('\n'), "{text:?}: {e}");
        }
    }
}
