//! `tare serve`: tare's own small HTTP server, the embedded default target
//! and a calibration point with no configuration to get wrong.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tare_engine::Endpoint;

use super::{http_url, sha256_hex, Listen, Server, Target};
use crate::error::DeployError;
use crate::health;
use crate::spec::TargetSpec;

pub(crate) struct TareServe;

impl Target for TareServe {
    fn name(&self) -> &'static str {
        "tare-serve"
    }

    fn about(&self) -> &'static str {
        "tare's built-in HTTP server: the calibration point, nothing to configure"
    }

    fn engine(&self) -> &'static str {
        "http"
    }

    fn standard_port(&self) -> u16 {
        8080
    }

    fn unix_socket(&self, dir: &Path, _port: u16) -> PathBuf {
        dir.join("sock").join("serve.sock")
    }

    /// The running tare: the same build generates load and serves.
    fn default_binary(&self) -> Result<PathBuf, DeployError> {
        std::env::current_exe()
            .map_err(|e| DeployError::io("locating the running tare executable", e))
    }

    fn prepare(
        &self,
        spec: &TargetSpec,
        binary: PathBuf,
        dir: &Path,
        listen: &Listen,
        _companion: Option<SocketAddr>,
    ) -> Result<Server, DeployError> {
        if spec.variant != "default" {
            return Err(DeployError::Invalid(format!(
                "tare-serve has no config variants (got {:?}): it is the calibration point with nothing to configure",
                spec.variant
            )));
        }
        let mut args = vec!["serve".to_string()];
        match listen {
            Listen::Tcp(a) => args.extend(["--listen".into(), a.to_string()]),
            Listen::Unix(p) => args.extend(["--unix".into(), p.display().to_string()]),
        }
        args.extend(["--body-size".into(), spec.body_size.to_string()]);
        let settings = format!("serve --body-size {}", spec.body_size);
        Ok(Server {
            args,
            kind: spec.kind,
            binary,
            run_as: None,
            resource: "/".into(),
            config_sha256: sha256_hex(settings.as_bytes()),
            access_log: "off".into(),
            log_path: dir.to_path_buf(),
            content_path: dir.to_path_buf(),
        })
    }

    fn probe(
        &self,
        server: &Server,
        endpoint: &Endpoint,
        timeout: Duration,
    ) -> Result<(), crate::health::Unready> {
        health::http_get(endpoint, &server.resource, timeout)
    }

    fn url(&self, server: &Server, endpoint: &Endpoint) -> String {
        http_url(&server.resource, endpoint)
    }
}
