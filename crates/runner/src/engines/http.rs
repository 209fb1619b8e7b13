//! `engine = "http"` (the default for every HTTP target): `[load.http]`
//! and runs of `tare_http`.
//!
//! ```toml
//! [load.http]
//! path = "/index.html"        # "/" (default): the deployment's own resource
//! method = "GET"              # an uppercase token
//! headers = ["Accept: */*"]   # as `tare http -H` takes them
//! body = "..."
//! keepalive = true            # false: a new connection per request
//! coalesce = "off"            # off, auto or a pause such as 100us (closed loop)
//! urls = "urls/site.urls"     # a URL file (http_load's): its paths, drawn at random
//! requests = "mix.toml"       # or a requests file: named requests drawn by weight
//! seed = 1                    # the draws' seed (default: a fixed one)
//! ```
//!
//! A mix's file is read when the experiment is, copied into the run
//! directory (`inputs/load.http.urls`, `inputs/load.http.requests`) and
//! hashed in the provenance; a resumed run reads the copy. A URL file's
//! host part is replaced by each cell's address: only its paths and
//! queries are sent (docs/http.md, "Request mixes").

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tare_engine::load::{Load, LoadKey};
use tare_engine::Coalesce;
use tare_http::mix::{Mix, Named};
use tare_http::request::{check_method, parse_header};
use tare_http::{Http, HttpConfig, Target};
use tare_record::LoadResult;
use toml::Spanned;

use super::{
    experiment_defaults, measure, no_nul, table_of, ExperimentEngine, Kind, Offer, Spans, Table,
};
use crate::executor::ExecError;
use crate::experiment::error::{ExperimentError, Locator};
use crate::experiment::InputFile;

pub(super) struct HttpEngine;

/// `[load.http]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHttp {
    path: Option<Spanned<String>>,
    method: Option<Spanned<String>>,
    #[serde(default)]
    headers: Vec<Spanned<String>>,
    body: Option<Spanned<String>>,
    keepalive: Option<bool>,
    coalesce: Option<Spanned<String>>,
    urls: Option<Spanned<String>>,
    requests: Option<Spanned<String>>,
    seed: Option<Spanned<i64>>,
}

/// `[load.http]`, checked.
#[derive(Clone, Debug, PartialEq, Serialize)]
struct HttpTable {
    /// Path and query of every request; `/`: the deployment's own resource.
    path: String,
    method: String,
    /// Each checked as `tare http -H` checks it (recorded as `Name: value`).
    #[serde(serialize_with = "as_lines")]
    headers: Vec<(String, String)>,
    body: Option<String>,
    /// `false`: a new connection per request (ab / http_load style).
    keepalive: bool,
    /// A request mix (`urls` or `requests`), in place of `path`, `method`
    /// and `body`.
    #[serde(skip_serializing_if = "Option::is_none")]
    mix: Option<MixTable>,
}

/// `urls` or `requests`, read and checked.
#[derive(Clone, Debug, PartialEq, Serialize)]
struct MixTable {
    /// `urls` or `requests`: the key it was given by.
    from: &'static str,
    /// The file as written, and its copy in the run directory.
    #[serde(skip)]
    input: InputFile,
    file: String,
    seed: u64,
    /// The requests' names and weights (the file holds the rest).
    #[serde(serialize_with = "names_of")]
    requests: Vec<Named>,
}

fn names_of<S: serde::Serializer>(r: &[Named], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(r.iter().map(|n| format!("{} x{}", n.name, n.weight)))
}

impl ExperimentEngine for HttpEngine {
    fn kind(&self) -> Kind {
        Kind::of::<Http>()
    }

    fn defaults(&self) -> Load {
        experiment_defaults()
    }

