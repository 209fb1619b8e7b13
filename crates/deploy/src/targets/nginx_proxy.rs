//! nginx-proxy: nginx as a reverse proxy in front of a `tare serve` backend
//! (seed 003's set-up: docs/studies.md, seed 003), with seed 003's two
//! configs built in and a user's proxy config pointed at the backend tare
//! started.
//!
//! A user's config is parsed (includes followed), its upstream servers and
//! bare `proxy_pass` addresses become `{{backend}}` (tare-nginx's
//! [`retarget`](tare_nginx::retarget)), and it is rebuilt as one file; the
//! rest is as for a static nginx config (`listen`, logs and paths moved into
//! the deployment). The backend's address is a placeholder so the config
//! hash compares configs, not the port a placement gave the backend.

use std::path::{Path, PathBuf};

use tare_nginx::{BuildOptions, ParseOptions, Status};

use super::nginx::{self, builtin_template, user_template};
use super::tare_serve::TareServe;
use super::{Prepare, Recipe, Server, Target, TargetKind};
use crate::error::DeployError;
use crate::options::AccessLog;

/// nginx as a reverse proxy in front of a `tare serve` backend that tare
/// starts beside it, on nginx's own loopback, in every placement: the
/// placement under test changes only how load reaches nginx, never the
/// nginx-to-backend hop. The backend runs from the same tare binary
/// everywhere, answers every path with 200 and `body_size` bytes, and is
/// described by the same /proc facts as the server.
pub(crate) struct NginxProxy;

impl Recipe for NginxProxy {
    fn name(&self) -> &'static str {
        "nginx-proxy"
    }

    fn about(&self) -> &'static str {
        "nginx as a reverse proxy in front of a tare serve backend (docs/studies.md, seed 003)"
    }

    /// nginx's settings and image, with the backend: `tare serve` with the
    /// proxy's body size, from the running tare unless a binary is named.
    fn target(&self) -> Target {
        let nginx = nginx::Nginx.target();
        Target {
            kind: TargetKind(&NginxProxy),
            companion: Some(Box::new(TargetKind(&TareServe).target())),
            ..nginx
        }
    }

    fn default_binary(&self, _target: &Target) -> Result<PathBuf, DeployError> {
        nginx::default_binary()
    }

    fn version(&self, binary: &Path) -> Option<String> {
        nginx::version(binary)
    }

    fn image_files(&self, _target: &Target, _binary: &Path) -> Result<Vec<PathBuf>, String> {
        Ok(nginx::image_files())
    }

    fn prepare(&self, cx: &Prepare<'_>) -> Result<Server, DeployError> {
        let spec = cx.spec;
        let t = template(&spec.variant.to_string(), spec.access_log)?;
        let backend = cx.companion.ok_or_else(|| {
            DeployError::Invalid("nginx-proxy needs its backend's address".into())
        })?;
        nginx::make_dirs(cx.dir).map_err(|e| DeployError::io("creating nginx directories", e))?;
        let extra = [(BACKEND, backend.to_string())];
        let config = nginx::Config {
            text: &t.text,
            extra: &extra,
            log: t.access_log,
            resource: &t.path,
            cpus: spec.cpus,
        };
        nginx::server(cx, &config)
    }
}

/// Where the backend's address goes in a template.
pub(crate) const BACKEND: &str = "{{backend}}";

/// Seed 003's baseline ("步骤1: 定义基准配置"; docs/studies.md, seed 003,
/// "Baseline and tuned configurations"): the stock proxy, one upstream
/// without a connection pool. The article sets neither `proxy_http_version`
/// nor `access_log`; nginx's defaults then mean HTTP/1.0 to the backend (a
/// new connection per request) and the access log on (written out here by
/// the `{{access_log}}` line).
const DEFAULT: &str = "\
worker_processes auto;

events {
    worker_connections 1024;
}

