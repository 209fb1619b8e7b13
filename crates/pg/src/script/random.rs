//! The per-client generator and pgbench's distributions.
//!
//! xoroshiro128** (Blackman & Vigna, 2018) seeded through splitmix64: the
//! generator of PostgreSQL 15 (`src/common/pg_prng.c`), with its range and
//! double draws, so that for one `--random-seed` tare draws the values
//! pgbench draws. [`Seeds`] derives the per-client and per-thread seeds in
//! pgbench's order. Formulas for the exponential, Gaussian and Zipfian
//! draws and for `permute` follow pgbench.c (`getExponentialRand`,
//! `getGaussianRand`, `computeIterativeZipfian`, `permute`); docs/pg.md.

/// pgbench's `MIN_GAUSSIAN_PARAM`: below 2 the rejection loop would spin.
pub(crate) const MIN_GAUSSIAN_PARAM: f64 = 2.0;
/// pgbench's bounds of the Zipfian parameter.
pub(crate) const MIN_ZIPFIAN_PARAM: f64 = 1.001;
pub(crate) const MAX_ZIPFIAN_PARAM: f64 = 1000.0;

#[derive(Clone, Debug)]
pub(crate) struct Rng {
    s0: u64,
    s1: u64,
}

fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The seeds pgbench derives from `--random-seed` (its `main`): one base
/// generator gives, in order, each client's function generator, the
/// `:default_seed` of the hash functions, then per thread the generators
/// of script choice, throttling and log sampling.
pub(crate) struct Seeds {
    pub clients: Vec<u64>,
    pub default_seed: u64,
    /// Per thread: (choose, throttle, sample).
    pub threads: Vec<(u64, u64, u64)>,
}

impl Seeds {
    pub(crate) fn derive(random_seed: u64, clients: usize, threads: usize) -> Seeds {
        let mut base = Rng::new(random_seed);
        let clients = (0..clients).map(|_| base.next_u64()).collect();
        let default_seed = base.next_u64();
        let threads = (0..threads)
            .map(|_| (base.next_u64(), base.next_u64(), base.next_u64()))
            .collect();
        Seeds {
            clients,
            default_seed,
            threads,
        }
    }
}

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        let mut x = seed;
        let (s0, s1) = (splitmix64(&mut x), splitmix64(&mut x));
        // pg_prng_seed_check: an all-zero state would stay zero.
        if s0 == 0 && s1 == 0 {
            return Rng { s0: 1, s1: 0 };
        }
        Rng { s0, s1 }
    }

    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        let s0 = self.s0;
        let sx = self.s1 ^ s0;
        let val = s0.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        self.s0 = s0.rotate_left(24) ^ sx ^ (sx << 16);
        self.s1 = sx.rotate_left(37);
        val
    }

    /// `pg_prng_double`: uniform in [0, 1), 52 random bits.
    #[inline]
    pub(crate) fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 12) as f64 * (1.0 / (1u64 << 52) as f64)
    }

    /// `pg_prng_uint64_range`: uniform in `[0, range]`, by rejection of the
    /// draws above `range` after a shift to its bit length.
    #[inline]
    pub(crate) fn below_or_eq(&mut self, range: u64) -> u64 {
        if range == 0 {
            return 0;
        }
        let shift = range.leading_zeros();
        loop {
            let v = self.next_u64() >> shift;
            if v <= range {
                return v;
            }
        }
    }

    /// pgbench's `getrand`: uniform integer in `[lb, ub]` (caller checks
    /// `lb <= ub`).
    #[inline]
    pub(crate) fn uniform(&mut self, lb: i64, ub: i64) -> i64 {
        lb.wrapping_add(self.below_or_eq(ub.wrapping_sub(lb) as u64) as i64)
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
            let rand2 = 1.0 - self.next_f64();
            stdev = (-2.0 * rand1.ln()).sqrt() * (2.0 * std::f64::consts::PI * rand2).sin();
            if (-param..param).contains(&stdev) {
                break;
            }
        }
        let rand = ((stdev + param) / (param * 2.0)).clamp(0.0, 1.0 - f64::EPSILON);
        lb + ((ub - lb + 1) as f64 * rand) as i64
    }

    /// pgbench's `getZipfianRand` (`computeIterativeZipfian`, rejection
    /// sampling of Devroye); `s` in [`MIN_ZIPFIAN_PARAM`, `MAX_ZIPFIAN_PARAM`].
    pub(crate) fn zipfian(&mut self, lb: i64, ub: i64, s: f64) -> i64 {
        let n = ub - lb + 1;
        if n <= 1 {
            return lb;
        }
        let b = 2f64.powf(s - 1.0);
        // Bounded: the acceptance rate is above 1/2 for every allowed s.
        let mut x = 1.0;
        for _ in 0..1_000_000 {
            let u = self.next_f64();
            let v = self.next_f64();
            x = u.powf(-1.0 / (s - 1.0)).floor();
            let t = (1.0 + 1.0 / x).powf(s - 1.0);
            if v * x * (t - 1.0) / (b - 1.0) <= t / b && x <= n as f64 {
                break;
            }
        }
        lb - 1 + x as i64
    }
}