    fn table(
        &self,
        loc: &Locator<'_>,
        load: &mut Load,
        spans: &mut Spans,
    ) -> Result<Arc<dyn Table>, ExperimentError> {
        let raw: RawHttp = table_of(loc, self.name())?.unwrap_or_default();
        let path = match &raw.path {
            None => "/".to_string(),
            Some(p) => {
                no_nul(loc, p, "load.http.path")?;
                let ok = p.get_ref().starts_with('/')
                    && !p
                        .get_ref()
                        .chars()
                        .any(|c| c.is_whitespace() || c.is_control());
                if !ok {
                    return Err(loc.error(
                        p.span(),
                        "load.http.path",
                        "must start with / and hold no spaces or control characters (percent-encode them)",
                    ));
                }
                p.get_ref().clone()
            }
        };
        let method = match &raw.method {
            None => "GET".to_string(),
            Some(m) => {
                check_method(m.get_ref())
                    .map_err(|e| loc.error(m.span(), "load.http.method", e))?;
                m.get_ref().clone()
            }
        };
        let mut headers = Vec::with_capacity(raw.headers.len());
        for h in &raw.headers {
            // tare http's own parser: the CLI and the file accept the same.
            let (k, v) = parse_header(h.get_ref())
                .map_err(|e| loc.error(h.span(), "load.http.headers", e))?;
            headers.push((k, v));
        }
        if let Some(b) = &raw.body {
            no_nul(loc, b, "load.http.body")?;
            // The bound `tare http --body` has too.
            let max = tare_engine::bounds::MAX_BODY;
            if b.get_ref().len() > max {
                return Err(loc.error(
                    b.span(),
                    "load.http.body",
                    format!("must be at most {max} bytes"),
                ));
            }
        }
        if let Some(c) = &raw.coalesce {
            load.coalesce = c
                .get_ref()
                .parse::<Coalesce>()
                .map_err(|e| loc.error(c.span(), "load.http.coalesce", e))?;
            spans.set(LoadKey::Coalesce, c.span(), "load.http.coalesce");
        }
        let mix = mix_of(loc, &raw, &method, &headers)?;
        Ok(Arc::new(HttpTable {
            path,
            method,
            headers,
            body: raw.body.map(Spanned::into_inner),
            keepalive: raw.keepalive.unwrap_or(true),
            mix,
        }))
    }
}

/// `urls` or `requests`: the file read (beside the experiment, or its
/// run-directory copy when resuming) and parsed by `tare http`'s own
/// parsers, so the command line and the file accept the same; each
/// mistake an error at the key's line.
fn mix_of(
    loc: &Locator<'_>,
    raw: &RawHttp,
    method: &str,
    headers: &[(String, String)],
) -> Result<Option<MixTable>, ExperimentError> {
    let (from, written) = match (&raw.urls, &raw.requests) {
        (None, None) => {
            if let Some(s) = &raw.seed {
                return Err(loc.error(
                    s.span(),
                    "load.http.seed",
                    "seeds a request mix: give `urls` or `requests` too",
                ));
            }
            return Ok(None);
        }
        (Some(_), Some(r)) => {
            return Err(loc.error(
                r.span(),
                "load.http.requests",
                "give `urls` or `requests`, not both",
            ))
        }
        (Some(u), None) => ("urls", u),
        (None, Some(r)) => ("requests", r),
    };
    let key = format!("load.http.{from}");
    let refuse = |span: Option<std::ops::Range<usize>>, what: &str| match span {
        Some(span) => Err(loc.error(
            span,
            &key,
            format!("a requests file names each request's {what}: leave `{what}` out"),
        )),
        None => Ok(()),
    };
    if from == "requests" {
        refuse(raw.method.as_ref().map(|m| m.span()), "method")?;
        refuse(raw.body.as_ref().map(|b| b.span()), "body")?;
    }
    if let Some(p) = &raw.path {
        return Err(loc.error(
            p.span(),
            "load.http.path",
            format!("`{from}` gives the paths: leave `path` out"),
        ));
    }
    no_nul(loc, written, &key)?;
    let copy = format!("inputs/{key}");
    let path = loc.input_path(written.get_ref(), &copy);
    let at = |e: String| loc.error(written.span(), &key, e);
    let text = tare_http::mix::read(&path).map_err(at)?;
    let body = raw
        .body
        .as_ref()
        .map(|b| b.get_ref().as_bytes())
        .unwrap_or(b"");
    let requests = if from == "urls" {
        // The cell's address replaces the file's host: its paths are sent.
        let file = tare_http::mix::parse_urls(&text)
            .map_err(|e| at(format!("{}: {e}", path.display())))?;
        file.mix(method, headers, body)
    } else {
        let mut r = tare_http::mix::parse_requests(&text)
            .map_err(|e| at(format!("{}: {e}", path.display())))?;
        for n in &mut r {
            for (k, v) in headers {
                if !n.headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(k)) {
                    n.headers.push((k.clone(), v.clone()));
                }
            }
        }
        r
    };
    let seed = match &raw.seed {
        None => tare_http::mix::DEFAULT_SEED,
        Some(s) if *s.get_ref() >= 0 => *s.get_ref() as u64,
        Some(s) => return Err(loc.error(s.span(), "load.http.seed", "must be 0 or more")),
    };
    Ok(Some(MixTable {
        from,
        input: InputFile {
            name: copy,
            written: written.get_ref().clone(),
            text,
        },
        file: written.get_ref().clone(),
        seed,
        requests,
    }))
}

