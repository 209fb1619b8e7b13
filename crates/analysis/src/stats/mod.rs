//! Pure statistics on slices of trial values: nothing here knows about runs,
//! cells or files, so each piece is tested on numbers alone.
//!
//! - [`median_ci`]: the median and its exact order-statistic interval.
//! - [`mannwhitney`]: the exact (or normal) two-sided Mann-Whitney U test.
//! - [`bootstrap`]: a seeded percentile bootstrap of medians.
//! - [`contrast`]: one sample against another: ratio, interval, p, call.
//! - [`paired`]: the paired (within-round) and Welch t contrasts on logs,
//!   and the minimum detectable effect.
//! - [`difference`]: additive differences (`b - a`), paired or Welch,
//!   with t intervals: µs per request that may be zero on one side.
//! - [`twoway`]: cell levels with the rounds' drift removed (cell + round
//!   model on log throughput).
//! - [`fieller`]: the interval of a ratio of two correlated means (shares).
//! - [`tdist`]: Student's t tail and quantile.

pub mod bootstrap;
pub mod contrast;
pub mod difference;
pub(crate) mod fieller;
pub(crate) mod mannwhitney;
pub(crate) mod median_ci;
pub mod paired;
pub(crate) mod tdist;
pub mod twoway;

pub use contrast::{contrast, Contrast, Method, Significance, ALPHA, CONFIDENCE};
pub use difference::{paired_difference, welch_difference, Difference};
pub use mannwhitney::MannWhitney;
pub(crate) use median_ci::median_ci;
pub use median_ci::{median, trials_for_confidence, MedianCi};
pub(crate) use paired::{paired_contrast, welch_contrast};
pub use twoway::{Level, TwoWay};
