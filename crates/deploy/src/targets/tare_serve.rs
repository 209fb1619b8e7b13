//! `tare serve`: tare's own small HTTP server, the embedded default target
//! and a calibration point with no configuration to get wrong.

use std::path::PathBuf;

use super::{tare_listen_args, Prepare, Protocol, Recipe, Server, Target, TargetKind};
use crate::error::DeployError;

pub(crate) struct TareServe;

impl Recipe for TareServe {
    fn name(&self) -> &'static str {
        "tare-serve"
    }

    fn about(&self) -> &'static str {
        "tare's built-in HTTP server: the calibration point, nothing to configure"
    }

    fn target(&self) -> Target {
        Target {
            socket: "serve.sock".into(),
            ..Target::of(TargetKind(&TareServe), Protocol::Http, 8080)
        }
    }

    /// The running tare: the same build generates load and serves.
    fn default_binary(&self, _target: &Target) -> Result<PathBuf, DeployError> {
        crate::host::running_tare()
    }

    fn prepare(&self, cx: &Prepare<'_>) -> Result<Server, DeployError> {
        let body_size = cx.target().body_size;
        let mut args = vec!["serve".to_string()];
        args.extend(tare_listen_args(cx.listen));
        args.extend(["--body-size".into(), body_size.to_string()]);
        let settings = format!("serve --body-size {body_size}");
        Ok(Server {
            resource: "/".into(),
            access_log: "off".into(),
            ..Server::new(cx, args, settings.as_bytes())
        })
    }
}
