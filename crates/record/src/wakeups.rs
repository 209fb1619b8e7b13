//! [`WakeupReport`]: how the generator's workers slept and woke.

use serde::{Deserialize, Serialize};

/// How often the workers waited for the network, and whether they paused to
/// batch their wake-ups (`--coalesce`, see docs/http.md).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WakeupReport {
    /// `auto`, `off`, or a fixed pause such as `100us`.
    pub coalesce: String,
    /// How the workers waited: `epoll` or `io_uring` (empty in results
    /// from before tare recorded it).
    #[serde(default)]
    pub io: String,
    /// Waits for the network (`epoll_pwait2` or `io_uring_enter` calls)
    /// during measurement.
    pub waits: u64,
    /// Pauses taken before a wait so that responses could accumulate.
    pub pauses: u64,
    /// Mean length of a pause, as slept (microseconds).
    pub mean_pause_us: f64,
    /// Completion times came from the kernel's receive timestamps
    /// (`SO_TIMESTAMPNS`), not from when a worker woke to read them.
    pub rx_timestamps: bool,
}

impl WakeupReport {
    /// One line for the text reports when the run coalesced; `None` when
    /// `--coalesce` was off (nothing to say beyond the usual).
    pub fn summary(&self) -> Option<String> {
        if self.coalesce.is_empty() || self.coalesce == "off" {
            return None;
        }
        let stamps = if self.rx_timestamps {
            "completion times from kernel receive timestamps"
        } else {
            "no receive timestamps"
        };
        Some(format!(
            "coalesce {}: {} pauses (mean {:.0} us) before {} waits; {stamps}",
            self.coalesce, self.pauses, self.mean_pause_us, self.waits
        ))
    }

    /// Adds another worker's counts (`mean_pause_us` weighted by pauses).
    pub fn add(&mut self, o: &WakeupReport) {
        let pauses = self.pauses + o.pauses;
        if pauses > 0 {
            self.mean_pause_us = (self.mean_pause_us * self.pauses as f64
                + o.mean_pause_us * o.pauses as f64)
                / pauses as f64;
        }
        self.pauses = pauses;
        self.waits += o.waits;
        self.rx_timestamps |= o.rx_timestamps;
        if self.coalesce.is_empty() {
            self.coalesce = o.coalesce.clone();
        }
        if self.io.is_empty() {
            self.io = o.io.clone();
        } else if !o.io.is_empty() && self.io != o.io {
            // Threads that could not all get a ring.
            self.io = "mixed".into();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_coalescing_run_has_a_summary() {
        let mut w = WakeupReport {
            coalesce: "off".into(),
            waits: 10,
            ..Default::default()
        };
        assert_eq!(w.summary(), None);
        w.coalesce = "100us".into();
        w.pauses = 4;
        w.mean_pause_us = 120.4;
        w.rx_timestamps = true;
        assert_eq!(
            w.summary().unwrap(),
            "coalesce 100us: 4 pauses (mean 120 us) before 10 waits; completion times from kernel receive timestamps"
        );
    }

    #[test]
    fn add_weights_the_mean_pause_by_pauses() {
        let mut a = WakeupReport {
            coalesce: "auto".into(),
            io: "epoll".into(),
            waits: 10,
            pauses: 1,
            mean_pause_us: 10.0,
            rx_timestamps: true,
        };
        a.add(&WakeupReport {
            coalesce: "auto".into(),
            io: "epoll".into(),
            waits: 5,
            pauses: 3,
            mean_pause_us: 50.0,
            rx_timestamps: true,
        });
        assert_eq!((a.waits, a.pauses), (15, 4));
        assert!((a.mean_pause_us - 40.0).abs() < 1e-9);
    }
}
