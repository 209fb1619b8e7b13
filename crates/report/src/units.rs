//! How numbers look in text reports: three significant digits with an SI
//! suffix for rates (`9.91k`, as wrk and benchstat print), the largest
//! fitting unit for latencies (`412µs`, `22.6ms`), signed percentages for
//! changes. Three digits because the intervals are rarely tighter than 0.1%.

/// A rate or count: `512`, `9.91k`, `27.1k`, `185k`, `1.20M`.
pub(crate) fn si(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    let (scaled, suffix) = if a >= 999.5e3 {
        (v / 1e6, "M")
    } else if a >= 999.5 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    format!("{}{suffix}", three_digits(scaled))
}

/// A signed rate difference: `+17.2k`, `-310`.
pub(crate) fn si_signed(v: f64) -> String {
    let s = si(v);
    if v > 0.0 {
        format!("+{s}")
    } else {
        s
    }
}

/// A latency given in microseconds: `41.2µs`, `8.24ms`, `1.20s`.
pub(crate) fn latency_us(us: f64) -> String {
    if !us.is_finite() {
        return "-".into();
    }
    if us >= 999.5e3 {
        format!("{}s", three_digits(us / 1e6))
    } else if us >= 999.5 {
        format!("{}ms", three_digits(us / 1e3))
    } else {
        format!("{}µs", three_digits(us))
    }
}

/// A relative change (0.12 = 12%) with its sign: `+12.0%`, `-3.4%`, `+173%`.
pub(crate) fn change(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let pct = x * 100.0;
    if pct.abs() >= 99.95 {
        format!("{pct:+.0}%")
    } else {
        format!("{pct:+.1}%")
    }
}

/// A share or a confidence (0.578 = 57.8%), unsigned.
pub(crate) fn percent(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let pct = x * 100.0;
    if pct.abs() >= 99.95 {
        format!("{pct:.0}%")
    } else {
        // Half away from zero, as people round: 93.75% is 93.8% (the
        // confidence of min..max over 5 trials), where `{:.1}` gives 93.7.
        format!("{:.1}%", (pct * 10.0).round() / 10.0)
    }
}

/// A confidence level: `95%`, `93.8%`, `75%`.
pub(crate) fn confidence(x: f64) -> String {
    let s = percent(x);
    match s.strip_suffix(".0%") {
        Some(whole) => format!("{whole}%"),
        None => s,
    }
}

/// A p-value: three decimals, `<0.001` below that.
pub(crate) fn p_value(p: f64) -> String {
    if p < 0.001 {
        "<0.001".into()
    } else {
        format!("{p:.3}")
    }
}

/// Three significant digits for 0 < |v| < 1000 (and zero as `0`).
fn three_digits(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 99.95 {
        format!("{v:.0}")
    } else if a >= 9.995 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_have_three_significant_digits() {
        assert_eq!(si(9_909.0), "9.91k");
        assert_eq!(si(27_098.0), "27.1k");
        assert_eq!(si(185_000.0), "185k");
        assert_eq!(si(999_700.0), "1.00M");
        assert_eq!(si(512.0), "512");
        assert_eq!(si(999.7), "1.00k");
        assert_eq!(si(0.0), "0");
        assert_eq!(si_signed(17_189.0), "+17.2k");
        assert_eq!(si_signed(-310.0), "-310");
    }

    #[test]
    fn latencies_pick_their_unit() {
        assert_eq!(latency_us(41.23), "41.2µs");
        assert_eq!(latency_us(8_241.0), "8.24ms");
        assert_eq!(latency_us(22_610.0), "22.6ms");
        assert_eq!(latency_us(1_200_000.0), "1.20s");
        assert_eq!(latency_us(999.9), "1.00ms");
    }

    #[test]
    fn changes_and_p_values() {
        assert_eq!(change(0.12), "+12.0%");
        assert_eq!(change(-0.034), "-3.4%");
        assert_eq!(change(1.734), "+173%");
        assert_eq!(percent(0.578), "57.8%");
        assert_eq!(percent(1.0), "100%");
        assert_eq!(percent(0.9375), "93.8%");
        assert_eq!(percent(0.22), "22.0%");
        assert_eq!(confidence(0.95), "95%");
        assert_eq!(confidence(0.9375), "93.8%");
        assert_eq!(p_value(0.0079), "0.008");
        assert_eq!(p_value(0.0002), "<0.001");
        assert_eq!(si(f64::NAN), "-");
    }
}
