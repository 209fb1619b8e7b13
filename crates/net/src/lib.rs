//! tare net: the IBM study's network microbenchmarks (netperf's TCP_RR,
//! TCP_CRR, UDP_RR and nuttcp's bulk streams) and their responder, the
//! same binary in every placement (docs/net.md).
//!
//! The pipeline, in module order:
//! - [`wire`]: the 16-byte connection header, UDP header and stream
//!   trailer between client and responder.
//! - `stream`: a blocking TCP or Unix connection.
//! - [`responder`]: `tare net serve`, counting what it served.
//! - [`config`]: [`NetConfig`], one run's settings, and their checks.
//! - `client`: what the workers share and hand back; one blocking
//!   worker per stream connection.
//! - `transactions`: rr, crr and udp-rr on the shared event loop
//!   (io_uring or epoll), `-t` threads over `-c` connections.
//! - `blocking`: rr with one connection per thread in a closed loop, a
//!   blocking send and receive (no wait to pay for), unless `--io` asks
//!   for the event loop.
//! - [`run()`]: workers to one [`tare_record::LoadResult`]; [`Net`], the
//!   engine as the code shared by every engine sees it.
//! - [`text`]: the result as people read it.
//! - `fuzzing` (hidden): the wire parsers as the fuzz target drives them.

// Functions a reader can hold: none over 100 lines (clippy.toml) outside tests.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod blocking;
mod client;
pub mod config;
#[doc(hidden)]
pub mod fuzzing;
pub mod responder;
mod run;
mod stream;
pub mod text;
mod transactions;
pub mod wire;

pub use config::{Direction, NetConfig, Test};
pub use responder::{Responder, ResponderConfig, Served};
pub use run::{run, run_with_stop, Net};

/// Why a run could not happen (failed transactions are counted, not errors).
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("{0}")]
    Config(String),
    #[error("{0}")]
    Worker(String),
}

impl From<tare_engine::workers::WorkerFailed> for NetError {
    /// A worker thread that died: its panic's words.
    fn from(e: tare_engine::workers::WorkerFailed) -> NetError {
        NetError::Worker(e.to_string())
    }
}
