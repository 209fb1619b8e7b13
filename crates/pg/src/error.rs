//! [`PgError`]: why a run could not start or could not go on.

use std::io;

use crate::protocol::{FrameError, ServerError};
use crate::script::ScriptError;

#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// Flags or configuration that cannot work (caught before any load).
    #[error("{0}")]
    Config(String),
    /// A script that does not parse: the message names file and line.
    #[error(transparent)]
    Script(#[from] ScriptError),
    /// The server could not be reached at all.
    #[error("connection to server at {target} failed: {cause}")]
    Connect { target: String, cause: io::Error },
    /// The server refused us (authentication, missing database, ...).
    #[error("connection to server at {target} failed: {error}")]
    Refused {
        target: String,
        error: Box<ServerError>,
    },
    /// The server answered a statement tare itself needed with an error.
    #[error("{context}: {error}")]
    Server {
        context: String,
        error: Box<ServerError>,
    },
    /// The bytes from the server do not follow the protocol.
    #[error("{0}")]
    Protocol(String),
    /// The server needs something tare does not speak (GSSAPI, SSL-only, ...).
    #[error("{0}")]
    Unsupported(String),
    #[error("{context}: {cause}")]
    Io { context: String, cause: io::Error },
    /// A worker thread panicked (or could not start) before the run began.
    #[error(transparent)]
    Worker(#[from] tare_engine::workers::WorkerFailed),
}

impl From<FrameError> for PgError {
    fn from(e: FrameError) -> Self {
        PgError::Protocol(e.to_string())
    }
}

impl PgError {
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        PgError::Io {
            context: context.into(),
            cause: source,
        }
    }
}
