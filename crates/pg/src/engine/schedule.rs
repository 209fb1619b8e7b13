//! When may a client start its next transaction? The engine loop asks a
//! [`Schedule`] before every transaction, so an open-loop pacer (a constant
//! rate, as vegeta's `Pacer`) plugs into the same loop as pgbench's closed
//! loop, with no second copy of the engine.

/// Decides start times. One instance per worker thread.
pub trait Schedule: Send {
    /// `None`: start now, measuring latency from the actual start (closed
    /// loop). `Some(t)`: start at clock reading `t` (the client sleeps until
    /// then if `t` is ahead) and measure latency from `t`, the intended start,
    /// so a late start is charged to the server (no coordinated omission).
    fn next_start(&mut self, client: usize, now_ns: u64) -> Option<u64>;
}

/// pgbench's closed loop: each client starts its next transaction as soon
/// as the previous one ends.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClosedLoop;

impl Schedule for ClosedLoop {
    #[inline]
    fn next_start(&mut self, _client: usize, _now_ns: u64) -> Option<u64> {
        None
    }
}

/// An open loop at a fixed total rate: each thread draws intended start
/// times from its share of the arrivals (constant or Poisson, as pgbench's
/// `-R` schedules them), and an idle client takes the next one. A client
/// free only after its intended time starts at once, with latency counted
/// from the intended time: the schedule lag is the server's.
pub struct Paced(pub tare_engine::schedule::Schedule);

impl Schedule for Paced {
    #[inline]
    fn next_start(&mut self, _client: usize, _now_ns: u64) -> Option<u64> {
        Some(self.0.take())
    }
}
