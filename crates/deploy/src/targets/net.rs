//! `net`: the `tare net` responder (`tare net serve`), the target of the
//! IBM study's network rows (docs/studies.md, seed 002): TCP and UDP
//! request/response and bulk streams, the same tare binary in every
//! placement, as `tare-serve` is.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use tare_engine::Endpoint;
use tare_net::responder::DEFAULT_PORT;
use tare_net::wire::{Header, Mode};

use super::{tare_listen_args, Prepare, Protocol, Recipe, Server, Target, TargetKind};
use crate::error::DeployError;

pub(crate) struct Net;

impl Recipe for Net {
    fn name(&self) -> &'static str {
        "net"
    }

    fn about(&self) -> &'static str {
        "tare's network responder (tare net serve): TCP/UDP round trips and streams"
    }

    fn target(&self) -> Target {
        Target {
            udp: true,
            // The same binary as tare-serve: one image for both.
            image: "tare-serve".into(),
            ..Target::of(TargetKind(&Net), Protocol::Net, DEFAULT_PORT)
        }
    }

    /// The running tare: the same build generates load and responds.
    fn default_binary(&self, _target: &Target) -> Result<PathBuf, DeployError> {
        crate::host::running_tare()
    }

    fn prepare(&self, cx: &Prepare<'_>) -> Result<Server, DeployError> {
        let mut args = vec!["net".to_string(), "serve".to_string()];
        args.extend(tare_listen_args(cx.listen));
        Ok(Server {
            access_log: "off".into(),
            ..Server::new(cx, args, b"net serve")
        })
    }
}

/// One TCP request/response transaction of one byte each way: the net
/// protocol's readiness check (`Protocol::probe`).
pub(super) fn round_trip(endpoint: &Endpoint, timeout: Duration) -> Result<(), String> {
    let mut first = Header {
        mode: Mode::Rr,
        request: 1,
        response: 1,
    }
    .encode()
    .to_vec();
    first.push(0);
    let mut b = [0u8; 1];
    let r = match endpoint {
        Endpoint::Tcp(a) => TcpStream::connect_timeout(a, timeout).and_then(|mut s| {
            s.set_read_timeout(Some(timeout))?;
            s.write_all(&first)?;
            s.read_exact(&mut b)
        }),
        Endpoint::Unix(p) => UnixStream::connect(p).and_then(|mut s| {
            s.set_read_timeout(Some(timeout))?;
            s.write_all(&first)?;
            s.read_exact(&mut b)
        }),
    };
    r.map_err(|e| format!("no round trip from the net responder at {endpoint}: {e}"))
}
