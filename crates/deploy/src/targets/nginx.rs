//! nginx: the built-in config variants and the user-config rewrite.
//!
//! `default` is nginx.org's stock nginx.conf (`worker_processes 1`,
//! worker_connections 1024, no epoll/multi_accept, tcp_nopush commented out,
//! no tcp_nodelay, access_log on): in every setting seed 000's "unfair
//! comparison" table lists, the value it gives for Docker's default
//! (docs/studies.md, seed 000, "Test 1"). Seed 000 does not state the image's
//! worker_processes (the official image's own config says `auto`:
//! crates/nginx/tests/corpus/seed000-default). `tuned` is seed 000's
//! optimised config (docs/studies.md, seed 000, "The tuned configuration");
//! seed 003's tuned proxy config sets many of the same directives with other
//! values (worker_connections 50000, keepalive_timeout 15, ...). Paths are
//! placeholders so the config hash compares the configuration, not where a
//! deployment lives.

use std::path::{Path, PathBuf};

use super::{Prepare, Protocol, Ready, Recipe, Server, Target, TargetKind};
use crate::error::DeployError;
use crate::options::AccessLog;

/// nginx serving one static file.
pub(crate) struct Nginx;

impl Recipe for Nginx {
    fn name(&self) -> &'static str {
        "nginx"
    }

    fn about(&self) -> &'static str {
        "nginx serving one static file (docs/studies.md, seed 000)"
    }

    fn target(&self) -> Target {
        Target {
            ready: Ready::Protocol,
            variants: vec!["default".into(), "tuned".into()],
            config_files: true,
            access_log: true,
            ..Target::of(TargetKind(&Nginx), Protocol::Http, 80)
        }
    }

    fn default_binary(&self, _target: &Target) -> Result<PathBuf, DeployError> {
        default_binary()
    }

    fn version(&self, binary: &Path) -> Option<String> {
        version(binary)
    }

    fn image_files(&self, _target: &Target, _binary: &Path) -> Result<Vec<PathBuf>, String> {
        Ok(image_files())
    }

    fn prepare(&self, cx: &Prepare<'_>) -> Result<Server, DeployError> {
        let spec = cx.spec;
        let (template, log) = template(&spec.variant.to_string(), spec.access_log)?;
        make_dirs(cx.dir).map_err(|e| DeployError::io("creating nginx directories", e))?;
        std::fs::write(
            cx.dir.join("www/index.html"),
            index_html(spec.target.body_size),
        )
        .map_err(|e| DeployError::io("writing index.html", e))?;
        let config = Config {
            text: &template,
            extra: &[],
            log,
            resource: "/index.html",
            cpus: spec.cpus,
        };
        server(cx, &config)
    }
}

/// nginx on PATH (nginx-proxy runs the same binary).
pub(super) fn default_binary() -> Result<PathBuf, DeployError> {
    crate::host::which("nginx").ok_or_else(|| DeployError::MissingBinary {
        binary: "nginx".into(),
        hint: "not on PATH; install nginx-light (scripts/setup.sh)".into(),
    })
}

/// `nginx -v` without its prefix (nginx-proxy runs the same binary).
pub(super) fn version(binary: &Path) -> Option<String> {
    let line = crate::host::version_line(binary, "-v")?;
    Some(line.trim_start_matches("nginx version: ").to_string())
}

/// What every nginx image holds beside the binary.
pub(super) fn image_files() -> Vec<PathBuf> {
    let mime = Path::new("/etc/nginx/mime.types");
    if mime.exists() {
        vec![mime.to_path_buf()]
    } else {
        Vec::new()
    }
}

/// An nginx config template for one deployment: placeholders `{{dir}}`,
/// `{{listen}}` and any `extra` ones (nginx-proxy's backend address).
pub(super) struct Config<'a> {
    pub text: &'a str,
    pub extra: &'a [(&'a str, String)],
    /// The access_log setting the text has.
    pub log: AccessLog,
    /// The path the probe and the load ask for.
    pub resource: &'a str,
    /// The CPUs the server is pinned to, when it would count more
    /// ([`TargetSpec::cpus`]): `worker_processes auto` becomes that many.
    pub cpus: Option<usize>,
}

