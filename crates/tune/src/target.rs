//! What the config is measured as: a static server (`nginx`) or a reverse
//! proxy in front of a `tare serve` backend tare starts (`nginx-proxy`,
//! seed 003's set-up: docs/studies.md, seed 003). Decided once, from the
//! baseline, before anything runs.

use std::path::Path;

use serde::Serialize;
use tare_nginx::Payload;

use crate::TuneError;

/// `--target`: what the user asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TargetChoice {
    /// A reverse proxy if the config has a `proxy_pass`, else a static server.
    #[default]
    Auto,
    /// A static server; a config that proxies is refused (nginx would pass
    /// requests to the addresses it names, which are not tare's to load).
    Static,
    /// A reverse proxy; a config without `proxy_pass` is refused.
    Proxy,
}

/// What the experiments deploy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TuneTarget {
    Nginx,
    NginxProxy,
}

impl TuneTarget {
    /// The experiment's `target.kind`.
    pub fn kind(self) -> &'static str {
        match self {
            TuneTarget::Nginx => "nginx",
            TuneTarget::NginxProxy => "nginx-proxy",
        }
    }
}

/// Decides the target for the baseline at `path` (already parsed as `payload`).
/// A proxy config is checked now, so one tare cannot point at its backend
/// (a variable, TLS, a non-HTTP backend) fails before any measurement.
pub(crate) fn resolve(
    path: &Path,
    payload: &Payload,
    choice: TargetChoice,
) -> Result<TuneTarget, TuneError> {
    let proxies = tare_nginx::is_proxy(payload);
    let target = match (choice, proxies) {
        (TargetChoice::Static, true) => {
            return Err(TuneError::Config(format!(
                "{}: it has proxy_pass; as a static server nginx would pass requests to the \
                 addresses it names: use --target nginx-proxy (its backends pointed at tare serve)",
                path.display()
            )))
        }
        (TargetChoice::Proxy, false) => {
            return Err(TuneError::Config(format!(
                "{}: no proxy_pass in the http block: --target nginx-proxy needs a reverse-proxy config",
                path.display()
            )))
        }
        (_, true) => TuneTarget::NginxProxy,
        (_, false) => TuneTarget::Nginx,
    };
    if target == TuneTarget::NginxProxy {
        tare_deploy::check_proxy_config(path).map_err(|e| TuneError::Config(e.to_string()))?;
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(json: &str) -> Payload {
        serde_json::from_str(json).unwrap()
    }

    const STATIC: &str = r#"{"config":[{"file":"s.conf","parsed":[{"directive":"http","line":1,"args":[],"block":[
        {"directive":"server","line":2,"args":[],"block":[{"directive":"root","line":3,"args":["/www"]}]}]}]}]}"#;

    #[test]
    fn a_static_config_is_a_static_server_unless_proxying_is_forced() {
        let p = payload(STATIC);
        let path = Path::new("s.conf");
        assert_eq!(
            resolve(path, &p, TargetChoice::Auto).unwrap(),
            TuneTarget::Nginx
        );
        assert_eq!(
            resolve(path, &p, TargetChoice::Static).unwrap().kind(),
            "nginx"
        );
        let e = resolve(path, &p, TargetChoice::Proxy)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("s.conf: no proxy_pass"), "{e}");
    }
}
