//! Scales and ticks: data values to SVG coordinates, and "nice" tick values
//! (steps of 1, 2 or 5 × 10^k, as d3's `ticks` and gnuplot choose them), so
//! axes read `0 10k 20k 30k 40k` rather than `0 9.7k 19.4k`.

/// A linear map from a data interval onto a pixel interval.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Linear {
    d0: f64,
    d1: f64,
    r0: f64,
    r1: f64,
}

impl Linear {
    pub(crate) fn new((d0, d1): (f64, f64), (r0, r1): (f64, f64)) -> Linear {
        // A degenerate domain maps everything to the start of the range
        // rather than dividing by zero.
        let d1 = if (d1 - d0).abs() < f64::EPSILON {
            d0 + 1.0
        } else {
            d1
        };
        Linear { d0, d1, r0, r1 }
    }

    pub(crate) fn map(&self, v: f64) -> f64 {
        self.r0 + (v - self.d0) / (self.d1 - self.d0) * (self.r1 - self.r0)
    }
}

/// The tick step near `span / target` from the 1-2-5 series.
fn step(span: f64, target: usize) -> f64 {
    let raw = span / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let m = if norm < 1.5 {
        1.0
    } else if norm < 3.5 {
        2.0
    } else if norm < 7.5 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// About `target` nice ticks covering `[lo, hi]`; the first is at or
/// below `lo`, the last at or above `hi`, so the axis ends on a tick.
pub(crate) fn ticks(lo: f64, hi: f64, target: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![lo, lo + 1.0];
    }
    let s = step(hi - lo, target);
    let start = (lo / s).floor();
    let end = (hi / s).ceil();
    // Bounded: at most ~2 × target + 2 ticks by construction of `step`.
    (start as i64..=end as i64).map(|i| i as f64 * s).collect()
}

/// A coordinate as SVG text: one decimal is finer than a pixel.
pub(crate) fn px(v: f64) -> String {
    if !v.is_finite() {
        return "0".into();
    }
    let r = (v * 10.0).round() / 10.0;
    if r.fract() == 0.0 {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// A tick label without zeros after the decimal point (`50.0k` → `50k`,
/// `1.00ms` → `1ms`, `2.50k` stays): ticks are round numbers, and the
/// units' three significant digits are for measurements.
pub(crate) fn trim_zeros(s: &str) -> String {
    let Some(dot) = s.find('.') else {
        return s.to_string();
    };
    let digits = s[dot + 1..]
        .chars()
        .take_while(char::is_ascii_digit)
        .count();
    let frac = &s[dot + 1..dot + 1 + digits];
    if !frac.is_empty() && frac.chars().all(|c| c == '0') {
        format!("{}{}", &s[..dot], &s[dot + 1 + digits..])
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_domain() {
        assert_eq!(ticks(0.0, 39_000.0, 5), vec![0.0, 10e3, 20e3, 30e3, 40e3]);
        let t = ticks(0.0, 0.93, 4);
        assert_eq!(t.first(), Some(&0.0));
        assert!(*t.last().unwrap() >= 0.93);
    }

    #[test]
    fn degenerate_inputs_do_not_panic() {
        assert_eq!(ticks(5.0, 5.0, 4).len(), 2);
        let s = Linear::new((3.0, 3.0), (0.0, 100.0));
        assert!(s.map(3.0).is_finite());
    }

    #[test]
    fn maps_linearly() {
        let s = Linear::new((0.0, 10.0), (100.0, 0.0));
        assert_eq!(s.map(5.0), 50.0);
        assert_eq!(px(12.345), "12.3");
        assert_eq!(px(12.0), "12");
    }

    #[test]
    fn tick_labels_drop_trailing_zeros() {
        assert_eq!(trim_zeros("50.0k"), "50k");
        assert_eq!(trim_zeros("20.0"), "20");
        assert_eq!(trim_zeros("2.50k"), "2.50k");
        assert_eq!(trim_zeros("1.00ms"), "1ms");
        assert_eq!(trim_zeros("99.9%"), "99.9%");
        assert_eq!(trim_zeros("0µs"), "0µs");
    }
}