/// nginx with `config` filled in for this deployment. The config hash is
/// the template's: paths, listen address and backend port are the
/// placement's, not the config's.
pub(super) fn server(cx: &Prepare<'_>, config: &Config<'_>) -> Result<Server, DeployError> {
    let Config {
        text: template,
        extra,
        log,
        resource,
        cpus,
    } = *config;
    let dir = cx.dir;
    let d = dir.display().to_string();
    let mut text = template
        .replace("{{dir}}", &d)
        .replace("{{listen}}", &cx.listen.nginx_text());
    for (placeholder, value) in extra.iter() {
        text = text.replace(placeholder, value);
    }
    if let Some(n) = cpus {
        text = auto_workers(&text, n);
    }
    let conf = dir.join("nginx.conf");
    std::fs::write(&conf, text).map_err(|e| DeployError::io("writing nginx.conf", e))?;
    let args = vec![
        "-p".into(),
        d.clone(),
        "-c".into(),
        conf.display().to_string(),
        "-e".into(),
        dir.join("log/error.log").display().to_string(),
    ];
    Ok(Server {
        resource: resource.into(),
        access_log: log.to_string(),
        log_path: dir.join("log"),
        content_path: dir.join("www"),
        ..Server::new(cx, args, template.as_bytes())
    })
}

/// `worker_processes auto` as the number of CPUs the server is pinned to.
/// nginx 1.22 sizes `auto` by the machine's online CPUs, so a server pinned
/// to one of two CPUs ran two workers time-sharing it: the native tuned
/// cells of examples/nginx-docker.toml spread ±6-10% per trial that way
/// (docs/studies.md, seed 000 redone). The config hash stays the
/// template's: what `auto` means is the same in every cell of a run.
fn auto_workers(text: &str, cpus: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let words: Vec<&str> = line
            .trim()
            .strip_suffix(';')
            .map(|w| w.split_whitespace().collect())
            .unwrap_or_default();
        if words == ["worker_processes", "auto"] {
            let indent = &line[..line.len() - line.trim_start().len()];
            out.push_str(&format!("{indent}worker_processes {cpus};\n"));
        } else {
            out.push_str(line);
        }
    }
    out
}

/// nginx.org's stock nginx.conf, minus what does not apply to a benchmark
/// (no mime.types include: one HTML file is served).
const DEFAULT: &str = "\
worker_processes 1;

events {
    worker_connections 1024;
}

http {
    default_type application/octet-stream;
    types { text/html html; }
    sendfile on;
    #tcp_nopush on;
    keepalive_timeout 65;
    {{access_log}}
    server {
        listen {{listen}};
        server_name _;
        root {{dir}}/www;
        index index.html;
    }
}
";

/// Seed 000's optimised configuration (docs/studies.md, seed 000, "The tuned
/// configuration"; its comments are its reasons).
const TUNED: &str = "\
worker_processes auto;
worker_rlimit_nofile 65535;

events {
    worker_connections 4096;
    use epoll;
    multi_accept on;
}

http {
    default_type application/octet-stream;
    types { text/html html; }
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 65;
    keepalive_requests 1000;
    client_body_buffer_size 16k;
    client_header_buffer_size 1k;
    gzip on;
    gzip_comp_level 2;
    gzip_types text/plain text/css application/json application/javascript;
    {{access_log}}
    server {
        listen {{listen}};
        server_name _;
        root {{dir}}/www;
        index index.html;
    }
}
";

/// Lines every variant gets: the deployment's own paths, foreground, root.
/// nginx runs as root here, so `user root` keeps workers able to read the
/// deployment directory in every placement alike.
const PREAMBLE: &str = "\
user root;
daemon off;
pid {{dir}}/nginx.pid;
error_log {{dir}}/log/error.log;
";

