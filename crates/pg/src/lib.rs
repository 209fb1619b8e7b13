//! tare pg: PostgreSQL load over the wire protocol, with pgbench's
//! interface and output, HDR latency percentiles and the generator's own CPU.
//!
//! The pipeline, in module order:
//! - `config`: [`PgConfig`], what one run needs (CLI or experiment runner).
//! - `conninfo`: host/port/user/database/password resolved as libpq does.
//! - [`script`]: pgbench's script language (SQL, `:var`, `\set`, `\sleep`).
//! - `program`: scripts compiled once, protocol bytes prebuilt.
//! - `protocol`: wire messages (`server_message`: an error in libpq's
//!   words); `startup`: connection start-up and
//!   authentication (cleartext, MD5, SCRAM-SHA-256) as a state machine.
//! - `engine`: worker threads, one epoll loop each, clients as state machines.
//! - [`run()`]: one run from config to [`tare_record::LoadResult`]; [`Pg`],
//!   the engine as the code shared by every engine sees it
//!   ([`tare_engine::Engine`]): `--find-max` is
//!   `tare_engine::find_max::find_max::<Pg>`.
//! - [`report`]: pgbench's PostgreSQL 15 text layout, plus percentiles.
//! - [`session`]: a small blocking client; [`init`]: `--init`, pgbench's tables.
//! - `fuzzing` (hidden): byte-taking entry points for the fuzz targets in
//!   `crates/pg/fuzz` (docs/fuzzing.md).

// Functions a reader can hold: none over 100 lines (clippy.toml) outside tests.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod config;
mod conninfo;
mod engine;
mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod init;
mod program;
mod protocol;
pub mod report;
mod run;
pub mod script;
mod server_message;
pub mod session;
mod startup;

pub use config::{Length, PgConfig, QueryMode, ScriptSource, ScriptSpec, TxLogConfig};
pub use conninfo::{ConnFlags, ConnParams};
pub use error::PgError;
pub use protocol::ServerError;
pub use run::{run, run_with_stop, Pg};