fn as_lines<S: serde::Serializer>(headers: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(headers.iter().map(|(k, v)| format!("{k}: {v}")))
}

impl Table for HttpTable {
    fn inputs(&self) -> Vec<InputFile> {
        self.mix.iter().map(|m| m.input.clone()).collect()
    }

    fn run(
        &self,
        load: &Load,
        offer: &Offer<'_>,
        stop: &Arc<AtomicBool>,
    ) -> Result<LoadResult, ExecError> {
        let (authority, _, _, deploy_path) =
            tare_http::target::split_url(&offer.url).map_err(ExecError::new)?;
        // The experiment's path wins; the deployment's is the target's natural resource.
        let path = if self.path == "/" {
            deploy_path
        } else {
            self.path.clone()
        };
        let target = Target {
            url: offer.url.clone(),
            authority,
            path,
            endpoint: offer.endpoint.clone(),
        };
        let mut cfg = HttpConfig::new(target);
        cfg.load = load.clone();
        cfg.method = self.method.clone();
        cfg.headers = self.headers.clone();
        cfg.body = self.body.clone().unwrap_or_default().into_bytes();
        cfg.keepalive = self.keepalive;
        cfg.mix = self.mix.as_ref().map(|m| Mix {
            requests: m.requests.clone(),
            seed: m.seed,
        });
        cfg.progress = false;
        measure::<Http>(&cfg, stop)
    }
}

#[cfg(test)]
mod tests {
    use crate::experiment::Experiment;

    fn parse(table: &str) -> Result<Experiment, String> {
        super::super::parse_with_table("nginx", "http", table)
    }

    /// Regression: the experiment path silently dropped a malformed
    /// header. Each mistake is now an error with file, line and key, found
    /// by tare http's own parser.
    #[test]
    fn malformed_headers_methods_and_nul_bytes_are_errors_with_line_and_key() {
        super::super::assert_refused_at_line_6(
            parse,
            &[
                (
                    "headers = [\"Accept: */*\", \"no colon\"]\n",
                    "load.http.headers",
                ),
                ("headers = [\"Bad Name: x\"]\n", "load.http.headers"),
                ("headers = [\"X: a\\r\\nY: b\"]\n", "load.http.headers"),
                ("headers = [\"X: a\\u0000\"]\n", "load.http.headers"),
                ("method = \"get\"\n", "load.http.method"),
                ("method = \"GET\\u0000\"\n", "load.http.method"),
                ("path = \"/a\\u0000\"\n", "load.http.path"),
                ("path = \"/a b\"\n", "load.http.path"),
                ("path = \"index.html\"\n", "load.http.path"),
                ("body = \"x\\u0000\"\n", "load.http.body"),
                ("keepalive = \"yes\"\n", "keepalive"),
                ("keep_alive = true\n", "keep_alive"),
            ],
        );
    }

