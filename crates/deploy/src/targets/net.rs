//! `net`: the `tare net` responder (`tare net serve`), the target of the
//! IBM study's network rows (docs/studies.md, seed 002): TCP and UDP
//! request/response and bulk streams, the same tare binary in every
//! placement, as `tare-serve` is.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tare_engine::Endpoint;
use tare_net::responder::DEFAULT_PORT;
use tare_net::wire::{Header, Mode};

use super::{sha256_hex, Listen, Server, Target};
use crate::error::DeployError;
use crate::health::Unready;
use crate::spec::TargetSpec;

pub(crate) struct Net;

impl Target for Net {
    fn name(&self) -> &'static str {
        "net"
    }

    fn about(&self) -> &'static str {
        "tare's network responder (tare net serve): TCP/UDP round trips and streams"
    }

    fn engine(&self) -> &'static str {
        "net"
    }

    fn standard_port(&self) -> u16 {
        DEFAULT_PORT
    }

    fn unix_socket(&self, dir: &Path, _port: u16) -> PathBuf {
        dir.join("sock").join("net.sock")
    }

    /// The running tare: the same build generates load and responds.
    fn default_binary(&self) -> Result<PathBuf, DeployError> {
        std::env::current_exe()
            .map_err(|e| DeployError::io("locating the running tare executable", e))
    }

    /// The same binary as tare-serve: one image for both.
    fn image_name(&self) -> &'static str {
        "tare-serve"
    }

    fn uses_udp(&self) -> bool {
        true
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
                "net has no config variants (got {:?}): the client chooses every size",
                spec.variant
            )));
        }
        let mut args = vec!["net".to_string(), "serve".to_string()];
        match listen {
            Listen::Tcp(a) => args.extend(["--listen".into(), a.to_string()]),
            Listen::Unix(p) => args.extend(["--unix".into(), p.display().to_string()]),
        }
        Ok(Server {
            args,
            kind: spec.kind,
            binary,
            run_as: None,
            resource: String::new(),
            config_sha256: sha256_hex(b"net serve"),
            access_log: "off".into(),
            log_path: dir.to_path_buf(),
            content_path: dir.to_path_buf(),
        })
    }

    /// One TCP request/response transaction of one byte each way.
    fn probe(
        &self,
        _server: &Server,
        endpoint: &Endpoint,
        timeout: Duration,
    ) -> Result<(), Unready> {
        round_trip(endpoint, timeout).map_err(Unready::from)
    }

    /// `tare net`'s `-H HOST -p PORT` as an address (or the socket).
    fn url(&self, _server: &Server, endpoint: &Endpoint) -> String {
        endpoint.to_string()
    }
}

/// One readiness check of the net target (`Target::probe`).
fn round_trip(endpoint: &Endpoint, timeout: Duration) -> Result<(), String> {
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
