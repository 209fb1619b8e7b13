//! Per-thread measurement: every worker owns a [`Recorder`], touched only by
//! that thread, merged once at the end. Recording a request is a histogram
//! increment and two counter bumps: no allocation, no atomics, no locks.

use std::collections::BTreeMap;

use tare_record::{Errors, Latency};

/// A send more than 1 ms behind its schedule is late: below that, timer and
/// scheduler jitter, above it, a generator that cannot keep up.
pub(crate) const LATE_NS: u64 = 1_000_000;

/// Completions are bucketed at 100 ms, wrk's `RECORD_INTERVAL_MS`, so the
/// per-thread `Req/Sec` distribution matches what wrk prints; the per-second
/// timeline is the sum of ten buckets.
pub(crate) const BUCKET_NS: u64 = 100_000_000;

pub struct Recorder {
    /// Request-to-complete-response latency.
    pub latency: Latency,
    /// Connection set-up time (connection-per-request only).
    pub connect: Option<Latency>,
    /// Request sent to first response byte (connection-per-request only).
    pub first_byte: Option<Latency>,
    pub requests: u64,
    pub errors: Errors,
    pub bytes_read: u64,
    /// Requests outstanding when the run stopped.
    pub in_flight: u64,
    /// Open loop: latency from the actual send time, beside the corrected
    /// latency (from the intended send time) kept in `latency`.
    pub uncorrected: Option<Latency>,
    /// Open loop: sends that left more than `LATE_NS` after their intended time.
    pub late_sends: u64,
    /// Open loop: sum and maximum of send lag (actual minus intended), ns.
    pub lag_sum_ns: u64,
    pub lag_max_ns: u64,
    /// Open loop: requests sent during measurement.
    pub sends: u64,
    /// Completions per second before measurement began (the ramp and warm-up).
    pre: Vec<u64>,
    /// Completions per 100 ms bucket since `start_ns`.
    buckets: Vec<u64>,
    start_ns: u64,
    /// Completed responses by HTTP status (index = status, 0..600).
    statuses: Vec<u64>,
}

impl Recorder {
    /// `start_ns`: the clock reading at which measurement begins;
    /// `expected_ns`: the planned duration, to size the timeline up front.
    pub fn new(start_ns: u64, expected_ns: u64, connect_timing: bool) -> Self {
        let buckets = (expected_ns / BUCKET_NS + 2) as usize;
        Self {
            latency: Latency::new(),
            connect: connect_timing.then(Latency::new),
            first_byte: connect_timing.then(Latency::new),
            requests: 0,
            errors: Errors::default(),
            bytes_read: 0,
            in_flight: 0,
            uncorrected: None,
            late_sends: 0,
            lag_sum_ns: 0,
            lag_max_ns: 0,
            sends: 0,
            pre: Vec::new(),
            buckets: Vec::with_capacity(buckets.min(1 << 20)),
            start_ns,
            statuses: vec![0; 600],
        }
    }

    /// One completed request, finished at `end_ns`, that took `latency_ns`.
    #[inline]
    pub fn complete(&mut self, end_ns: u64, latency_ns: u64) {
        self.requests += 1;
        self.latency.record_ns(latency_ns);
        let b = (end_ns.saturating_sub(self.start_ns) / BUCKET_NS) as usize;
        if b >= self.buckets.len() {
            self.buckets.resize(b + 1, 0);
        }
        self.buckets[b] += 1;
    }

    /// A completion before measurement began: counted per second for the
    /// ramp timeline, not recorded.
    #[inline]
    pub fn complete_early(&mut self, end_ns: u64) {
        let s = (end_ns / 1_000_000_000) as usize;
        if s >= self.pre.len() {
            self.pre.resize(s + 1, 0);
        }
        self.pre[s] += 1;
    }

    /// Open loop: a request sent at `sent_ns`, intended for `intended_ns`.
    #[inline]
    pub fn lag(&mut self, intended_ns: u64, sent_ns: u64) {
        self.sends += 1;
        let lag = sent_ns.saturating_sub(intended_ns);
        if lag > LATE_NS {
            self.late_sends += 1;
        }
        self.lag_sum_ns += lag;
        self.lag_max_ns = self.lag_max_ns.max(lag);
    }

    /// Completions per second from the start of the run to `until_ns`
    /// (the ramp, shown in the timeline but excluded from the summary).
    pub(crate) fn early_timeline(&self, until_ns: u64) -> Vec<u64> {
        let secs = until_ns.div_ceil(1_000_000_000) as usize;
        (0..secs)
            .map(|i| self.pre.get(i).copied().unwrap_or(0))
            .collect()
    }

