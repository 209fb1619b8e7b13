//! Shared by tare-tune's integration tests.

use std::path::PathBuf;
use std::time::Duration;

use tare_tune::TuneOptions;

/// Tuning `config` natively, its runs in `out`: 200 connections on 2
/// threads, five trials of 600 ms after 200 ms of warm-up, 100 ms apart,
/// at most `max_rounds` rounds.
pub(crate) fn options(config: PathBuf, out: PathBuf, max_rounds: usize) -> TuneOptions {
    TuneOptions {
        config,
        target: tare_tune::TargetChoice::Auto,
        placement: "native".into(),
        connections: 200,
        threads: 2,
        duration: Duration::from_millis(600),
        warmup: Duration::from_millis(200),
        trials: 5,
        cooldown: Duration::from_millis(100),
        max_rounds,
        out,
    }
}
