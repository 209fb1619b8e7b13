//! The per-client random generator and pgbench's distributions.
//!
//! xoshiro256** (Blackman & Vigna, 2018), the generator pgbench itself uses
//! since PostgreSQL 15 (`src/common/pg_prng.c`), seeded through splitmix64.
//! Formulas for the exponential and Gaussian draws follow pgbench.c
//! (`getExponentialRand`, `getGaussianRand`), so a script asks the same
//! distribution of tare as of pgbench.

/// pgbench's `MIN_GAUSSIAN_PARAM`: below 2 the rejection loop would spin.
pub(crate) const MIN_GAUSSIAN_PARAM: f64 = 2.0;

#[derive(Clone, Debug)]
pub(crate) struct Rng {
    s: [u64; 4],
}

fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        let mut x = seed;
        Self {
            s: [
                splitmix64(&mut x),
                splitmix64(&mut x),
                splitmix64(&mut x),
                splitmix64(&mut x),
            ],
        }
    }

    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1), 53 random bits.
    #[inline]
    pub(crate) fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in `[lb, ub]` (caller checks `lb <= ub`).
    #[inline]
    pub(crate) fn uniform(&mut self, lb: i64, ub: i64) -> i64 {
        let span = (ub as i128 - lb as i128 + 1) as u128;
        let r = (self.next_u64() as u128 * span) >> 64;
        (lb as i128 + r as i128) as i64
    }

    /// pgbench's `getExponentialRand`: `param` > 0 (checked by the caller).
    pub(crate) fn exponential(&mut self, lb: i64, ub: i64, param: f64) -> i64 {
        let cut = (-param).exp();
        let uniform = 1.0 - self.next_f64(); // (0, 1]
        let rand = -(cut + (1.0 - cut) * uniform).ln() / param;
        lb + ((ub - lb + 1) as f64 * rand) as i64
    }

    /// pgbench's `getGaussianRand`: Box-Muller, rejecting draws outside
    /// `[-param, param)`; `param` >= [`MIN_GAUSSIAN_PARAM`].
    pub(crate) fn gaussian(&mut self, lb: i64, ub: i64, param: f64) -> i64 {
        // Bounded: at param >= 2 a draw is rejected with probability < 5%,
        // so 1000 rejections in a row never happen in practice.
        let mut stdev = 0.0;
        for _ in 0..1000 {
            let rand1 = 1.0 - self.next_f64(); // (0, 1]: ln is finite
            let rand2 = self.next_f64();
            stdev = (-2.0 * rand1.ln()).sqrt() * (2.0 * std::f64::consts::PI * rand2).sin();
            if (-param..param).contains(&stdev) {
                break;
            }
        }
        let rand = ((stdev + param) / (param * 2.0)).clamp(0.0, 1.0 - f64::EPSILON);
        lb + ((ub - lb + 1) as f64 * rand) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_stays_in_range_and_hits_both_ends() {
        let mut r = Rng::new(1);
        let (mut lo, mut hi) = (false, false);
        for _ in 0..10_000 {
            let v = r.uniform(-3, 3);
            assert!((-3..=3).contains(&v));
            lo |= v == -3;
            hi |= v == 3;
        }
        assert!(lo && hi);
    }

    #[test]
    fn exponential_favours_the_low_end() {
        let mut r = Rng::new(2);
        let draws: Vec<i64> = (0..10_000).map(|_| r.exponential(1, 100, 5.0)).collect();
        assert!(draws.iter().all(|v| (1..=100).contains(v)));
        let low = draws.iter().filter(|v| **v <= 20).count();
        // P(rand < 0.2) = (1 - e^-1) / (1 - e^-5) ≈ 0.636
        assert!((5_800..6_900).contains(&low), "{low}");
    }

    #[test]
    fn gaussian_centres_on_the_middle() {
        let mut r = Rng::new(3);
        let draws: Vec<i64> = (0..10_000).map(|_| r.gaussian(1, 100, 2.5)).collect();
        assert!(draws.iter().all(|v| (1..=100).contains(v)));
        let mean = draws.iter().sum::<i64>() as f64 / draws.len() as f64;
        assert!((45.0..56.0).contains(&mean), "{mean}");
    }

    #[test]
    fn same_seed_same_sequence() {
        let (mut a, mut b) = (Rng::new(9), Rng::new(9));
        assert!((0..100).all(|_| a.next_u64() == b.next_u64()));
    }
}
