//! The tool engine: the field's own benchmark programs run inside a
//! placement, their output read into records with named metrics, units and
//! directions (docs/tools.md). Nobody should reimplement fio or HPL; what
//! tare adds is running them fairly everywhere and putting their numbers
//! into its statistics.
//!
//! - [`job`]: which program runs and what work it does ([`Job`], the
//!   built-ins), how big and how long ([`Sizes`]), the command line.
//! - [`exec`]: runs one job in a directory: exit, output, CPU time, the
//!   filesystem under it, whether O_DIRECT works there.
//! - [`fio`], [`hpcc`], [`sysbench`]: one parser per tool, each read from
//!   the program's machine-readable (or, for sysbench, only) output.
//! - [`external`]: the external load engine: wrk, ab and h2load run as a
//!   cell's load against its address, their text read into `LoadResult`s
//!   (docs/external.md).
//! - [`wire`]: the agent's request and reply, one JSON line each.
//! - [`agent`]: `tare tool serve`, the agent a deployment starts inside
//!   its placement.
//! - [`run`]: [`Tool`], the engine: a run through the agent or right here,
//!   made into a `LoadResult` whose primary metric is the job's.

// Functions a reader can hold: none over 100 lines (clippy.toml) outside tests.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod agent;
pub mod exec;
pub mod external;
pub mod fio;
#[doc(hidden)]
pub mod fuzzing;
pub mod hpcc;
pub mod job;
mod parsed;
pub mod run;
pub mod sysbench;
pub mod wire;

/// `name`'s binary in a directory of PATH (`/usr/bin:/bin` without one).
pub(crate) fn on_path(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

pub use job::{builtin, Direct, Job, Sizes, ToolKind, BUILTIN};
pub use parsed::{ParseError, Parsed};
pub use run::{Place, Tool, ToolConfig, ToolError};
