//! `tare serve`: a small, fast HTTP/1.1 server with nothing to configure wrong.
//!
//! It is the embedded default target of `tare run` and the calibration point
//! of tare's own accuracy: every response is the same prebuilt bytes, sent
//! after an optional known delay (`--delay`) and around optional stalls of
//! known length (`--stall-every`, `--stall`), so a latency tare reports can be
//! checked against what the server was told to do.
//!
//! - `config`: [`ServeConfig`], what to listen on and how to answer.
//! - `response`: the prebuilt response bytes.
//! - `worker`: one epoll loop per thread, all sharing the listening socket.
//! - `fuzzing` (hidden): the request parser as the fuzz target in
//!   `crates/serve/fuzz` drives it (docs/fuzzing.md).

// Functions a reader can hold: none over 100 lines (clippy.toml) outside tests.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod config;
#[doc(hidden)]
pub mod fuzzing;
mod response;
mod worker;

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

pub use config::ServeConfig;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: String, source: io::Error },
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("invalid configuration: {0}")]
    Config(String),
}

/// A running server; dropping it stops every worker and removes its Unix socket.
pub struct Server {
    local_addr: Option<SocketAddr>,
    unix_path: Option<PathBuf>,
    stop: Arc<AtomicBool>,
    workers: Vec<JoinHandle<()>>,
}

impl Server {
    pub fn start(config: ServeConfig) -> Result<Server, ServeError> {
        config.validate().map_err(ServeError::Config)?;
        // Every connection is a file: take the whole open-files limit.
        tare_engine::limits::raise_open_files();
        let (listener, local_addr, unix_path): (OwnedFd, _, _) = match &config.unix {
            Some(path) => {
                // A stale socket file from a killed server would make bind fail.
                if std::fs::symlink_metadata(path)
                    .map(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()))
                    .unwrap_or(false)
                {
                    let _ = std::fs::remove_file(path);
                }
                let l = UnixListener::bind(path).map_err(|source| ServeError::Listen {
                    addr: format!("unix:{}", path.display()),
                    source,
                })?;
                l.set_nonblocking(true)?;
                (l.into(), None, Some(path.clone()))
            }
            None => {
                let l = TcpListener::bind(config.listen).map_err(|source| ServeError::Listen {
                    addr: config.listen.to_string(),
                    source,
                })?;
                l.set_nonblocking(true)?;
                let addr = l.local_addr()?;
                (l.into(), Some(addr), None)
            }
        };
        // As deep as the kernel allows (`net.core.somaxconn`): a load test
        // opening thousands of connections at once would otherwise see its
        // handshakes dropped and retried a second later (docs/http.md, "Many
        // connections").
        let backlog = tare_engine::limits::somaxconn().unwrap_or(4096);
        set_backlog(&listener, backlog.clamp(128, i32::MAX as u64) as i32);
        let listener = Arc::new(listener);
        let response = Arc::new(response::Responses::new(&config));
        let stop = Arc::new(AtomicBool::new(false));
        let origin = std::time::Instant::now();
        let mut workers = Vec::new();
        for i in 0..config.threads {
            let w = worker::Worker::new(
                listener.clone(),
                response.clone(),
                stop.clone(),
                config.clone(),
                origin,
            )?;
            workers.push(
                std::thread::Builder::new()
                    .name(format!("tare-serve-{i}"))
                    .spawn(move || w.run())?,
            );
        }
        Ok(Server {
            local_addr,
            unix_path,
            stop,
            workers,
        })
    }

    /// The bound TCP address (with the real port when asked for port 0).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.local_addr
    }

    pub fn unix_path(&self) -> Option<&PathBuf> {
        self.unix_path.as_ref()
    }

    /// Blocks until the workers stop (they stop only on [`Server::stop`] or a
    /// fatal error).
    pub fn wait(mut self) {
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }

    /// A handle that stops the server from another thread or a signal handler.
    pub fn stopper(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
        if let Some(p) = self.unix_path.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// std binds with a backlog of 128; raise it (the kernel caps it at somaxconn).
fn set_backlog(fd: &OwnedFd, backlog: i32) {
    // SAFETY: listen on an already-listening socket only updates the backlog.
    unsafe { libc::listen(fd.as_raw_fd(), backlog) };
}