/// pgbench's `permute(val, size, seed)`: a pseudorandom bijection of
/// `[0, size)`, six rounds of multiply-xor-rotate on overlapping halves and
/// a random offset, drawn from a generator seeded with `seed`.
pub(crate) fn permute(val: i64, isize: i64, seed: i64) -> i64 {
    if isize < 2 {
        return 0;
    }
    let mut rng = Rng::new(seed as u64);
    let size = isize as u64;
    let mut v = (val as u64) % size;
    let masklen = 63 - size.leading_zeros();
    let mask = (1u64 << masklen) - 1;
    let mix = |x: u64, m: u64, r: u64| {
        let x = (x.wrapping_mul(m) ^ r) & mask;
        ((x << 1) & mask) | (x >> (masklen - 1))
    };
    for _ in 0..6 {
        let m = (rng.next_u64() & mask) | 1;
        let r = rng.next_u64() & mask;
        if v <= mask {
            v = mix(v, m, r);
        }
        let m = (rng.next_u64() & mask) | 1;
        let r = rng.next_u64() & mask;
        let t = size - 1 - v;
        if t <= mask {
            v = size - 1 - mix(t, m, r);
        }
        let r = rng.below_or_eq(size - 1);
        v = (v + r) % size;
    }
    v as i64
}

const FNV_PRIME: u64 = 0x100000001b3;
const FNV_OFFSET_BASIS: u64 = 0xcbf29ce484222325;
const MM2_MUL: u64 = 0xc6a4a7935bd1e995;
const MM2_MUL_TIMES_8: u64 = 0x35253c9ade8f4ca8;
const MM2_ROT: u32 = 47;

/// pgbench's `getHashFnv1a`: FNV-1a over the 8 bytes of `val`, low first.
pub(crate) fn hash_fnv1a(val: i64, seed: i64) -> i64 {
    let mut result = FNV_OFFSET_BASIS ^ seed as u64;
    let mut v = val;
    for _ in 0..8 {
        result ^= (v & 0xff) as u64;
        v >>= 8;
        result = result.wrapping_mul(FNV_PRIME);
    }
    result as i64
}

/// pgbench's `getHashMurmur2`: 64-bit MurmurHash2 of one 8-byte value.
pub(crate) fn hash_murmur2(val: i64, seed: i64) -> i64 {
    let mut result = seed as u64 ^ MM2_MUL_TIMES_8;
    let mut k = val as u64;
    k = k.wrapping_mul(MM2_MUL);
    k ^= k >> MM2_ROT;
    k = k.wrapping_mul(MM2_MUL);
    result ^= k;
    result = result.wrapping_mul(MM2_MUL);
    result ^= result >> MM2_ROT;
    result = result.wrapping_mul(MM2_MUL);
    result ^= result >> MM2_ROT;
    result as i64
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

    /// Values pgbench 15's own tests expect (t/001_pgbench_with_server.pl):
    /// with `--random-seed=5432`, client 0's first draws, the hash
    /// functions and `permute` at the edge of the int64 range.
    #[test]
    fn pgbench_15_values() {
        let seeds = Seeds::derive(5432, 1, 1);
        let mut r = Rng::new(seeds.clients[0]);
        assert_eq!(r.uniform(10, 19), 17);
        assert_eq!(r.exponential(100, 199, 10.0), 104);
        assert_eq!(r.gaussian(1000, 1999, 10.0), 1498);
        assert_eq!(r.zipfian(1, 9, 1.3), 3);
        assert_eq!(hash_murmur2(10, 5432), -5817877081768721676);
        assert_eq!(hash_fnv1a(10, 5432), -7793829335365542153);
        let size = i64::MAX - 10;
        let want = [
            520382784483822430,
            1143715004660802862,
            447293596416496998,
            916527772266572956,
            2763809008686028849,
            8648551549198294572,
            4542876852200565125,
        ];
        for (i, w) in want.iter().enumerate() {
            assert_eq!(permute(size - 1 - i as i64, size, 5432), *w, "{i}");
        }
        assert_eq!(permute(0, 2, 5431), 0);
        assert_eq!(permute(0, 2, 5433), 1);
    }

    #[test]
    fn permute_is_a_bijection() {
        for size in [1, 2, 3, 5, 16, 100] {
            let mut seen: Vec<i64> = (0..size).map(|v| permute(v, size, 99)).collect();
            seen.sort();
            let want: Vec<i64> = if size < 2 {
                vec![0]
            } else {
                (0..size).collect()
            };
            assert_eq!(seen, want);
        }
    }

    #[test]
    fn same_seed_same_sequence() {
        let (mut a, mut b) = (Rng::new(9), Rng::new(9));
        assert!((0..100).all(|_| a.next_u64() == b.next_u64()));
    }
}
