//! Numbers as the tools print them: wrk's and h2load's durations with a
//! unit (`505.84us`, `1.78ms`, `1.00s`, `2m`), wrk's byte sizes (`7.42MB`,
//! powers of 1024) and its rates with an SI suffix (`15.79k`).

/// A duration with its unit, in microseconds.
pub(crate) fn duration_us(s: &str) -> Option<f64> {
    let s = s.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = s.split_at(split);
    let v = number(num)?;
    let scale = match unit {
        "ns" => 1e-3,
        "us" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        "m" => 60e6,
        "h" => 3600e6,
        _ => return None,
    };
    finite(v * scale)
}

/// A byte size as wrk prints it (`7.42MB`, `0.00B`): powers of 1024.
pub(crate) fn bytes(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = s.split_at(split);
    let v = number(num)?;
    let exp = ["B", "KB", "MB", "GB", "TB", "PB"]
        .iter()
        .position(|u| *u == unit)?;
    let b = finite(v * 1024f64.powi(exp as i32))?;
    (b < u64::MAX as f64).then_some(b as u64)
}

/// A plain decimal number (no sign, no exponent, no `inf` or `nan`).
pub(crate) fn number(s: &str) -> Option<f64> {
    let s = s.trim();
    let ok = !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || c == '.');
    ok.then(|| s.parse::<f64>().ok()).flatten().and_then(finite)
}

/// A whole count.
pub(crate) fn count(s: &str) -> Option<u64> {
    let s = s.trim();
    (!s.is_empty() && s.chars().all(|c| c.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_sizes_and_rates_read_as_the_tools_print_them() {
        assert_eq!(duration_us("505.84us"), Some(505.84));
        assert_eq!(duration_us("1.78ms"), Some(1780.0));
        assert_eq!(duration_us("1.00s"), Some(1e6));
        assert_eq!(duration_us("2m"), Some(120e6));
        assert_eq!(duration_us("45us"), Some(45.0));
        assert_eq!(duration_us("-nan%"), None);
        assert_eq!(bytes("7.42MB"), Some((7.42 * 1024.0 * 1024.0) as u64));
        assert_eq!(bytes("0.00B"), Some(0));
        assert_eq!(number("1e9"), None);
        assert_eq!(count("12a"), None);
    }
}
