//! When may a client start its next transaction? The engine loop asks a
//! [`Schedule`] before every transaction, so an open-loop pacer (a constant
//! rate, as vegeta's `Pacer`) and a ramp plug into the same loop as
//! pgbench's closed loop, with no second copy of the engine. The arrival
//! times themselves come from the engine-wide [`tare_engine::schedule`].

/// Decides start times. One instance per worker thread.
pub(crate) trait Schedule: Send {
    /// `None`: start now, measuring latency from the actual start (closed
    /// loop). `Some(t)`: start at clock reading `t` (the client sleeps until
    /// then if `t` is ahead) and measure latency from `t`, the intended start,
    /// so a late start is charged to the server (no coordinated omission).
    fn next_start(&mut self, client: usize, now_ns: u64) -> Option<u64>;

    /// Arrivals due before `deadline_ns` that no client took (all were
    /// busy): the result's `schedule.unsent`. Consumes them. A closed loop
    /// has none.
    fn unsent(&mut self, _deadline_ns: u64) -> u64 {
        0
    }
}

/// pgbench's closed loop: each client starts its next transaction as soon
/// as the previous one ends. With a ramp, client k of `clients` starts its
/// first transaction at `origin + ramp k / clients` (JMeter's thread-group
/// ramp-up), so the load rises linearly to `-c` clients.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ClosedLoop {
    pub origin_ns: u64,
    pub ramp_ns: u64,
    /// All clients of the run (client ids are global, 0..clients).
    pub clients: usize,
}

impl ClosedLoop {
    /// When client `id` joins the load.
    fn joins_at(&self, id: usize) -> u64 {
        let offset = self.ramp_ns as u128 * id as u128 / self.clients.max(1) as u128;
        self.origin_ns + offset as u64
    }
}

impl Schedule for ClosedLoop {
    #[inline]
    fn next_start(&mut self, client: usize, now_ns: u64) -> Option<u64> {
        if self.ramp_ns == 0 {
            return None;
        }
        let at = self.joins_at(client);
        (at > now_ns).then_some(at)
    }
}

/// An open loop at a fixed total rate (rising linearly over a ramp): each
/// thread draws intended start times from its share of the arrivals
/// (constant or Poisson, as pgbench's `-R` schedules them), and an idle
/// client takes the next one. A client free only after its intended time
/// starts at once, with latency counted from the intended time: the
/// schedule lag is the server's.
pub(crate) struct Paced(pub tare_engine::schedule::Schedule);

impl Schedule for Paced {
    #[inline]
    fn next_start(&mut self, _client: usize, _now_ns: u64) -> Option<u64> {
        Some(self.0.take())
    }

    fn unsent(&mut self, deadline_ns: u64) -> u64 {
        self.0.drain_before(deadline_ns, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tare_engine::schedule::Arrivals;

    #[test]
    fn closed_loop_ramp_staggers_first_starts_evenly() {
        let mut s = ClosedLoop {
            origin_ns: 1_000,
            ramp_ns: 4_000,
            clients: 4,
        };
        let at: Vec<Option<u64>> = (0..4).map(|c| s.next_start(c, 1_000)).collect();
        assert_eq!(at, vec![None, Some(2_000), Some(3_000), Some(4_000)]);
        // Once a client's time has come, it runs back to back.
        assert_eq!(s.next_start(3, 4_000), None);
        assert_eq!(ClosedLoop::default().next_start(7, 0), None);
    }

    #[test]
    fn paced_counts_arrivals_left_at_the_deadline() {
        // 1000/s from 0: arrivals at 1, 2, 3 ... ms.
        let mut s = Paced(tare_engine::schedule::Schedule::new(
            1000.0,
            Arrivals::Constant,
            0,
            0,
            1,
        ));
        assert_eq!(s.next_start(0, 0), Some(1_000_000));
        assert_eq!(s.next_start(1, 0), Some(2_000_000));
        // Due before 10 ms and never taken: arrivals 3..=9.
        assert_eq!(s.unsent(10_000_000), 7);
        assert_eq!(s.unsent(10_000_000), 0);
    }
}
