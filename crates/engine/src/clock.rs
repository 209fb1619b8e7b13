//! A monotonic clock in nanoseconds since the run's origin.
//!
//! `Instant::now()` is `clock_gettime(CLOCK_MONOTONIC)` through the vDSO: no
//! syscall, ~20 ns. Engines read it once per completed request: the completion
//! time of one request is also the send time of the next on that connection.

use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug)]
pub struct Clock {
    origin: Instant,
}

impl Clock {
    pub fn new(origin: Instant) -> Self {
        Self { origin }
    }

    pub fn origin(&self) -> Instant {
        self.origin
    }

    /// Nanoseconds since the origin (0 for instants before it).
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.ns_of(Instant::now())
    }

    #[inline]
    pub fn ns_of(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.origin).as_nanos() as u64
    }

    pub fn instant_of(&self, ns: u64) -> Instant {
        self.origin + Duration::from_nanos(ns)
    }
}
