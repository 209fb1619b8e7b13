//! Records: what a load run leaves behind, and nothing else.
//!
//! Engines *write* these types; the runner stores them as JSON lines; analysis
//! and reports *read* them back (ARCHITECTURE.md, "Record, then report"). Nothing here
//! knows how load is generated.
//!
//! - `result`: [`LoadResult`], one load run, the JSON contract (`docs/json-schema.json`, README.md).
//! - `latency`: the HDR histogram (nanoseconds) every engine records into,
//!   its base64 codec and the [`LatencySummary`] derived from it.
//! - `metrics`: [`Metric`]s beyond requests per second (IOPS, GB/s,
//!   GFLOP/s, latency) with their [`Better`] direction, and the tool
//!   engine's [`ToolDetails`].
//! - `schedule`: [`ScheduleReport`], an open loop's pacing and a ramp.
//! - `connect`: [`ConnectReport`], the connect phase and every connection's
//!   state at the deadline.
//! - `external`: [`ExternalDetails`], what an external load tool (wrk,
//!   ab, h2load) reported in its own terms, and what it does not report.
//! - `wakeups`: [`WakeupReport`], how the workers slept and woke.
//! - [`merge`]: several generators' records of one load as one
//!   (remote hosts): counts and histograms add, timelines on one clock.
//! - `judge`: [`judge`], whether a result measured a server at all (a
//!   timeline that drops to zero, connections that fail).
//! - `trial`: [`TrialRecord`], one trial of one experiment cell (a line of
//!   a run directory's `trials.jsonl`).
//! - [`splitmix`]: the workspace's one small seedable generator: open-loop
//!   arrival gaps, the runner's trial order and the analysis bootstrap all
//!   draw from it, so a recorded seed reproduces what was recorded.

// Functions a reader can hold: none over 100 lines (clippy.toml) outside tests.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod connect;
mod external;
mod judge;
mod latency;
pub mod merge;
mod metrics;
pub mod named;
mod result;
mod schedule;
pub mod splitmix;
mod trial;
mod wakeups;

pub use connect::ConnectReport;
pub use external::ExternalDetails;
pub use judge::{judge, Failure};
pub use latency::{CodecError, Latency, LatencySummary};
pub use merge::GeneratorPart;
pub use metrics::{Better, Metric, ToolDetails};
pub use named::NamedResult;
pub use result::{
    Errors, LoadResult, MysqlDetails, NetDetails, PgDetails, PgScriptResult, Primary, RateSummary,
    RedisDetails, StatementLatency, Unit,
};
pub use schedule::ScheduleReport;
pub use trial::TrialRecord;
pub use wakeups::WakeupReport;