    #[test]
    fn headers_are_kept_as_the_cli_would_send_them() {
        let e = parse("headers = [\"  X-A :  1 \"]\nmethod = \"POST\"\nbody = \"b\"\n").unwrap();
        let snap = e.load.snapshot();
        assert_eq!(snap["http"]["headers"][0], "X-A: 1");
        assert_eq!(snap["http"]["method"], "POST");
    }

    /// An experiment in `dir` whose `[load.http]` is `table`.
    fn parse_in(dir: &std::path::Path, table: &str) -> Result<Experiment, String> {
        let text =
            format!("[target]\nkind = \"nginx\"\n[load]\nduration = \"2s\"\n[load.http]\n{table}");
        Experiment::parse(
            &text,
            &dir.join("exp.toml"),
            &crate::experiment::ConfigSource::RelativeTo(dir.to_path_buf()),
        )
        .map_err(|e| e.to_string())
    }

    #[test]
    fn a_mix_file_is_read_beside_the_experiment_and_kept_as_an_input() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("site.urls"), "http://x:1/a\n/b\n/a\n").unwrap();
        let e = parse_in(dir.path(), "urls = \"site.urls\"\nseed = 3\n").unwrap();
        let snap = e.load.snapshot();
        assert_eq!(snap["http"]["mix"]["requests"][0], "/a x2");
        assert_eq!(snap["http"]["mix"]["seed"], 3);
        let inputs = e.load.table.inputs();
        assert_eq!(inputs.len(), 1);
        assert_eq!(inputs[0].name, "inputs/load.http.urls");
        assert_eq!(inputs[0].text, "http://x:1/a\n/b\n/a\n");
        // A resumed run reads the run directory's copy, not the original.
        let run = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(run.path().join("inputs")).unwrap();
        std::fs::write(run.path().join("inputs/load.http.urls"), "/c\n").unwrap();
        let resumed = Experiment::parse(
            &e.text,
            &run.path().join("experiment.toml"),
            &crate::experiment::ConfigSource::RunDir(run.path().to_path_buf()),
        )
        .unwrap();
        assert_eq!(
            resumed.load.snapshot()["http"]["mix"]["requests"][0],
            "/c x1"
        );
    }

    #[test]
    fn mix_mistakes_are_errors_at_their_key() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("two.urls"), "http://a/x\nhttp://b/y\n").unwrap();
        std::fs::write(d.join("empty.urls"), "").unwrap();
        std::fs::write(
            d.join("zero.toml"),
            "[[request]]\nname = \"a\"\npath = \"/\"\nweight = 0\n",
        )
        .unwrap();
        std::fs::write(
            d.join("ok.toml"),
            "[[request]]\nname = \"a\"\npath = \"/\"\n",
        )
        .unwrap();
        for (table, key, says) in [
            (
                "urls = \"missing.urls\"\n",
                "load.http.urls",
                "No such file",
            ),
            ("urls = \"empty.urls\"\n", "load.http.urls", "no URL"),
            ("urls = \"two.urls\"\n", "load.http.urls", "line 2: names b"),
            (
                "requests = \"zero.toml\"\n",
                "load.http.requests",
                "weight 0",
            ),
            (
                "requests = \"ok.toml\"\nmethod = \"POST\"\n",
                "load.http.requests",
                "leave `method` out",
            ),
            (
                "requests = \"ok.toml\"\nurls = \"two.urls\"\n",
                "load.http.requests",
                "not both",
            ),
            (
                "urls = \"empty.urls\"\npath = \"/x\"\n",
                "load.http.path",
                "leave `path` out",
            ),
            ("seed = 1\n", "load.http.seed", "give `urls` or `requests`"),
            (
                "requests = \"ok.toml\"\nseed = -1\n",
                "load.http.seed",
                "0 or more",
            ),
        ] {
            let e = parse_in(d, table).unwrap_err();
            assert!(
                e.contains(&format!("`{key}`")) && e.contains(says) && !e.contains('\n'),
                "{table}: {e}"
            );
        }
    }
}
