//! How tare marks what it makes on this machine as its own, and whose it
//! is (ARCHITECTURE.md, "Leaves no trace"): `tare cleanup` removes only
//! what carries these marks and whose owner no longer runs, and says so
//! ([`CleanupReport`]).

use serde::Serialize;

/// Prefix of every deployment directory (in the system temp dir) and every
/// container and volume name.
pub(crate) const PREFIX: &str = "tare-";
/// Name of the file in a deployment directory naming its owner ("pid:starttime").
pub(crate) const OWNER_FILE: &str = ".tare-owner";

/// What `tare cleanup` did: each mechanism adds what it removed or left.
#[derive(Debug, Default, Serialize)]
pub struct CleanupReport {
    /// What was removed, one line each ("container tare-x-1", "process 1234", …).
    pub removed: Vec<String>,
    /// tare resources left alone because their owner still runs.
    pub live: Vec<String>,
    /// What could not be checked or removed (e.g. Docker not reachable).
    pub notes: Vec<String>,
}
