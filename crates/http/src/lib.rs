//! `tare http`: HTTP/1.1 load, closed loop, keep-alive or a new connection per
//! request, over TCP or a Unix socket.
//!
//! The pipeline of one run:
//! - [`target`]: the URL (or Unix socket) parsed and resolved once.
//! - [`request`]: the request bytes, serialized once and reused for every send.
//! - [`mix`]: a request mix (a URL file, a requests file): several named
//!   requests, each serialized once, one drawn by weight for every send.
//! - [`response`]: an incremental response parser (Content-Length, chunked,
//!   close-delimited) that never allocates per response.
//! - `worker`: one event loop per thread owning its share of connections.
//! - [`run`]: starts the workers ([`tare_engine::workers`]), merges their
//!   recorders into a [`tare_record::LoadResult`].
//! - [`Http`]: the engine as the code shared by every engine sees it
//!   ([`tare_engine::Engine`]): `--find-max` is
//!   `tare_engine::find_max::find_max::<Http>`.
//! - [`wrk_text`]: the wrk 4.x text layout of a result.

// Functions a reader can hold: none over 100 lines (clippy.toml) outside tests.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod config;
mod head;
pub mod mix;
pub mod request;
pub mod response;
pub mod target;
pub mod verdict;
mod worker;
pub mod wrk_text;

mod engine;

pub use config::HttpConfig;
pub use engine::{run, run_with_stop, Http};
pub use target::Target;

/// Why a run could not start or had to stop.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("{0}")]
    Config(String),
    #[error("{0}")]
    Url(String),
    #[error("{addr} is not a loopback address; load goes only to loopback, Unix sockets, or (with --allow-remote) addresses you own")]
    NotLocal { addr: String },
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    /// A worker thread panicked (or could not start): its counts are lost.
    #[error(transparent)]
    Worker(#[from] tare_engine::workers::WorkerFailed),
}