http {
    default_type application/octet-stream;
    sendfile on;
    keepalive_timeout 65;
    keepalive_requests 100;
    {{access_log}}
    upstream backend {
        server {{backend}};
    }
    server {
        listen {{listen}};
        server_name _;
        location / {
            proxy_pass http://backend;
        }
    }
}
";

/// Seed 003's optimised config ("步骤3"), its comments its reasons, except
/// worker_rlimit_nofile: 65535 as the static `tuned` (a container without
/// CAP_SYS_RESOURCE cannot raise its limit to seed 003's 200000), and
/// `error_log ... warn`: the error log line is the one every variant gets
/// (nginx.rs, `PREAMBLE`).
const TUNED: &str = "\
worker_processes auto;
worker_rlimit_nofile 65535;

events {
    worker_connections 50000;
    use epoll;
    multi_accept on;
}

http {
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 15;
    keepalive_requests 10000;
    proxy_buffering on;
    proxy_buffer_size 16k;
    proxy_buffers 1024 16k;
    {{access_log}}
    upstream backend {
        server {{backend}};
        keepalive 100;
    }
    server {
        listen {{listen}} backlog=65535;
        server_name _;
        location / {
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
        }
    }
}
";

/// A proxy config ready to fill in.
#[derive(Debug)]
pub(crate) struct ProxyTemplate {
    /// Placeholders `{{dir}}`, `{{listen}}`, `{{backend}}`.
    pub text: String,
    pub access_log: AccessLog,
    /// A path the config proxies to the backend (the probe and the load use it).
    pub path: String,
}

pub(crate) fn template(
    variant: &str,
    access_log: Option<AccessLog>,
) -> Result<ProxyTemplate, DeployError> {
    let (body, variant_log) = match variant {
        "default" => (DEFAULT, AccessLog::On),
        "tuned" => (TUNED, AccessLog::Off),
        path => return user(path, access_log),
    };
    let (text, access_log) = builtin_template(body, variant_log, access_log);
    Ok(ProxyTemplate {
        text,
        access_log,
        path: "/".into(),
    })
}

/// A user's proxy config, parsed, pointed at `{{backend}}`, rebuilt.
fn user(path: &str, access_log: Option<AccessLog>) -> Result<ProxyTemplate, DeployError> {
    let (body, proxied) = rebuilt(path)?;
    let (text, access_log) = user_template(&body, access_log);
    Ok(ProxyTemplate {
        text,
        access_log,
        path: proxied,
    })
}

/// Checks that the config at `path` is a reverse proxy tare can point at its
/// backend, without deploying anything: the error `deploy` would give.
pub(crate) fn check(path: &str) -> Result<(), DeployError> {
    rebuilt(path).map(drop)
}

