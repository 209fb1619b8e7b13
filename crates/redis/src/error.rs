//! Why a `tare redis` run could not happen. Commands that fail during a
//! run are counted, not errors.

use tare_engine::workers::WorkerFailed;

#[derive(Debug, thiserror::Error)]
pub enum RedisError {
    /// A setting that cannot work (one line, as the CLI prints it).
    #[error("{0}")]
    Config(String),
    #[error("could not connect to Redis at {endpoint}: {error}")]
    Connect {
        endpoint: String,
        error: std::io::Error,
    },
    /// `AUTH` refused (the server's words).
    #[error("AUTH failed: {0}")]
    Auth(String),
    #[error("{context}: {error}")]
    Io {
        context: String,
        error: std::io::Error,
    },
    #[error("protocol error: {0}")]
    Protocol(String),
    #[error(transparent)]
    Worker(#[from] WorkerFailed),
}
