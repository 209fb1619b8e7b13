//! The engine loop every load generator shares: the parts of `tare http` and
//! `tare pg` that are not protocol.
//!
//! - [`poller`]: a thin level-triggered epoll wrapper (one per worker thread).
//! - [`endpoint`]: where load goes (TCP or Unix socket) and non-blocking connect.
//! - `recorder`: per-thread latency histogram, timeline and counters, merged
//!   into a [`tare_record::LoadResult`] at the end.
//! - [`cpu`]: CPU seconds of the calling thread (getrusage `RUSAGE_THREAD`).
//! - [`progress`]: per-thread counters a progress line can read without
//!   slowing the workers, and the line itself.
//! - [`connecting`]: how fast a run opens its connections (`--connect-rate`).
//! - [`coalesce`]: batched wake-ups, so an idle worker is not woken for
//!   every single response.
//! - `clock`: one monotonic nanosecond clock for the whole run.
//! - [`schedule`]: intended send times of an open loop (constant, Poisson, ramp).
//! - [`splitmix`]: the workspace's one small seedable generator (SplitMix64),
//!   defined in `tare-record` and re-exported here.
//! - [`units`]: durations (`10s`, `500ms`) and sizes (`4k`) as typed by people.
//! - [`uring`]: an io_uring completion loop (multishot receive into
//!   provided buffers), the hot path where the kernel allows it.
//! - [`netns`]: moving a worker thread into a network namespace (a client
//!   "machine" tare's namespace lab built).
//! - [`limits`]: open files, local ports and the listen backlog: raised,
//!   checked before a run, and connections spread over source addresses.
//! - [`bounds`]: the largest value of every setting a person types, one
//!   definition each for the command line and experiment files.
//! - [`load`]: [`Load`], the settings every engine shares, checked once.
//! - `engine`: the [`Engine`] trait every load engine implements, with
//!   what is the same for all of them as provided methods.
//! - [`workers`]: worker threads started, gated and joined once for every
//!   engine.
//! - [`window`]: the measured window every engine runs (start gate,
//!   ramp, warm-up, measured period, recorder, open-loop schedule and
//!   seed, loopback check, progress line); an engine brings its protocol.
//! - [`find_max`]: the highest open-loop rate meeting an objective, for any
//!   [`Engine`].

// Functions a reader can hold: none over 100 lines (clippy.toml) outside tests.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod bounds;
pub mod child;
mod clock;
pub mod coalesce;
pub mod connecting;
pub mod cpu;
pub mod endpoint;
mod engine;
pub mod find_max;
pub mod limits;
pub mod load;
pub mod netns;
pub mod poller;
pub mod progress;
pub mod rate;
mod recorder;
pub mod schedule;
pub mod units;
pub mod uring;
pub mod window;
pub mod workers;

pub use tare_record::splitmix;

pub use clock::{Clock, RealtimeMap};
pub use coalesce::{Coalesce, Coalescer};
pub use endpoint::Endpoint;
pub use engine::{Engine, HoldsLoad};
pub use load::Load;
pub use poller::{Interest, Poller};
pub use recorder::Recorder;
pub use uring::{IoMode, Ring};