/// The config at `path` with its backends pointed at `{{backend}}`, as one
/// file (includes spliced in), and the path it proxies.
fn rebuilt(path: &str) -> Result<(String, String), DeployError> {
    if let Err(e) = std::fs::metadata(path) {
        return Err(DeployError::io(
            format!("nginx config {path:?} (variants: default, tuned, or a file)"),
            e,
        ));
    }
    let payload = tare_nginx::parse(path, &ParseOptions::default());
    if payload.status == Status::Failed {
        let first = payload
            .errors
            .first()
            .map(|e| e.error.clone())
            .unwrap_or_else(|| "parse failed".into());
        return Err(DeployError::Invalid(format!(
            "nginx config {path}: {first}"
        )));
    }
    let r = tare_nginx::retarget(&payload, BACKEND)
        .map_err(|e| DeployError::Invalid(format!("reverse proxy: {e}")))?;
    let combined = tare_nginx::combine::combine(r.payload);
    let statements = combined
        .config
        .first()
        .map(|c| c.parsed.clone())
        .unwrap_or_default();
    let opts = BuildOptions {
        header: false,
        ..BuildOptions::default()
    };
    Ok((tare_nginx::build(&statements, &opts) + "\n", r.path))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A user config in a fresh directory, with the files it includes.
    fn user_config(files: &[(&str, &str)]) -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let main = dir.path().join(files[0].0).display().to_string();
        (dir, main)
    }

    const SEED003: &str = "user nginx;\nworker_processes auto;\nerror_log /var/log/nginx/error.log;\n\
        events { worker_connections 1024; }\nhttp {\n    include params.conf;\n    \
        access_log /var/log/nginx/access.log;\n    upstream backend { server 10.1.2.3:8080; }\n    \
        server {\n        listen 80;\n        location /app/ { proxy_pass http://backend; }\n        \
        location /direct { proxy_pass http://192.0.2.9:9000; }\n    }\n}\n";

    #[test]
    fn a_user_proxy_points_only_at_the_backend() {
        let (_d, main) = user_config(&[
            ("nginx.conf", SEED003),
            ("params.conf", "proxy_set_header Host $host;\n"),
        ]);
        let t = template(&main, None).unwrap();
        assert_eq!(t.path, "/app/");
        assert_eq!(t.access_log, AccessLog::On);
        // The includes are spliced in; the user's addresses are gone.
        assert!(
            t.text.contains("proxy_set_header Host $host;"),
            "{}",
            t.text
        );
        assert!(!t.text.contains("10.1.2.3") && !t.text.contains("192.0.2.9"));
        // The builder quotes the placeholder (it has braces): still one argument.
        assert!(
            t.text.contains(&format!("server '{BACKEND}';")),
            "{}",
            t.text
        );
        assert!(
            t.text.contains(&format!("proxy_pass 'http://{BACKEND}';")),
            "{}",
            t.text
        );
        assert!(t.text.contains("proxy_pass http://backend;"));
        assert!(t.text.contains("listen {{listen}};"));
        assert!(t.text.contains("access_log {{dir}}/log/access.log;"));
        assert!(!t.text.contains("user nginx") && !t.text.contains("/var/log"));
    }

    #[test]
    fn what_cannot_be_proxied_to_the_backend_is_one_clear_error() {
        let (_d, main) = user_config(&[(
            "static.conf",
            "events {}\nhttp { server { listen 80; root /www; } }\n",
        )]);
        let e = template(&main, None).unwrap_err().to_string();
        assert!(e.contains("not a reverse-proxy config"), "{e}");
        assert!(check(&main).is_err());
        let (_d, main) = user_config(&[(
            "tls.conf",
            "events {}\nhttp { server { listen 80; location / { proxy_pass https://up; } } }\n",
        )]);
        let e = template(&main, None).unwrap_err().to_string();
        assert!(
            e.contains("tls.conf:2") && e.contains("only http://"),
            "{e}"
        );
        assert!(!e.contains('\n'));
        let e = template("/nonexistent/proxy.conf", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("variants: default, tuned"), "{e}");
    }

    #[test]
    fn builtins_are_seed_003s_two_configs() {
        let d = template("default", None).unwrap();
        assert_eq!(d.access_log, AccessLog::On);
        assert!(d.text.contains("server {{backend}};") && !d.text.contains("keepalive 100"));
        let t = template("tuned", None).unwrap();
        assert_eq!(t.access_log, AccessLog::Off);
        for s in [
            "keepalive 100;",
            "proxy_http_version 1.1;",
            "proxy_set_header Connection \"\";",
            "proxy_buffers 1024 16k;",
        ] {
            assert!(t.text.contains(s), "{s}");
        }
        // Both parse: what tare deploys is valid nginx.
        for text in [d.text, t.text] {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("n.conf");
            std::fs::write(&p, text.replace("{{", "x").replace("}}", "x")).unwrap();
            let payload = tare_nginx::parse(p.to_str().unwrap(), &ParseOptions::default());
            assert_eq!(payload.status, Status::Ok, "{:?}", payload.errors);
        }
    }
}
