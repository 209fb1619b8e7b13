//! `[target] kind = "command"`: a user's own service (docs/your-service.md),
//! read into the target value tare-deploy deploys ([`tare_deploy::Service`]
//! on a `tare_deploy::Target`), every mistake named at its line: no
//! command, an unknown placeholder, an engine tare has no load for, a
//! readiness it cannot check, a file that is not there. The keys that
//! only a service has are refused for a built-in target, which knows its
//! own command line.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tare_deploy::{Protocol, Ready, Service, Target};
use toml::Spanned;

use super::error::{ExperimentError, Locator};
use super::raw::RawTarget;

type Result<T> = std::result::Result<T, ExperimentError>;

/// The keys of `[target]` a service has and a built-in target does not.
const SERVICE_KEYS: &[&str] = &[
    "command",
    "engine",
    "ready",
    "ready_timeout",
    "env",
    "workdir",
    "files",
    "path",
    "port",
];

/// `target` with the service `t` describes, when its recipe takes one
/// (`Target::service` is set); a built-in target refuses the keys.
/// `base`: where relative `files` and a relative program are.
pub(super) fn apply(loc: &Locator, t: &RawTarget, target: Target, base: &Path) -> Result<Target> {
    if target.oci.is_some() {
        // An image's own keys are read by `experiment::image`.
        return Ok(target);
    }
    if target.service.is_none() {
        return match service_keys(t).into_iter().next() {
            Some((key, span)) => Err(loc.error(
                span,
                &format!("target.{key}"),
                format!(
                    "`{key}` is for kind = \"command\" (your own service); {} has its own",
                    target.name()
                ),
            )),
            None => Ok(target),
        };
    }
    let (words, binary) = command(loc, t, base)?;
    let (system_files, app_files) = files(loc, t, base)?;
    let mut target = Target::command(Service {
        command: words,
        env: env(loc, t)?,
        workdir: t.workdir.as_ref().map(|w| w.get_ref().clone()),
        system_files,
        app_files,
        path: path(loc, t)?,
    });
    target.binary = binary;
    settings(loc, t, &mut target)?;
    Ok(target)
}

/// `command`'s words, each placeholder known, and the program's path when
/// it gives one (relative to this file); a bare name is looked up on PATH
/// where it deploys.
fn command(loc: &Locator, t: &RawTarget, base: &Path) -> Result<(Vec<String>, Option<PathBuf>)> {
    let command = t.command.as_ref().ok_or_else(|| {
        loc.error(
            t.kind.span(),
            "target.command",
            "kind = \"command\" needs `command`: the program and its arguments, e.g. [\"./myapp\", \"--port\", \"{port}\"]",
        )
    })?;
    if let Some(b) = &t.binary {
        return Err(loc.error(
            b.span(),
            "target.binary",
            "a command's program is its first word: leave `binary` out",
        ));
    }
    for w in command.get_ref() {
        Service::placeholders(w.get_ref())
            .map_err(|e| loc.error(w.span(), "target.command", e.to_string()))?;
    }
    let words: Vec<String> = command
        .get_ref()
        .iter()
        .map(|w| w.get_ref().clone())
        .collect();
    let program = words.first().map(String::as_str).unwrap_or("");
    if program.trim().is_empty() {
        return Err(loc.error(
            command.span(),
            "target.command",
            "needs at least its program",
        ));
    }
    if !program.contains('/') {
        return Ok((words, None));
    }
    let path = base.join(program);
    if !path.is_file() {
        let span = command.get_ref()[0].span();
        return Err(loc.error(
            span,
            "target.command",
            format!("no program at {}", path.display()),
        ));
    }
    Ok((words, Some(path)))
}

/// `env`: names a shell can set, values with known placeholders; and
/// `workdir`'s placeholders.
fn env(loc: &Locator, t: &RawTarget) -> Result<Vec<(String, String)>> {
    let mut env = Vec::new();
    for (k, v) in t.env.iter().flat_map(|e| e.get_ref()) {
        let key = format!("target.env.{}", k.get_ref());
        let name = k.get_ref();
        let ok = !name.is_empty()
            && !name.contains('=')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if !ok {
            return Err(loc.error(k.span(), &key, "not an environment variable name"));
        }
        Service::placeholders(v.get_ref()).map_err(|e| loc.error(v.span(), &key, e.to_string()))?;
        env.push((name.clone(), v.get_ref().clone()));
    }
    if let Some(w) = &t.workdir {
        Service::placeholders(w.get_ref())
            .map_err(|e| loc.error(w.span(), "target.workdir", e.to_string()))?;
    }
    Ok(env)
}

/// `path`: the HTTP path load asks for (default `/`).
pub(super) fn path(loc: &Locator, t: &RawTarget) -> Result<String> {
    match &t.path {
        None => Ok("/".to_string()),
        Some(p) if p.get_ref().starts_with('/') => Ok(p.get_ref().clone()),
        Some(p) => Err(loc.error(p.span(), "target.path", "an HTTP path starts with /")),
    }
}

