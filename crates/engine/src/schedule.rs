//! When requests are meant to be sent: the pacing half of an open-loop engine.
//!
//! A closed loop has no schedule: each connection sends its next request the
//! moment the previous one completes, so a slow server slows the generator and
//! hides its own stalls (coordinated omission: wrk issue #485, vegeta #223).
//! An open loop follows a [`Schedule`] of *intended* send times, independent of
//! the server; latency is measured from the intended time (as oha and wrk2 do),
//! so a stall shows up in every request that should have been sent during it.
//!
//! As vegeta's `Pacer`, the schedule is a pure function of the arrival index:
//! no clock inside, so it is tested exactly.

use crate::splitmix::SplitMix64;

/// How inter-arrival gaps are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Arrivals {
    /// Evenly spaced: gap = 1/rate.
    #[default]
    Constant,
    /// A Poisson process: exponential gaps with mean 1/rate (independent users).
    Poisson,
}

impl std::str::FromStr for Arrivals {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "constant" => Ok(Arrivals::Constant),
            "poisson" => Ok(Arrivals::Poisson),
            other => Err(format!(
                "unknown arrivals {other:?}: use constant or poisson"
            )),
        }
    }
}

/// Intended send times for one worker thread, in clock nanoseconds.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// Arrivals per second at full rate (this thread's share).
    rate: f64,
    arrivals: Arrivals,
    /// The rate rises linearly from 0 to `rate` over this long.
    ramp_ns: u64,
    /// Clock reading of the schedule's time zero.
    origin_ns: u64,
    /// Unit-rate time of the next arrival (Poisson accumulates gaps here).
    next_unit: f64,
    index: u64,
    rng: SplitMix64,
}

impl Schedule {
    /// `seed` makes Poisson gaps reproducible (and different per thread).
    pub fn new(rate: f64, arrivals: Arrivals, ramp_ns: u64, origin_ns: u64, seed: u64) -> Self {
        let mut s = Self {
            rate: rate.max(1e-9),
            arrivals,
            ramp_ns,
            origin_ns,
            next_unit: 0.0,
            index: 0,
            rng: SplitMix64::new(seed),
        };
        s.next_unit = s.gap();
        s
    }

    fn gap(&mut self) -> f64 {
        match self.arrivals {
            Arrivals::Constant => 1.0,
            Arrivals::Poisson => {
                // Inverse-CDF of Exp(1); (0,1] avoids ln(0).
                let u = 1.0 - self.rng.next_f64();
                -u.ln()
            }
        }
    }

    /// Maps "arrivals so far" (in units of 1/rate at full rate) to a time:
    /// the inverse of the cumulative arrival count N(t). During a linear ramp
    /// N(t) = rate t^2 / (2T), so t = sqrt(2 T k / rate); after it
    /// N(t) = rate T/2 + rate (t - T).
    fn time_of(&self, k: f64) -> u64 {
        let t_ramp = self.ramp_ns as f64 / 1e9;
        let in_ramp = self.rate * t_ramp / 2.0;
        let secs = if k < in_ramp {
            (2.0 * t_ramp * k / self.rate).sqrt()
        } else {
            t_ramp + (k - in_ramp) / self.rate
        };
        self.origin_ns + (secs * 1e9) as u64
    }

    /// The intended time of the next arrival, without consuming it.
    pub fn peek(&self) -> u64 {
        self.time_of(self.next_unit)
    }

    /// Consumes and returns the next intended send time.
    pub fn take(&mut self) -> u64 {
        let t = self.peek();
        self.index += 1;
        self.next_unit += self.gap();
        t
    }

    /// Arrivals handed out so far.
    pub fn issued(&self) -> u64 {
        self.index
    }

    /// Consumes the arrivals due strictly before `deadline_ns` (while fewer
    /// than `quota` have been issued) and says how many there were: at the
    /// end of a run, the arrivals nothing took, `schedule.unsent`. One due
    /// exactly at the deadline belongs after the measured period: the
    /// engine loop stops there without sending it.
    pub fn drain_before(&mut self, deadline_ns: u64, quota: Option<u64>) -> u64 {
        let mut n = 0;
        while self.peek() < deadline_ns && quota.is_none_or(|q| self.index < q) {
            self.take();
            n += 1;
        }
        n
    }
}

impl Arrivals {
    pub fn name(self) -> &'static str {
        match self {
            Arrivals::Constant => "constant",
            Arrivals::Poisson => "poisson",
        }
    }
}

