//! Remote hosts over SSH (`[hosts.NAME]` in an experiment; docs/remote.md).
//! tare copies itself to each host and runs `tare agent …` there: the same
//! build, checked by hash, speaking JSON lines over ssh's stdin and stdout.
//!
//! - [`host`]: a host's settings and the `ssh` command lines that reach it.
//! - [`install`]: the tools a host needs, and this binary copied and checked.
//! - [`clock`]: the clock offset to a host (recorded with every merge).
//! - [`agent`]: the protocol: one request, event lines, a lifeline on stdin.
//! - [`target`]: a target deployed on a host (`agent deploy`), and what a
//!   host can deploy and owns (`agent check`).
//! - [`monitor`]: that target monitored where it runs, its record put on
//!   this machine's clock.
//! - [`cleanup`]: nothing left on a host after a run or a killed run.
//! - [`addresses`]: this host's own addresses.
//!
//! The load itself (`agent load`) is the runner's: it reads the
//! experiment's `[load]` through the engine registry.

// Functions a reader can hold: none over 100 lines (clippy.toml) outside tests.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod addresses;
pub mod agent;
pub mod cleanup;
pub mod clock;
pub mod host;
pub mod install;
pub mod monitor;
pub mod target;
mod wait;

pub use agent::{Agent, Event};
pub use clock::Clock;
pub use host::Host;
pub use install::{install, Installed};
pub use target::{HostCheck, RemoteTarget};

/// What went wrong with a host, in one line.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RemoteError {
    #[error("host {host}: {message}")]
    Ssh { host: String, message: String },
    #[error("{0}")]
    Local(String),
}
