//! Latency histograms: recorded in nanoseconds, summarised in microseconds.
//!
//! Every engine thread records into its own [`Latency`]; they are merged at the
//! end (HDR histograms add exactly, so percentiles of the whole run are true
//! percentiles, never averages of per-thread ones). The serialized form is the
//! HdrHistogram V2 + DEFLATE encoding, base64, the same bytes Java/Go/C
//! HdrHistogram tools read (as latte stores them in its JSON).

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest trackable latency: one hour, in nanoseconds. Anything slower is
/// clamped (and a one-hour response is a timeout long before that).
const HIGHEST_NS: u64 = 3_600_000_000_000;
/// Three significant digits: 0.1% resolution at every magnitude, ~1.5 MB less
/// than 4 digits per thread and still finer than any clock jitter we observe.
const SIGFIG: u8 = 3;

/// A latency histogram in nanoseconds.
#[derive(Clone, Debug)]
pub struct Latency {
    hist: Histogram<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("histogram is not valid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("histogram bytes do not decode: {0:?}")]
    Decode(hdrhistogram::serialization::DeserializeError),
    #[error("histogram does not serialize: {0:?}")]
    Encode(hdrhistogram::serialization::V2DeflateSerializeError),
}

impl Default for Latency {
    fn default() -> Self {
        Self::new()
    }
}

impl Latency {
    pub fn new() -> Self {
        let hist = Histogram::new_with_bounds(1, HIGHEST_NS, SIGFIG)
            .expect("static histogram bounds are valid");
        Self { hist }
    }

    /// Two significant digits (1% resolution), 36 KB instead of 260: for
    /// a request mix's histogram per name, of which a run may keep a
    /// thousand per thread (`tare_http::mix::MAX_REQUESTS`).
    pub fn coarse() -> Self {
        let hist = Histogram::new_with_bounds(1, HIGHEST_NS, 2)
            .expect("static histogram bounds are valid");
        Self { hist }
    }

    /// Records one value; values beyond the range are clamped, never dropped,
    /// so the count always equals the number of completed requests.
    #[inline]
    pub fn record_ns(&mut self, ns: u64) {
        self.hist.saturating_record(ns.max(1));
    }

    /// Records `n` values of `ns` at once (a bucket of another tool's
    /// histogram), clamped as [`Latency::record_ns`] clamps.
    #[inline]
    pub fn record_ns_n(&mut self, ns: u64, n: u64) {
        self.hist.saturating_record_n(ns.max(1), n);
    }

    pub fn merge(&mut self, other: &Latency) {
        // Same bounds on both sides, so `add` cannot fail.
        self.hist.add(&other.hist).ok();
    }

    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    /// The underlying histogram, for readers that want more than the summary.
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// Value at quantile `q` (0..=1) in microseconds.
    pub fn quantile_us(&self, q: f64) -> f64 {
        if self.hist.is_empty() {
            return 0.0;
        }
        self.hist.value_at_quantile(q) as f64 / 1e3
    }

    pub fn summary(&self) -> LatencySummary {
        if self.hist.is_empty() {
            return LatencySummary::default();
        }
        let us = |v: u64| v as f64 / 1e3;
        LatencySummary {
            min: us(self.hist.min()),
            mean: self.hist.mean() / 1e3,
            stdev: self.hist.stdev() / 1e3,
            max: us(self.hist.max()),
            p50: self.quantile_us(0.50),
            p75: self.quantile_us(0.75),
            p90: self.quantile_us(0.90),
            p99: self.quantile_us(0.99),
            p999: self.quantile_us(0.999),
            p9999: self.quantile_us(0.9999),
        }
    }

    /// Base64 of the V2 + DEFLATE serialization.
    pub fn encode(&self) -> Result<String, CodecError> {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.hist, &mut bytes)
            .map_err(CodecError::Encode)?;
        Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub fn decode(text: &str) -> Result<Self, CodecError> {
        let bytes = base64::engine::general_purpose::STANDARD.decode(text.trim())?;
        let hist: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(CodecError::Decode)?;
        // Re-home into our bounds so merges with fresh histograms never fail.
        let mut out = Latency::new();
        out.hist.add(&hist).map_err(|_| {
            CodecError::Decode(hdrhistogram::serialization::DeserializeError::UsizeTypeTooSmall)
        })?;
        Ok(out)
    }
}

/// Latency distribution summary in microseconds (the `latency_us` object).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub min: f64,
    pub mean: f64,
    pub stdev: f64,
    pub max: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub p9999: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_base64() {
        let mut l = Latency::new();
        for v in [1_000, 20_000, 20_500, 3_000_000, 9_000_000_000] {
            l.record_ns(v);
        }
        let back = Latency::decode(&l.encode().unwrap()).unwrap();
        assert_eq!(back.count(), 5);
        assert_eq!(back.summary(), l.summary());
    }

    #[test]
    fn merge_adds_counts_exactly() {
        let mut a = Latency::new();
        let mut b = Latency::new();
        (0..1000).for_each(|i| a.record_ns(10_000 + i));
        (0..500).for_each(|i| b.record_ns(90_000 + i));
        a.merge(&b);
        assert_eq!(a.count(), 1500);
        let s = a.summary();
        assert!(s.p50 > 10.0 && s.p50 < 11.1, "{s:?}");
        assert!(s.p99 > 90.0 && s.p99 < 90.6, "{s:?}");
    }

    #[test]
    fn zero_and_huge_values_are_clamped_not_lost() {
        let mut l = Latency::new();
        l.record_ns(0);
        l.record_ns(u64::MAX);
        assert_eq!(l.count(), 2);
        l.record_ns_n(0, 3);
        l.record_ns_n(u64::MAX, 4);
        assert_eq!(l.count(), 9);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(Latency::decode("not base64!!").is_err());
        assert!(Latency::decode("AAAA").is_err());
    }
}