/// Lets the calling thread's timed waits end when asked: the default 50 us
/// timer slack (prctl(2), `PR_SET_TIMERSLACK`) would make every scheduled
/// send up to 50 us late. Called by each open-loop worker thread, and by one that pauses to batch
/// its wake-ups.
pub fn tighten_timer_slack() {
    // SAFETY: prctl on the calling thread with an integer argument.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
}

/// What a run's pacing did, for the result's `schedule` field: `None` for a
/// plain closed loop (no rate, no ramp).
pub fn report(
    rate: Option<f64>,
    arrivals: Arrivals,
    ramp: std::time::Duration,
    rec: &crate::Recorder,
    duration_ns: u64,
    unsent: u64,
) -> Option<tare_record::ScheduleReport> {
    if rate.is_none() && ramp.is_zero() {
        return None;
    }
    let secs = duration_ns.max(1) as f64 / 1e9;
    let sent = if rate.is_some() {
        rec.sends
    } else {
        rec.requests
    };
    let uncorrected = rec.uncorrected.as_ref();
    Some(tare_record::ScheduleReport {
        target_rate: rate,
        arrivals: rate.map_or(String::new(), |_| arrivals.name().into()),
        achieved_send_rate: sent as f64 / secs,
        latency_uncorrected_us: uncorrected.map(|l| l.summary()),
        hdr_uncorrected: uncorrected
            .and_then(|l| l.encode().ok())
            .unwrap_or_default(),
        late_sends: rec.late_sends,
        mean_lag_us: if sent > 0 {
            rec.lag_sum_ns as f64 / sent as f64 / 1e3
        } else {
            0.0
        },
        max_lag_us: rec.lag_max_ns as f64 / 1e3,
        unsent,
        ramp_s: ramp.as_secs_f64(),
        ramp_timeline: rec.early_timeline(ramp.as_nanos() as u64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_rate_is_evenly_spaced() {
        let mut s = Schedule::new(1000.0, Arrivals::Constant, 0, 5_000, 1);
        let t: Vec<u64> = (0..4).map(|_| s.take()).collect();
        assert_eq!(
            t,
            vec![
                5_000 + 1_000_000,
                5_000 + 2_000_000,
                5_000 + 3_000_000,
                5_000 + 4_000_000
            ]
        );
    }

    #[test]
    fn poisson_mean_gap_is_one_over_rate() {
        let mut s = Schedule::new(10_000.0, Arrivals::Poisson, 0, 0, 42);
        let n = 200_000;
        let mut last = 0;
        for _ in 0..n {
            last = s.take();
        }
        let mean_gap_us = last as f64 / n as f64 / 1e3;
        assert!((mean_gap_us - 100.0).abs() < 1.5, "{mean_gap_us}");
    }

    #[test]
    fn ramp_rises_linearly_then_holds() {
        // 1000/s reached after a 2 s ramp: 1000 arrivals during the ramp,
        // a quarter of them in its first half, then 1000 per second.
        let mut s = Schedule::new(1000.0, Arrivals::Constant, 2_000_000_000, 0, 1);
        let times: Vec<u64> = (0..3000).map(|_| s.take()).collect();
        let before = |ns: u64| times.iter().filter(|t| **t <= ns).count();
        assert!((before(1_000_000_000) as i64 - 250).abs() <= 1);
        assert!((before(2_000_000_000) as i64 - 1000).abs() <= 1);
        assert!((before(3_000_000_000) as i64 - 2000).abs() <= 1);
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn drains_what_is_due_before_the_deadline() {
        // 1000/s: arrivals at 1, 2, 3 ... ms; two taken, then 3..=9 ms are
        // due before a 10 ms deadline (the one at 10 ms is not).
        let mut s = Schedule::new(1000.0, Arrivals::Constant, 0, 0, 1);
        s.take();
        s.take();
        assert_eq!(s.drain_before(10_000_000, None), 7);
        assert_eq!(s.drain_before(10_000_000, None), 0);
        assert_eq!(s.peek(), 10_000_000);
        let mut s = Schedule::new(1000.0, Arrivals::Constant, 0, 0, 1);
        assert_eq!(s.drain_before(10_000_000, Some(4)), 4, "a quota bounds it");
    }

    #[test]
    fn parses_arrivals() {
        assert_eq!("poisson".parse::<Arrivals>(), Ok(Arrivals::Poisson));
        assert!("bursty".parse::<Arrivals>().is_err());
    }
}
