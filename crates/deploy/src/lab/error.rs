//! What can go wrong building or removing a lab network. Each message is one
//! line that names the command that failed and what it printed, because the
//! usual causes (not root, a kernel without a feature, a name taken) are only
//! visible in `ip`/`nft`/`tc`'s own stderr.

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// Lab placements need root and the `ip`, `nft` and `tc` commands.
    #[error("lab placements are not available: {0}")]
    Unavailable(String),
    /// Run ids become part of namespace and nftables names.
    #[error("run id {run_id:?} cannot name lab resources: {reason}")]
    InvalidRunId { run_id: String, reason: String },
    #[error("`{command}` could not start: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` failed ({status}): {stderr}")]
    Command {
        command: String,
        status: String,
        stderr: String,
    },
    /// Every /27 of the lab pool overlaps an address or route on this host.
    #[error("no free lab subnet in {pool}: every block overlaps an address or route on this host")]
    NoFreeSubnet { pool: String },
    /// Another tare process held the allocation lock for too long.
    #[error("timed out waiting for the lab address lock (another tare process is building a lab network)")]
    LockTimeout,
    /// A forward chain with a drop policy that tare cannot open a hole in.
    #[error("forwarded traffic on the lab bridge would be dropped by {chain} (policy drop); tare opens forwarding only through Docker's DOCKER-USER chain")]
    ForwardBlocked { chain: String },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// Teardown tries every step and reports all that failed.
    #[error("lab teardown left things behind: {}", .0.join("; "))]
    Teardown(Vec<String>),
}
