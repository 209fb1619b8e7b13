//! Batched wake-ups: a closed-loop worker that would otherwise be woken for
//! almost every response pauses briefly before it waits, so that one wake-up
//! serves several responses.
//!
//! Why: against nginx on loopback (one worker on the other core, 50
//! connections, 29k req/s) a tare worker made 0.74 `epoll_pwait2` calls and
//! 0.26 context switches per request (`perf stat`): the server hands out
//! responses one at a time, and each one woke the generator. Pausing ~100 µs
//! before waiting cut context switches per request sevenfold. What that saves
//! depends on the machine: CPU per request fell from 13.0–14.9 µs to
//! 10.1–10.8 µs while other jobs loaded the host, and not at all (12.2 µs
//! both) on a quiet one, where the kernel's TCP path is nearly all the cost.
//!
//! What it costs, bounded: a response that arrives during a pause waits for
//! the pause to end before its connection sends again (think time). The
//! automatic pause is at most [`AUTO_DIVISOR`]th of the recent mean latency,
//! so a connection idles on average at most half that, ~1.6% of its cycle.
//! When the server is saturated that costs no throughput (its queue never
//! drains); when latency is mostly a fixed delay it costs at most that
//! fraction, the same fraction in every cell of an experiment. Latency itself
//! stays exact: completion times are the kernel's receive timestamps
//! ([`crate::endpoint::Socket::read_stamped`]), not the time a worker woke.
//!
//! A worker that is busy (its last wait returned a batch) or has few requests
//! in flight never pauses, and an open loop never does: its sends keep their
//! schedule.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use tare_record::WakeupReport;

/// The automatic pause is the mean latency divided by this.
pub(crate) const AUTO_DIVISOR: f64 = 32.0;
/// A wait that returned this many events or more means the worker is busy.
const BUSY_BATCH: usize = 4;
/// With fewer requests in flight there is nothing to batch.
const MIN_IN_FLIGHT: usize = 8;
/// No pause is ever longer than this.
const MAX_PAUSE_NS: u64 = 1_000_000;
/// Weight of one observation in the running means.
const LATENCY_WEIGHT: f64 = 1.0 / 64.0;
const OVERSHOOT_WEIGHT: f64 = 1.0 / 8.0;
/// A first guess at how much longer than asked a short sleep takes (timer
/// interrupt and wake-up; ~40 µs measured on a 2-core VM).
const INITIAL_OVERSHOOT_NS: f64 = 50_000.0;

/// `--coalesce`: `off` (the default: wrk's behaviour, no think time),
/// `auto`, or a fixed pause such as `100us`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Coalesce {
    Auto,
    #[default]
    Off,
    Fixed(Duration),
}

impl FromStr for Coalesce {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "auto" => Ok(Coalesce::Auto),
            "off" | "0" => Ok(Coalesce::Off),
            other => {
                let d = crate::units::parse_duration(other).map_err(|e| {
                    format!(
                        "invalid --coalesce {other:?}: auto, off or a pause such as 100us ({e})"
                    )
                })?;
                if d.as_nanos() as u64 > MAX_PAUSE_NS {
                    return Err(format!(
                        "invalid --coalesce {other:?}: a pause longer than 1ms would starve the connections"
                    ));
                }
                Ok(Coalesce::Fixed(d))
            }
        }
    }
}

impl fmt::Display for Coalesce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Coalesce::Auto => f.write_str("auto"),
            Coalesce::Off => f.write_str("off"),
            Coalesce::Fixed(d) => write!(f, "{}us", d.as_micros()),
        }
    }
}

/// One worker's pause policy and its counts.
#[derive(Debug)]
pub struct Coalescer {
    mode: Coalesce,
    latency_ns: f64,
    overshoot_ns: f64,
    waits: u64,
    pauses: u64,
    paused_ns: u64,
}

impl Coalescer {
    pub fn new(mode: Coalesce) -> Self {
        Self {
            mode,
            latency_ns: 0.0,
            overshoot_ns: INITIAL_OVERSHOOT_NS,
            waits: 0,
            pauses: 0,
            paused_ns: 0,
        }
    }

    /// The policy a worker runs with: `mode` in a closed loop over TCP,
    /// off otherwise. An open loop keeps its schedule; without receive
    /// timestamps (a Unix socket has none) a pause would show up as
    /// latency. Stamps are asked for only when pausing: `recvmsg` and its
    /// control message cost ~1.5% of a loopback request.
    pub fn for_worker(mode: Coalesce, endpoint: &crate::Endpoint, open_loop: bool) -> Self {
        let tcp = matches!(endpoint, crate::Endpoint::Tcp(_));
        Self::new(if tcp && !open_loop {
            mode
        } else {
            Coalesce::Off
        })
    }

    pub fn enabled(&self) -> bool {
        self.mode != Coalesce::Off
    }

    /// Feeds one completed request's latency into the automatic pause.
    #[inline]
    pub fn observe(&mut self, latency_ns: u64) {
        if self.latency_ns == 0.0 {
            self.latency_ns = latency_ns as f64;
        } else {
            self.latency_ns += (latency_ns as f64 - self.latency_ns) * LATENCY_WEIGHT;
        }
    }

