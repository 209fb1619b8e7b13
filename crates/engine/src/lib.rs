//! The engine loop every load generator shares: the parts of `tare http` and
//! `tare pg` that are not protocol.
//!
//! - [`poller`]: a thin level-triggered epoll wrapper (one per worker thread).
//! - [`endpoint`]: where load goes (TCP or Unix socket) and non-blocking connect.
//! - [`recorder`]: per-thread latency histogram, timeline and counters, merged
//!   into a [`tare_record::LoadResult`] at the end.
//! - [`cpu`]: CPU seconds of the calling thread (getrusage `RUSAGE_THREAD`).
//! - [`progress`]: per-thread counters a progress line can read without
//!   slowing the workers, and the line itself.
//! - [`clock`]: one monotonic nanosecond clock for the whole run.
//! - [`schedule`]: intended send times of an open loop (constant, Poisson, ramp).
//! - [`units`]: durations (`10s`, `500ms`) and sizes (`4k`) as typed by people.
//! - [`netns`]: moving a worker thread into a network namespace (`lab-client`).

pub mod clock;
pub mod cpu;
pub mod endpoint;
pub mod netns;
pub mod poller;
pub mod progress;
pub mod rate;
pub mod recorder;
pub mod schedule;
pub mod units;

pub use clock::Clock;
pub use endpoint::Endpoint;
pub use poller::{Interest, Poller};
pub use recorder::Recorder;
