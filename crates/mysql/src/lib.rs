//! tare mysql: MySQL/MariaDB load over the client/server protocol (TCP or
//! a Unix socket) running sysbench 1.0's OLTP workloads, with sysbench's
//! interface and output, plus HDR latency percentiles, an open loop,
//! `--find-max` and the generator's own CPU.
//!
//! The pipeline, in module order:
//! - [`config`]: [`MysqlConfig`], what one run needs (CLI or experiment runner).
//! - [`protocol`]: packets, the handshake (mysql_native_password,
//!   caching_sha2_password's scramble), OK/ERR,
//!   COM_QUERY and the binary prepared-statement commands, and
//!   [`protocol::Scanner`], which finds where a reply ends (the hot path).
//! - `wire`: a connection opened and logged in with bounded blocking calls.
//! - [`session`]: tare's own statements (the pre-run check, status counters).
//! - [`oltp`]: sysbench's tables, statements per transaction and random
//!   distributions.
//! - `worker`: one wait loop per thread (io_uring or epoll, `--io`),
//!   connections as state machines, closed loop or open loop on a
//!   schedule, deadlocks retried.
//! - [`run()`]: one run from config to [`tare_record::LoadResult`];
//!   [`Mysql`], the engine as the code shared by every engine sees it
//!   ([`tare_engine::Engine`]): `--find-max` is
//!   `tare_engine::find_max::find_max::<Mysql>`.
//! - [`admin`]: `prepare` and `cleanup`, sysbench's tables made and dropped.
//! - [`report`]: sysbench 1.0's text.
//! - `fuzzing` (hidden): byte-taking entry points for `crates/mysql/fuzz`.

// Functions a reader can hold: none over 100 lines (clippy.toml) outside tests.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod admin;
pub mod config;
mod error;
#[doc(hidden)]
pub mod fuzzing;
pub(crate) mod oltp;
pub mod protocol;
pub mod report;
mod run;
pub mod session;
mod wire;
mod worker;

pub use config::MysqlConfig;
pub use error::MysqlError;
pub use oltp::{Mix, RandType, Schema, Workload};
pub use run::{run, run_with_stop, Mysql};
pub use wire::Login;
