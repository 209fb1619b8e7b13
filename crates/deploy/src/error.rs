//! One error type for the library: each variant says what failed and where,
//! in one line, so the CLI can print it as is.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Invalid(String),
    #[error("{binary}: not found ({hint})")]
    MissingBinary { binary: PathBuf, hint: String },
    #[error(
        "Docker is not reachable ({reason}); placements that need it: {} (the others still work: {})",
        OnMechanism("docker", true),
        OnMechanism("docker", false)
    )]
    DockerUnavailable { reason: String },
    #[error("docker: {0}")]
    Docker(String),
    #[error("{0}")]
    Podman(String),
    #[error("{placement} is not available: {reason}")]
    PlacementUnavailable { placement: String, reason: String },
    #[error(
        "{target} did not become healthy at {endpoint} (gave up after {waited_s:.1} s): {last_error}{log}"
    )]
    Unhealthy {
        target: String,
        endpoint: String,
        waited_s: f64,
        last_error: String,
        /// The tail of the server's own log, where the real reason usually is.
        log: String,
    },
    #[error("image build for {target}: {reason}")]
    ImageBuild { target: String, reason: String },
}

impl DeployError {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        DeployError::Io {
            what: what.into(),
            source,
        }
    }
}

/// The placements built on a mechanism (`true`) or not built on it
/// (`false`), comma-separated: the registry writes them (`Display` in
/// placements/mod.rs), so this leaf names no placement.
pub(crate) struct OnMechanism(pub(crate) &'static str, pub(crate) bool);
