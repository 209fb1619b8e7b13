//! Per-thread measurement: every worker owns a [`Recorder`], touched only by
//! that thread, merged once at the end. Recording a request is a histogram
//! increment and two counter bumps: no allocation, no atomics, no locks.

use std::collections::BTreeMap;

use tare_record::{Errors, Latency};

/// Completions are bucketed at 100 ms, wrk's `RECORD_INTERVAL_MS`, so the
/// per-thread `Req/Sec` distribution matches what wrk prints; the per-second
/// timeline is the sum of ten buckets.
pub const BUCKET_NS: u64 = 100_000_000;

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

    #[inline]
    pub fn status(&mut self, code: u16) {
        if let Some(c) = self.statuses.get_mut(code as usize) {
            *c += 1;
        }
    }

    /// Completions per whole second; a trailing partial second is kept only
    /// if `duration_ns` reaches into it.
    pub fn timeline(&self, duration_ns: u64) -> Vec<u64> {
        let secs = duration_ns.div_ceil(1_000_000_000) as usize;
        let mut out = vec![0u64; secs];
        for (i, n) in self.buckets.iter().enumerate() {
            if let Some(slot) = out.get_mut(i / 10) {
                *slot += n;
            }
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
