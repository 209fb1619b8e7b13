//! Why a `tare mysql` command could not happen. Statements that fail during
//! a run are counted, not errors.

use tare_engine::workers::WorkerFailed;

use crate::protocol::ServerError;

#[derive(Debug, thiserror::Error)]
pub enum MysqlError {
    /// A setting that cannot work (one line, as the CLI prints it).
    #[error("{0}")]
    Config(String),
    #[error("could not connect to MySQL at {endpoint}: {error}")]
    Connect {
        endpoint: String,
        error: std::io::Error,
    },
    /// The server refused the login or the database (its words).
    #[error("{0}")]
    Refused(ServerError),
    /// An error reply to one of tare's own statements.
    #[error("{context}: {error}")]
    Server { context: String, error: ServerError },
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

impl MysqlError {
    pub(crate) fn io(context: impl Into<String>, error: std::io::Error) -> MysqlError {
        MysqlError::Io {
            context: context.into(),
            error,
        }
    }
}