const TEMP_PATHS: &str = "\
    client_body_temp_path {{dir}}/tmp/body;
    proxy_temp_path {{dir}}/tmp/proxy;
    fastcgi_temp_path {{dir}}/tmp/fastcgi;
    uwsgi_temp_path {{dir}}/tmp/uwsgi;
    scgi_temp_path {{dir}}/tmp/scgi;
";

/// The config template (placeholders `{{dir}}`, `{{listen}}`) and the
/// access_log setting in force.
pub(crate) fn template(
    variant: &str,
    access_log: Option<AccessLog>,
) -> Result<(String, AccessLog), DeployError> {
    let body = match variant {
        "default" => DEFAULT,
        "tuned" => TUNED,
        path => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                DeployError::io(
                    format!("nginx config {path:?} (variants: default, tuned, or a file)"),
                    e,
                )
            })?;
            return Ok(user_template(&text, access_log));
        }
    };
    let variant_log = if variant == "default" {
        AccessLog::On
    } else {
        AccessLog::Off
    };
    Ok(builtin_template(body, variant_log, access_log))
}

/// A built-in body (with `{{access_log}}` where the log line goes) finished
/// with the access_log the variant has, or the override.
pub(crate) fn builtin_template(
    body: &str,
    variant_log: AccessLog,
    access_log: Option<AccessLog>,
) -> (String, AccessLog) {
    let log = access_log.unwrap_or(variant_log);
    (finish(body, log_line(log)), log)
}

/// A user's config made into a template: its own logging stands unless
/// `access_log` overrides it.
pub(crate) fn user_template(text: &str, access_log: Option<AccessLog>) -> (String, AccessLog) {
    match access_log {
        // No access_log factor: the user's own logging stands (it is what
        // `tare tune` measures), only moved into our directory.
        None => {
            let (body, own) = rewrite_user_config_keeping_log(text);
            (finish(&body, ""), own)
        }
        Some(log) => (finish(&rewrite_user_config(text), log_line(log)), log),
    }
}

fn log_line(log: AccessLog) -> &'static str {
    match log {
        AccessLog::On => "access_log {{dir}}/log/access.log;",
        AccessLog::Off => "access_log off;",
        // seed 000's tuned config: "access_log ... buffer=32k flush=5s"
        AccessLog::Buffered => "access_log {{dir}}/log/access.log combined buffer=32k flush=5s;",
    }
}

/// The preamble, the access_log line and the temp paths around a config body.
fn finish(body: &str, log_line: &str) -> String {
    let mut text = String::from(PREAMBLE);
    text.push_str(&body.replace("{{access_log}}", log_line));
    // The temp paths go inside `http {`, right after its opening line.
    if let Some(at) = text
        .find("http {")
        .and_then(|i| text[i..].find('\n').map(|j| i + j + 1))
    {
        text.insert_str(at, TEMP_PATHS);
    }
    text
}

/// As [`rewrite_user_config`], but the user's `access_log` lines stay, their
/// file moved to the deployment's log directory (so native and container
/// runs log to the same kind of place), and says which kind of logging that
/// is: `off`, buffered (`buffer=`), or on. A config with no `access_log` at
/// all logs (nginx's default), under the deployment's prefix.
fn rewrite_user_config_keeping_log(text: &str) -> (String, AccessLog) {
    let mut kept = String::new();
    let mut kinds = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        let mut words = t.split_whitespace();
        if words.next() != Some("access_log") {
            continue;
        }
        let rest: Vec<&str> = words.collect();
        match rest.first().map(|w| w.trim_end_matches(';')) {
            Some("off") => {
                kinds.push(AccessLog::Off);
                kept.push_str("    access_log off;\n");
            }
            Some(_) => {
                let params = rest[1..].join(" ");
                kinds.push(if params.contains("buffer=") {
                    AccessLog::Buffered
                } else {
                    AccessLog::On
                });
                let params = params.trim_end_matches(';').trim();
                let sep = if params.is_empty() { "" } else { " " };
                kept.push_str(&format!(
                    "    access_log {{{{dir}}}}/log/access.log{sep}{params};\n"
                ));
            }
            None => {}
        }
    }
    let kind = if kinds.is_empty() || kinds.contains(&AccessLog::On) {
        AccessLog::On
    } else if kinds.contains(&AccessLog::Buffered) {
        AccessLog::Buffered
    } else {
        AccessLog::Off
    };
    let body = rewrite_user_config(text).replace("    {{access_log}}\n", &kept);
    (body, kind)
}