    /// How long to pause before the next wait, given the size of the last
    /// batch, the requests in flight and the time left before the worker
    /// must be awake anyway; `None` means wait at once.
    pub(crate) fn pause_for(
        &self,
        last_batch: usize,
        in_flight: usize,
        budget_ns: u64,
    ) -> Option<Duration> {
        if last_batch >= BUSY_BATCH || in_flight < MIN_IN_FLIGHT {
            return None;
        }
        let ask_ns = match self.mode {
            Coalesce::Off => return None,
            Coalesce::Fixed(d) => d.as_nanos() as u64,
            Coalesce::Auto => {
                // Aim the pause *as slept* at latency / AUTO_DIVISOR: the
                // timer's own overshoot counts against it.
                let target = (self.latency_ns / AUTO_DIVISOR).min(MAX_PAUSE_NS as f64);
                let ask = target - self.overshoot_ns;
                if ask < 1_000.0 {
                    return None;
                }
                ask as u64
            }
        };
        (ask_ns < budget_ns).then(|| Duration::from_nanos(ask_ns))
    }

    /// Pauses if [`Coalescer::pause_for`] says so, and counts the wait that
    /// follows. Returns whether it paused (a caller's clock reading is then
    /// stale).
    pub fn before_wait(
        &mut self,
        last_batch: usize,
        in_flight: usize,
        budget_ns: u64,
        measuring: bool,
    ) -> bool {
        let pause = self.pause_for(last_batch, in_flight, budget_ns);
        if let Some(ask) = pause {
            let t = Instant::now();
            std::thread::sleep(ask);
            let slept = t.elapsed().as_nanos() as u64;
            let over = slept.saturating_sub(ask.as_nanos() as u64) as f64;
            self.overshoot_ns += (over - self.overshoot_ns) * OVERSHOOT_WEIGHT;
            if measuring {
                self.pauses += 1;
                self.paused_ns += slept;
            }
        }
        if measuring {
            self.waits += 1;
        }
        pause.is_some()
    }

    pub fn report(&self, rx_timestamps: bool) -> WakeupReport {
        WakeupReport {
            coalesce: self.mode.to_string(),
            io: String::new(),
            waits: self.waits,
            pauses: self.pauses,
            mean_pause_us: if self.pauses == 0 {
                0.0
            } else {
                self.paused_ns as f64 / self.pauses as f64 / 1e3
            },
            rx_timestamps,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warmed(mode: Coalesce, latency_us: u64) -> Coalescer {
        let mut c = Coalescer::new(mode);
        for _ in 0..1000 {
            c.observe(latency_us * 1000);
        }
        c
    }

    #[test]
    fn parses_modes_and_rejects_long_pauses() {
        assert_eq!("auto".parse::<Coalesce>(), Ok(Coalesce::Auto));
        assert_eq!("off".parse::<Coalesce>(), Ok(Coalesce::Off));
        assert_eq!(
            "100us".parse::<Coalesce>(),
            Ok(Coalesce::Fixed(Duration::from_micros(100)))
        );
        assert!("5ms"
            .parse::<Coalesce>()
            .unwrap_err()
            .contains("longer than 1ms"));
        assert!("soon".parse::<Coalesce>().is_err());
        assert_eq!(
            Coalesce::Fixed(Duration::from_micros(100)).to_string(),
            "100us"
        );
    }

    #[test]
    fn auto_pause_is_a_fraction_of_latency_net_of_timer_overshoot() {
        let c = warmed(Coalesce::Auto, 3200);
        // 3.2 ms / 32 = 100 us as slept, minus the 50 us first-guess overshoot.
        assert_eq!(
            c.pause_for(1, 50, u64::MAX),
            Some(Duration::from_micros(50))
        );
    }

    #[test]
    fn never_pauses_when_busy_idle_short_or_off() {
        let c = warmed(Coalesce::Auto, 3200);
        assert_eq!(c.pause_for(BUSY_BATCH, 50, u64::MAX), None, "busy");
        assert_eq!(
            c.pause_for(1, MIN_IN_FLIGHT - 1, u64::MAX),
            None,
            "few in flight"
        );
        assert_eq!(c.pause_for(1, 50, 10_000), None, "a deadline comes first");
        // 1 ms / 32 = 31 us: shorter than the timer's overshoot.
        assert_eq!(
            warmed(Coalesce::Auto, 1000).pause_for(1, 50, u64::MAX),
            None
        );
        assert_eq!(warmed(Coalesce::Off, 3200).pause_for(1, 50, u64::MAX), None);
        assert_eq!(
            Coalescer::new(Coalesce::Auto).pause_for(1, 50, u64::MAX),
            None,
            "no latency yet"
        );
    }

    #[test]
    fn auto_pause_is_capped() {
        let c = warmed(Coalesce::Auto, 1_000_000);
        assert_eq!(
            c.pause_for(1, 50, u64::MAX),
            Some(Duration::from_nanos(
                MAX_PAUSE_NS - INITIAL_OVERSHOOT_NS as u64
            ))
        );
    }

    #[test]
    fn counts_waits_and_pauses_only_while_measuring() {
        let mut c = Coalescer::new(Coalesce::Fixed(Duration::from_micros(20)));
        c.before_wait(1, 50, u64::MAX, false);
        c.before_wait(1, 50, u64::MAX, true);
        c.before_wait(10, 50, u64::MAX, true);
        let r = c.report(true);
        assert_eq!((r.waits, r.pauses), (2, 1));
        assert!(r.mean_pause_us >= 20.0, "{r:?}");
        assert_eq!(r.coalesce, "20us");
    }
}
