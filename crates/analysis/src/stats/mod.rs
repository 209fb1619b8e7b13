//! Pure statistics on slices of trial values: nothing here knows about runs,
//! cells or files, so each piece is tested on numbers alone.
//!
//! - [`median_ci`]: the median and its exact order-statistic interval.
//! - [`mannwhitney`]: the exact (or normal) two-sided Mann-Whitney U test.
//! - [`bootstrap`]: a seeded percentile bootstrap of medians.
//! - [`contrast`]: one sample against another: ratio, interval, p, call.

pub mod bootstrap;
pub mod contrast;
pub mod mannwhitney;
pub mod median_ci;

pub use contrast::{contrast, Contrast, Significance, ALPHA, CONFIDENCE};
pub use mannwhitney::{mann_whitney, min_p_value, recommended_trials, MannWhitney};
pub use median_ci::{median, median_ci, trials_for_confidence, MedianCi};
