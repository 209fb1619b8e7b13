//! Student's t distribution: the two-sided tail probability and the
//! quantile, for the paired and Welch intervals ([`super::paired`]), the
//! cell levels ([`super::twoway`]) and Fieller's interval
//! ([`super::fieller`]).
//!
//! `P(|T| > t) = I_x(ν/2, 1/2)` with `x = ν / (ν + t²)` (Abramowitz &
//! Stegun, *Handbook of Mathematical Functions*, 26.7.1 with 26.5.27); the
//! regularized incomplete beta by its continued fraction and `ln Γ` by
//! Lanczos' approximation (Press et al., *Numerical Recipes*, 3rd ed.,
//! §6.4 and §6.1). Degrees of freedom may be fractional (Welch).

/// `P(|T| > |t|)` for `df` degrees of freedom; `NaN` when `df <= 0`.
pub(crate) fn two_sided_p(t: f64, df: f64) -> f64 {
    if df.is_nan() || df <= 0.0 || t.is_nan() {
        return f64::NAN;
    }
    if t.is_infinite() {
        return 0.0;
    }
    let x = df / (df + t * t);
    incomplete_beta(df / 2.0, 0.5, x).clamp(0.0, 1.0)
}

/// The `q` quantile (0 < q < 1) of Student's t with `df` degrees of
/// freedom; `NaN` when `df <= 0` or `q` is outside (0, 1).
pub(crate) fn quantile(q: f64, df: f64) -> f64 {
    if df.is_nan() || df <= 0.0 || !(q > 0.0 && q < 1.0) {
        return f64::NAN;
    }
    if q == 0.5 {
        return 0.0;
    }
    // Solve P(|T| > t) = 2 (1 - q) for t >= 0 by bisection: the tail is
    // monotone, and 200 halvings of [0, 1e6] reach machine precision.
    let tail = 2.0 * (1.0 - q.max(1.0 - q));
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while two_sided_p(hi, df) > tail && hi < 1e12 {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if two_sided_p(mid, df) > tail {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let t = 0.5 * (lo + hi);
    if q > 0.5 {
        t
    } else {
        -t
    }
}

/// The regularized incomplete beta `I_x(a, b)`.
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    // The continued fraction converges fast for x < (a + 1) / (a + b + 2);
    // otherwise use the symmetry I_x(a, b) = 1 - I_{1-x}(b, a).
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// Where modified Lentz moves a value off zero.
const TINY: f64 = 1e-300;

/// One step of modified Lentz for the coefficient `aa`: the next `c` and
/// `d`, and the factor (`d * c`) the fraction is multiplied by.
fn lentz_step(aa: f64, c: &mut f64, d: &mut f64) -> f64 {
    *d = 1.0 + aa * *d;
    if d.abs() < TINY {
        *d = TINY;
    }
    *c = 1.0 + aa / *c;
    if c.abs() < TINY {
        *c = TINY;
    }
    *d = 1.0 / *d;
    *d * *c
}

/// The continued fraction of the incomplete beta, by modified Lentz.
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        h *= lentz_step(aa, &mut c, &mut d);
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        let del = lentz_step(aa, &mut c, &mut d);
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7, 9 terms; relative error < 1e-15).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 - x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = G[0];
    for (i, g) in G.iter().enumerate().skip(1) {
        sum += g / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_match_the_printed_table() {
        // Two-sided 95% critical values (Fisher & Yates, *Statistical Tables*,
        // table III): df 1, 2, 4, 9, 30, and the normal limit.
        for (df, want) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (4.0, 2.776),
            (9.0, 2.262),
            (30.0, 2.042),
            (1e6, 1.960),
        ] {
            let t = quantile(0.975, df);
            assert!((t - want).abs() < 1e-3, "df {df}: {t}");
            assert!((quantile(0.025, df) + t).abs() < 1e-9);
        }
        // One-sided 80% (power): df 4 → 0.941.
        assert!((quantile(0.8, 4.0) - 0.941).abs() < 1e-3);
    }

    #[test]
    fn tail_probability_inverts_the_quantile() {
        for df in [1.0, 2.5, 7.0, 40.0] {
            let t = quantile(0.99, df);
            assert!((two_sided_p(t, df) - 0.02).abs() < 1e-9, "df {df}");
        }
        assert_eq!(two_sided_p(0.0, 3.0), 1.0);
        assert!(two_sided_p(1.0, 0.0).is_nan());
        assert!(quantile(0.975, 0.0).is_nan());
    }
}