/// Socket options of `listen` that a config's tuning may set and that mean
/// the same on tare's address (the `listen-backlog` advice is one), kept on
/// the first `listen`: nginx allows them once per address, and every
/// `listen` points at the same one here. TLS, HTTP/2, QUIC and PROXY
/// protocol would change what the load speaks, so they go.
const LISTEN_OPTIONS: &[&str] = &[
    "backlog=",
    "rcvbuf=",
    "sndbuf=",
    "deferred",
    "fastopen=",
    "so_keepalive=",
    "reuseport",
];

/// `listen {{listen}} <options>;` for the first `listen`, plain after it.
fn listen_line(t: &str, first: bool) -> String {
    let kept: Vec<&str> = t
        .trim_end_matches(';')
        .split_whitespace()
        .skip(2) // `listen ADDR`
        .filter(|w| first && LISTEN_OPTIONS.iter().any(|o| w.starts_with(o)))
        .collect();
    let sep = if kept.is_empty() { "" } else { " " };
    format!("        listen {{{{listen}}}}{sep}{};\n", kept.join(" "))
}

/// A user's nginx.conf: its `listen` directives point at our address (the
/// first keeping its socket options; one per server, as `listen 80; listen
/// [::]:80;` would become a duplicate), and the directives the preamble owns
/// (user, daemon, pid, error_log at top level, access_log) are dropped so
/// they are not duplicated. `{{access_log}}` is put where the first `http {`
/// opens.
fn rewrite_user_config(text: &str) -> String {
    let mut out = String::new();
    let mut http_seen = false;
    let mut listen_seen = false;
    let mut listens_in_server = 0;
    for line in text.lines() {
        let t = line.trim_start();
        let first = t.split_whitespace().next().unwrap_or("");
        match first {
            "user" | "daemon" | "pid" | "error_log" | "access_log" => continue,
            "listen" if listens_in_server > 0 => {}
            "listen" => {
                out.push_str(&listen_line(t, !listen_seen));
                listen_seen = true;
                listens_in_server += 1;
            }
            _ => {
                if first == "server" && t.contains('{') {
                    listens_in_server = 0;
                }
                out.push_str(line);
                out.push('\n');
                if !http_seen && first == "http" && t.contains('{') {
                    http_seen = true;
                    out.push_str("    {{access_log}}\n");
                }
            }
        }
    }
    out
}

/// The served file: `body_size` bytes of HTML.
pub(crate) fn index_html(body_size: usize) -> Vec<u8> {
    let head = b"<!DOCTYPE html><html><body>tare";
    let tail = b"</body></html>\n";
    let mut v = Vec::with_capacity(body_size);
    if body_size >= head.len() + tail.len() {
        v.extend_from_slice(head);
        v.resize(body_size - tail.len(), b'.');
        v.extend_from_slice(tail);
    } else {
        v.resize(body_size, b'.');
    }
    v
}

