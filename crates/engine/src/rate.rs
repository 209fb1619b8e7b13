//! Mean, stdev, max and share within one stdev of a set of samples, as wrk's
//! "Thread Stats" columns print them.

use tare_record::RateSummary;

pub fn summarize(samples: &[f64]) -> RateSummary {
    if samples.is_empty() {
        return RateSummary::default();
    }
    let n = samples.len() as f64;
    let mean = samples.iter().sum::<f64>() / n;
    let var = if samples.len() > 1 {
        samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    let stdev = var.sqrt();
    let max = samples.iter().cloned().fold(f64::MIN, f64::max);
    let within = samples
        .iter()
        .filter(|x| (**x - mean).abs() <= stdev)
        .count() as f64
        / n
        * 100.0;
    RateSummary {
        mean,
        stdev,
        max,
        within_stdev_pct: within,
    }
}