    #[inline]
    pub fn status(&mut self, code: u16) {
        if let Some(c) = self.statuses.get_mut(code as usize) {
            *c += 1;
        }
    }

    /// Completions per second of the measured period: `round(duration)`
    /// seconds (at least one), completions in a trailing sliver past the last
    /// whole second folded into it, so a 10 s run has 10 entries even when
    /// the deadline is observed a fraction of a millisecond late.
    pub fn timeline(&self, duration_ns: u64) -> Vec<u64> {
        let secs = ((duration_ns + 500_000_000) / 1_000_000_000).max(1) as usize;
        let mut out = vec![0u64; secs];
        for (i, n) in self.buckets.iter().enumerate() {
            out[(i / 10).min(secs - 1)] += n;
        }
        out
    }

    /// Per-100 ms request rates (requests/second) over the measured buckets,
    /// wrk's per-thread `Req/Sec` samples.
    pub fn rate_samples(&self, duration_ns: u64) -> Vec<f64> {
        let whole = (duration_ns / BUCKET_NS) as usize;
        (0..whole)
            .map(|i| self.buckets.get(i).copied().unwrap_or(0) as f64 * 10.0)
            .collect()
    }

    pub fn status_codes(&self) -> BTreeMap<String, u64> {
        self.statuses
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(code, n)| (code.to_string(), *n))
            .collect()
    }

    /// Folds another thread's recorder into this one. Timelines are aligned
    /// because all threads share the same `start_ns`.
    pub fn merge(&mut self, o: &Recorder) {
        self.latency.merge(&o.latency);
        if let (Some(a), Some(b)) = (self.connect.as_mut(), o.connect.as_ref()) {
            a.merge(b);
        }
        if let (Some(a), Some(b)) = (self.first_byte.as_mut(), o.first_byte.as_ref()) {
            a.merge(b);
        }
        self.requests += o.requests;
        self.errors.add(&o.errors);
        self.bytes_read += o.bytes_read;
        self.in_flight += o.in_flight;
        if let (Some(a), Some(b)) = (self.uncorrected.as_mut(), o.uncorrected.as_ref()) {
            a.merge(b);
        }
        self.late_sends += o.late_sends;
        self.lag_sum_ns += o.lag_sum_ns;
        self.lag_max_ns = self.lag_max_ns.max(o.lag_max_ns);
        self.sends += o.sends;
        if o.pre.len() > self.pre.len() {
            self.pre.resize(o.pre.len(), 0);
        }
        for (a, b) in self.pre.iter_mut().zip(&o.pre) {
            *a += b;
        }
        if o.buckets.len() > self.buckets.len() {
            self.buckets.resize(o.buckets.len(), 0);
        }
        for (a, b) in self.buckets.iter_mut().zip(&o.buckets) {
            *a += b;
        }
        for (a, b) in self.statuses.iter_mut().zip(&o.statuses) {
            *a += b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeline_counts_each_second() {
        let mut r = Recorder::new(1_000, 3_000_000_000, false);
        r.complete(1_000 + 10, 5);
        r.complete(1_000 + 999_999_999, 5);
        r.complete(1_000 + 1_000_000_000, 5);
        r.complete(1_000 + 2_500_000_000, 5);
        assert_eq!(r.timeline(3_000_000_000), vec![2, 1, 1]);
        // A deadline observed slightly late does not add a near-empty second.
        assert_eq!(r.timeline(3_000_400_000), vec![2, 1, 1]);
        assert_eq!(r.timeline(2_400_000_000), vec![2, 2]);
        assert_eq!(r.requests, 4);
    }

    #[test]
    fn merge_aligns_timelines() {
        let mut a = Recorder::new(0, 2_000_000_000, false);
        let mut b = Recorder::new(0, 2_000_000_000, false);
        a.complete(100, 1);
        b.complete(1_500_000_000, 1);
        b.status(200);
        a.merge(&b);
        assert_eq!(a.timeline(2_000_000_000), vec![1, 1]);
        assert_eq!(a.status_codes().get("200"), Some(&1));
    }

    #[test]
    fn rate_summary_matches_hand_computation() {
        let s = crate::rate::summarize(&[10.0, 20.0, 30.0]);
        assert_eq!(s.mean, 20.0);
        assert_eq!(s.stdev, 10.0);
        assert_eq!(s.max, 30.0);
        assert!((s.within_stdev_pct - 100.0).abs() < 1e-9);
    }
}