/// Directories nginx needs before it starts.
pub(crate) fn make_dirs(dir: &Path) -> std::io::Result<()> {
    for sub in ["www", "log", "tmp"] {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_differ_in_the_seed_000_settings() {
        let (d, dl) = template("default", None).unwrap();
        let (t, tl) = template("tuned", None).unwrap();
        assert_eq!(dl, AccessLog::On);
        assert_eq!(tl, AccessLog::Off);
        assert!(d.contains("worker_connections 1024;") && !d.contains("use epoll"));
        for s in [
            "worker_connections 4096;",
            "use epoll;",
            "multi_accept on;",
            "tcp_nodelay on;",
        ] {
            assert!(t.contains(s), "{s}");
        }
        assert!(d.contains("client_body_temp_path {{dir}}/tmp/body;"));
    }

    #[test]
    fn access_log_switch_overrides_the_variant() {
        let (t, l) = template("tuned", Some(AccessLog::Buffered)).unwrap();
        assert_eq!(l, AccessLog::Buffered);
        assert!(t.contains("buffer=32k flush=5s"));
        let (d, _) = template("default", Some(AccessLog::Off)).unwrap();
        assert!(d.contains("access_log off;"));
    }

    #[test]
    fn user_config_listen_is_rewritten() {
        let user = "user nginx;\nevents {}\nhttp {\n access_log /var/log/x;\n server {\n  listen 80 default_server;\n }\n}\n";
        let r = rewrite_user_config(user);
        assert!(r.contains("listen {{listen}};"));
        assert!(!r.contains("user nginx"));
        assert!(r.contains("{{access_log}}"));
        assert!(!r.contains("/var/log/x"));
    }

    #[test]
    fn the_first_listen_keeps_its_socket_options() {
        let user = "http {\n server {\n  listen 80 default_server backlog=4096 reuseport ssl;\n  listen [::]:80 backlog=4096;\n }\n server {\n  listen 81 backlog=4096;\n }\n}\n";
        let r = rewrite_user_config(user);
        assert!(
            r.contains("listen {{listen}} backlog=4096 reuseport;\n"),
            "{r}"
        );
        // One listen per server; socket options once in the file.
        assert_eq!(r.matches("listen {{listen}}").count(), 2, "{r}");
        assert!(r.contains("listen {{listen}};\n"), "{r}");
        assert!(!r.contains("ssl") && !r.contains("default_server"), "{r}");
    }

    #[test]
    fn user_access_log_stands_without_an_override() {
        let user = "events {}\nhttp {\n    access_log /var/log/x combined buffer=32k flush=5s;\n    server {\n        listen 80;\n    }\n}\n";
        let (t, log) = template_of(user, None);
        assert_eq!(log, AccessLog::Buffered);
        assert!(
            t.contains("access_log {{dir}}/log/access.log combined buffer=32k flush=5s;"),
            "{t}"
        );
        assert!(!t.contains("/var/log/x"));
        let (t, log) = template_of(
            "events {}\nhttp {\n access_log off;\n server { listen 80; }\n}\n",
            None,
        );
        assert_eq!(log, AccessLog::Off);
        assert_eq!(t.matches("access_log").count(), 1, "{t}");
        // An override still replaces whatever the user wrote.
        let (t, log) = template_of(user, Some(AccessLog::Off));
        assert_eq!(log, AccessLog::Off);
        assert!(
            t.contains("access_log off;") && !t.contains("buffer=32k"),
            "{t}"
        );
    }

    fn template_of(conf: &str, log: Option<AccessLog>) -> (String, AccessLog) {
        let dir = std::env::temp_dir().join(format!(
            "tare-nginx-tpl-{}-{}",
            std::process::id(),
            conf.len()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("user.conf");
        std::fs::write(&path, conf).unwrap();
        let r = template(path.to_str().unwrap(), log).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        r
    }

    #[test]
    fn auto_workers_count_the_pinned_cpus() {
        let text = "user root;\nworker_processes auto;\n  worker_processes   auto ;\nworker_processes 4;\nevents {}\n";
        assert_eq!(
            auto_workers(text, 1),
            "user root;\nworker_processes 1;\n  worker_processes 1;\nworker_processes 4;\nevents {}\n"
        );
        // A config without `auto` is left as written.
        assert_eq!(auto_workers(DEFAULT, 3), DEFAULT);
        assert!(auto_workers(TUNED, 3).starts_with("worker_processes 3;\n"));
    }

    #[test]
    fn index_has_the_asked_size() {
        for n in [0, 10, 612, 4096] {
            assert_eq!(index_html(n).len(), n);
        }
    }

    #[test]
    fn missing_user_config_is_a_clear_error() {
        let e = template("/nonexistent/nginx.conf", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("variants: default, tuned"), "{e}");
    }
}
