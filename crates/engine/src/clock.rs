//! A monotonic clock in nanoseconds since the run's origin.
//!
//! `Instant::now()` is `clock_gettime(CLOCK_MONOTONIC)` through the vDSO: no
//! syscall, ~20 ns. Engines read it once per completed request: the completion
//! time of one request is also the send time of the next on that connection.

use std::time::{Instant, SystemTime};

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
    pub(crate) fn ns_of(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.origin).as_nanos() as u64
    }

    /// `CLOCK_MONOTONIC` nanoseconds at the origin (within a clock read),
    /// for kernel interfaces that take absolute monotonic times.
    pub(crate) fn monotonic_origin_ns(&self) -> u64 {
        crate::uring::monotonic_ns().saturating_sub(self.now_ns())
    }
}

/// Maps kernel receive timestamps (`CLOCK_REALTIME`) onto a [`Clock`].
///
/// The offset between the two clocks is sampled when made and again on every
/// [`RealtimeMap::refresh`] (workers do it on their 10 ms scan), so a clock
/// step or NTP slew moves the mapping by at most one scan's worth.
#[derive(Clone, Copy, Debug)]
pub struct RealtimeMap {
    /// Realtime nanoseconds at the clock's origin.
    offset_ns: i128,
}

impl RealtimeMap {
    pub fn new(clock: &Clock) -> Self {
        let mut m = Self { offset_ns: 0 };
        m.refresh(clock);
        m
    }

    pub fn refresh(&mut self, clock: &Clock) {
        let mono = clock.now_ns() as i128;
        let real = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        self.offset_ns = real - mono;
    }

    /// The clock reading of a realtime stamp (0 before the origin).
    #[inline]
    pub fn to_clock_ns(&self, realtime_ns: u64) -> u64 {
        (realtime_ns as i128 - self.offset_ns).max(0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn realtime_now_maps_to_clock_now() {
        let clock = Clock::new(Instant::now());
        std::thread::sleep(std::time::Duration::from_millis(2));
        let map = RealtimeMap::new(&clock);
        let real = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        let mapped = map.to_clock_ns(real);
        let now = clock.now_ns();
        assert!(
            mapped <= now + 1_000_000 && mapped + 1_000_000 >= now,
            "{mapped} vs {now}"
        );
        assert_eq!(map.to_clock_ns(0), 0);
    }
}
