//! tare redis: Redis load over RESP (TCP or a Unix socket), with
//! redis-benchmark's interface and output, plus a duration, HDR latency
//! percentiles, an open loop and the generator's own CPU.
//!
//! The pipeline, in module order:
//! - [`config`]: [`RedisConfig`], what one run needs (CLI or experiment runner).
//! - [`command`]: redis-benchmark's tests and custom commands, built once
//!   into RESP with their `__rand_int__` places marked.
//! - [`resp`]: the protocol: commands written, replies scanned
//!   incrementally ([`resp::Parser`], the hot path) or read whole
//!   ([`resp::parse_value`], tare's own commands).
//! - [`session`]: a small blocking client (the pre-run check, `INFO`).
//! - [`prepare`]: `FLUSHALL` and the keys GET reads, before each trial
//!   of an experiment.
//! - `worker`: one epoll loop per thread, connections as state machines,
//!   closed loop with `-P` pipelining or open loop on a schedule.
//! - [`run()`]: one run from config to [`tare_record::LoadResult`];
//!   [`Redis`], the engine as the code shared by every engine sees it
//!   ([`tare_engine::Engine`]): `--find-max` is
//!   `tare_engine::find_max::find_max::<Redis>`.
//! - [`report`]: redis-benchmark 7's text, its `-q` line and `--csv`.

// Functions a reader can hold: none over 100 lines (clippy.toml) outside tests.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod command;
pub mod config;
mod error;
pub mod prepare;
pub mod report;
pub mod resp;
mod run;
pub mod session;
mod worker;

pub use command::{Test, Workload};
pub use config::RedisConfig;
pub use error::RedisError;
pub use prepare::Preparation;
pub use run::{run, run_with_stop, Redis};