/// `engine`, `ready`, `ready_timeout` and `port` onto the target.
pub(super) fn settings(loc: &Locator, t: &RawTarget, target: &mut Target) -> Result<()> {
    if let Some(e) = &t.engine {
        target.protocol = e
            .get_ref()
            .parse()
            .ok()
            .filter(|p: &Protocol| p.for_services())
            .ok_or_else(|| {
                let names: Vec<&str> = Protocol::ALL
                    .iter()
                    .filter(|p| p.for_services())
                    .map(|p| p.engine())
                    .collect();
                loc.error(
                    e.span(),
                    "target.engine",
                    format!(
                        "`{}` is not an engine a service can speak (one of: {})",
                        e.get_ref(),
                        names.join(", ")
                    ),
                )
            })?;
    }
    if let Some(r) = &t.ready {
        target.ready = ready(r.get_ref()).map_err(|m| loc.error(r.span(), "target.ready", m))?;
    }
    if let Some(r) = &t.ready_timeout {
        let d = humantime::parse_duration(r.get_ref())
            .ok()
            // A readiness wait is a timeout (docs/experiments.md, "Limits").
            .filter(|d| (Duration::from_millis(100)..=tare_engine::bounds::MAX_TIMEOUT).contains(d))
            .ok_or_else(|| {
                loc.error(
                    r.span(),
                    "target.ready_timeout",
                    format!(
                        "`{}` is not a duration from 100ms to 1h, e.g. 2m",
                        r.get_ref()
                    ),
                )
            })?;
        target.ready_within = Some(d);
    }
    if let Some(p) = &t.port {
        target.port = u16::try_from(*p.get_ref())
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| loc.error(p.span(), "target.port", "a port is 1 to 65535"))?;
    }
    Ok(())
}

/// `ready = "tcp"`, `"http:/path"` or `"engine"` (the engine's own probe).
fn ready(text: &str) -> std::result::Result<Ready, String> {
    match text {
        "tcp" => Ok(Ready::Tcp),
        "engine" | "protocol" => Ok(Ready::Protocol),
        _ => match text.strip_prefix("http:") {
            Some(path) if path.starts_with('/') => Ok(Ready::Http { path: path.into() }),
            _ => Err(format!(
                "`{text}` is not a readiness check (tcp, http:/path, or engine)"
            )),
        },
    }
}

/// A service's files: the host's (absolute paths), and the app's (where
/// each is, and its path under the deployment's `app/`).
type Files = (Vec<PathBuf>, Vec<(PathBuf, PathBuf)>);

/// `files`: absolute paths are the host's own (in the image at their
/// paths); relative ones are the app's (copied into every deployment's
/// `app/`). Each must exist now.
fn files(loc: &Locator, t: &RawTarget, base: &Path) -> Result<Files> {
    let mut system = Vec::new();
    let mut app = Vec::new();
    for f in t.files.iter().flat_map(|f| f.get_ref()) {
        let p = Path::new(f.get_ref());
        let bad = |m: String| loc.error(f.span(), "target.files", m);
        if p.is_absolute() {
            if !p.exists() {
                return Err(bad(format!("{}: no such file or directory", p.display())));
            }
            system.push(p.to_path_buf());
        } else {
            let inside = tare_deploy::app_path(p).ok_or_else(|| {
                bad(format!(
                    "`{}` leaves this file's directory: name an app file below it, or give an absolute path for a host file",
                    p.display()
                ))
            })?;
            let source = base.join(p);
            if !source.exists() {
                return Err(bad(format!(
                    "{}: no such file or directory",
                    source.display()
                )));
            }
            app.push((source, inside));
        }
    }
    Ok((system, app))
}

/// The service keys `t` sets, with where.
fn service_keys(t: &RawTarget) -> Vec<(&'static str, std::ops::Range<usize>)> {
    let span = |s: Option<std::ops::Range<usize>>, k: &'static str| s.map(|s| (k, s));
    let found = [
        span(t.command.as_ref().map(Spanned::span), "command"),
        span(t.engine.as_ref().map(Spanned::span), "engine"),
        span(t.ready.as_ref().map(Spanned::span), "ready"),
        span(t.ready_timeout.as_ref().map(Spanned::span), "ready_timeout"),
        span(t.env.as_ref().map(Spanned::span), "env"),
        span(t.workdir.as_ref().map(Spanned::span), "workdir"),
        span(t.files.as_ref().map(Spanned::span), "files"),
        span(t.path.as_ref().map(Spanned::span), "path"),
        span(t.port.as_ref().map(Spanned::span), "port"),
    ];
    debug_assert_eq!(found.len(), SERVICE_KEYS.len());
    found.into_iter().flatten().collect()
}
