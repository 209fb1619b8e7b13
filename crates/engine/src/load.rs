//! [`Load`]: the settings every engine shares (threads, connections, how
//! long, warm-up, timeout, pacing, the objective of a search, how workers
//! wait, where they stand), typed once and checked once, whether they come
//! from `tare http`'s or `tare pg`'s flags or from an experiment file's
//! `[load]`. What only one engine has (a request count, a script) stays in
//! that engine's config, beside its `Load`.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::cpu::CpuList;
use crate::find_max::Slo;
use crate::schedule::Arrivals;
use crate::{Coalesce, IoMode};

pub use crate::bounds::MAX_CONNECTIONS;
pub(crate) use crate::bounds::MAX_RATE;
use crate::bounds::{self, duration_at_most};

/// The shared settings of one load run.
#[derive(Clone, Debug, PartialEq)]
pub struct Load {
    /// Worker threads, each with its own event loop (wrk `-t`, pgbench `-j`).
    pub threads: usize,
    /// Concurrent connections (wrk `-c`) or database sessions (pgbench
    /// `-c`), shared out among the threads.
    pub connections: usize,
    /// The measured period (`-d`, `-T`); `None`: the run is bounded by a
    /// count instead (http's `-n`, pg's `-t`).
    pub duration: Option<Duration>,
    /// Load applied after the ramp and before measuring; what completes
    /// during it is not recorded (caches and pools settle first).
    pub warmup: Duration,
    /// http: a request without a complete response after this long is a
    /// timeout. pg: the bound on establishing one connection (libpq's
    /// `connect_timeout`) and on tare's own statements before the run;
    /// pg has no per-transaction timeout, as pgbench has none.
    pub timeout: Duration,
    /// Open loop: completions per second in total, started on a schedule,
    /// latency counted from each intended start; `None`: a closed loop.
    pub rate: Option<f64>,
    /// Open loop: evenly spaced or Poisson arrivals.
    pub arrivals: Arrivals,
    /// Connections (closed loop) or the rate (open loop) rise linearly over
    /// this long before the warm-up and the measured period.
    pub ramp: Duration,
    /// Search the highest open-loop rate meeting these objectives
    /// (`--find-max --slo`, `[load] slo`) instead of running once.
    pub slo: Option<Slo>,
    /// Closed loop: how an idle worker batches its wake-ups.
    pub coalesce: Coalesce,
    /// How workers wait for the network: io_uring where it can, epoll otherwise.
    pub io: IoMode,
    /// Worker threads enter this network namespace before connecting
    /// (a placement that puts the generator on another "machine").
    pub netns: Option<PathBuf>,
    /// The CPUs the generator's worker threads run on (`None`: wherever the
    /// scheduler puts them). On a small machine a generator and a server
    /// on the same cores measure each other (docs/experiments.md, "CPUs").
    pub cpus: Option<CpuList>,
}

impl Default for Load {
    /// One thread, one connection, bounded by the engine's count, no pacing.
    fn default() -> Self {
        Load {
            threads: 1,
            connections: 1,
            duration: None,
            warmup: Duration::ZERO,
            timeout: Duration::from_secs(2),
            rate: None,
            arrivals: Arrivals::Constant,
            ramp: Duration::ZERO,
            slo: None,
            coalesce: Coalesce::Off,
            io: IoMode::Auto,
            netns: None,
            cpus: None,
        }
    }
}

/// A shared setting, for errors that name where it came from: a flag
/// (spelled by each engine as its reference tool spells it) or an
/// experiment key (`load.<name>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LoadKey {
    Threads,
    Connections,
    Duration,
    Warmup,
    Timeout,
    Rate,
    Arrivals,
    Ramp,
    Slo,
    Coalesce,
    Io,
    Netns,
    Cpus,
}

impl LoadKey {
    /// The setting's long flag (`--rate`): how an engine names it in an
    /// error where its reference tool has no spelling of its own.
    pub fn flag(self) -> &'static str {
        match self {
            LoadKey::Threads => "--threads",
            LoadKey::Connections => "--connections",
            LoadKey::Duration => "--duration",
            LoadKey::Warmup => "--warmup",
            LoadKey::Timeout => "--timeout",
            LoadKey::Rate => "--rate",
            LoadKey::Arrivals => "--arrivals",
            LoadKey::Ramp => "--ramp",
            LoadKey::Slo => "--slo",
            LoadKey::Coalesce => "--coalesce",
            LoadKey::Io => "--io",
            LoadKey::Netns => "--netns",
            LoadKey::Cpus => "--cpus",
        }
    }

    /// The setting's name: its experiment key under `[load]` and its long flag.
    pub fn name(self) -> &'static str {
        match self {
            LoadKey::Threads => "threads",
            LoadKey::Connections => "connections",
            LoadKey::Duration => "duration",
            LoadKey::Warmup => "warmup",
            LoadKey::Timeout => "timeout",
            LoadKey::Rate => "rate",
            LoadKey::Arrivals => "arrivals",
            LoadKey::Ramp => "ramp",
            LoadKey::Slo => "slo",
            LoadKey::Coalesce => "coalesce",
            LoadKey::Io => "io",
            LoadKey::Netns => "netns",
            LoadKey::Cpus => "cpus",
        }
    }
}

/// A shared setting that cannot work, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    pub key: LoadKey,
    /// What is wrong, as a predicate of the setting (`must be at least 1`).
    pub message: String,
}

impl LoadError {
    fn new(key: LoadKey, message: impl Into<String>) -> Self {
        LoadError {
            key,
            message: message.into(),
        }
    }

    /// The error with the setting spelled as the caller names it
    /// (`threads (-t)`, `--rate`).
    pub(crate) fn with_subject(&self, subject: &str) -> String {
        format!("{subject} {}", self.message)
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "--{} {}", self.key.name(), self.message)
    }
}

impl std::error::Error for LoadError {}

impl Load {
    /// The checks every engine needs, in one place. `tcp`: whether the load
    /// goes over TCP (`None`: not known yet, as when an experiment file is
    /// read; the stricter rule applies).
    pub fn check(&self, tcp: Option<bool>) -> Result<(), LoadError> {
        use LoadKey as K;
        if self.threads == 0 {
            return Err(LoadError::new(K::Threads, "must be at least 1"));
        }
        if self.threads > bounds::MAX_THREADS {
            return Err(LoadError::new(
                K::Threads,
                format!("must be at most {}", bounds::MAX_THREADS),
            ));
        }
        if self.connections == 0 {
            return Err(LoadError::new(K::Connections, "must be at least 1"));
        }
        if self.connections > MAX_CONNECTIONS {
            return Err(LoadError::new(
                K::Connections,
                format!("must be at most {MAX_CONNECTIONS}"),
            ));
        }
        if self.connections < self.threads {
            return Err(LoadError::new(
                K::Connections,
                "must be at least the number of threads",
            ));
        }
        if self.duration.is_some_and(|d| d.is_zero()) {
            return Err(LoadError::new(K::Duration, "must be greater than zero"));
        }
        if self.timeout.is_zero() {
            return Err(LoadError::new(K::Timeout, "must be greater than zero"));
        }
        // Upper bounds (docs/experiments.md, "Limits"): the same whether
        // the value came from a flag or an experiment file.
        for (key, value, max) in [
            (K::Duration, self.duration, bounds::MAX_DURATION),
            (K::Warmup, Some(self.warmup), bounds::MAX_WARMUP),
            (K::Ramp, Some(self.ramp), bounds::MAX_RAMP),
            (K::Timeout, Some(self.timeout), bounds::MAX_TIMEOUT),
        ] {
            if let Some(d) = value {
                duration_at_most(d, max).map_err(|m| LoadError::new(key, m))?;
            }
        }
        if let Some(r) = self.rate {
            if !(r.is_finite() && r > 0.0) {
                return Err(LoadError::new(
                    K::Rate,
                    "must be a positive number per second",
                ));
            }
            if r > MAX_RATE {
                return Err(LoadError::new(K::Rate, "must be at most 10M per second"));
            }
            if self.slo.is_some() {
                return Err(LoadError::new(
                    K::Rate,
                    "give either a rate or an slo (which searches the rate), not both",
                ));
            }
        }
        // Coalescing times completions by kernel receive timestamps, which
        // only a `recvmsg` after epoll returns (docs/http.md). An open loop
        // never coalesces (its sends keep their schedule), nor does a
        // Unix socket.
        if self.coalesce != Coalesce::Off
            && self.io == IoMode::Uring
            && self.rate.is_none()
            && tcp != Some(false)
        {
            return Err(LoadError::new(
                K::Io,
                "io_uring cannot coalesce: --coalesce needs kernel receive timestamps, which only --io epoll takes; use --io auto or epoll",
            ));
        }
        Ok(())
    }

    /// Where coalescing is asked for explicitly with an open loop (the
    /// command line's flags, an experiment file), it is a mistake rather
    /// than a setting the open loop ignores.
    pub fn check_coalescing_closed_loop(&self) -> Result<(), LoadError> {
        if self.coalesce != Coalesce::Off && self.open_loop() {
            return Err(LoadError::new(
                LoadKey::Coalesce,
                "only for a closed loop: an open loop (rate, slo) keeps its schedule",
            ));
        }
        Ok(())
    }

    /// For an engine whose ramp and warm-up come before a measured
    /// duration and make no sense before a count (pg): both need a
    /// duration, and the ramp may not be longer than it.
    pub fn check_ramp_within_duration(&self) -> Result<(), LoadError> {
        match self.duration {
            None if !self.ramp.is_zero() => Err(LoadError::new(
                LoadKey::Ramp,
                "needs a duration, not a count",
            )),
            None if !self.warmup.is_zero() => Err(LoadError::new(
                LoadKey::Warmup,
                "needs a duration, not a count",
            )),
            Some(d) if self.ramp > d => Err(LoadError::new(
                LoadKey::Ramp,
                format!(
                    "({:?}) is longer than the measured duration ({d:?})",
                    self.ramp
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Open loop: a rate, or a search over rates.
    pub fn open_loop(&self) -> bool {
        self.rate.is_some() || self.slo.is_some()
    }
}

/// As plans and provenance record it: durations in seconds (as everything
/// else tare writes), modes and objectives as they are typed.
impl Serialize for Load {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("threads", &self.threads)?;
        m.serialize_entry("connections", &self.connections)?;
        m.serialize_entry("duration", &self.duration.map(|d| d.as_secs_f64()))?;
        m.serialize_entry("warmup", &self.warmup.as_secs_f64())?;
        m.serialize_entry("timeout", &self.timeout.as_secs_f64())?;
        m.serialize_entry("rate", &self.rate)?;
        m.serialize_entry("arrivals", self.arrivals.name())?;
        m.serialize_entry("ramp", &self.ramp.as_secs_f64())?;
        m.serialize_entry("slo", &self.slo.as_ref().map(|s| s.to_string()))?;
        m.serialize_entry("coalesce", &self.coalesce.to_string())?;
        m.serialize_entry("io", &self.io.to_string())?;
        if let Some(ns) = &self.netns {
            m.serialize_entry("netns", ns)?;
        }
        if let Some(cpus) = &self.cpus {
            m.serialize_entry("cpus", cpus)?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn closed(threads: usize, connections: usize) -> Load {
        Load {
            threads,
            connections,
            duration: Some(Duration::from_secs(1)),
            ..Load::default()
        }
    }

    #[test]
    fn each_shared_mistake_names_its_setting() {
        let slo = || Some("p99<1ms".parse::<Slo>().unwrap());
        let cases: Vec<(Load, LoadKey)> = vec![
            (closed(0, 1), LoadKey::Threads),
            (closed(1, 0), LoadKey::Connections),
            (closed(4, 2), LoadKey::Connections),
            (closed(1, MAX_CONNECTIONS + 1), LoadKey::Connections),
            (
                closed(bounds::MAX_THREADS + 1, MAX_CONNECTIONS),
                LoadKey::Threads,
            ),
            (
                Load {
                    duration: Some(Duration::from_secs(1_000_000 * 3600)),
                    ..closed(1, 1)
                },
                LoadKey::Duration,
            ),
            (
                Load {
                    warmup: bounds::MAX_WARMUP + Duration::from_secs(1),
                    ..closed(1, 1)
                },
                LoadKey::Warmup,
            ),
            (
                Load {
                    ramp: Duration::from_secs(1 << 40),
                    ..closed(1, 1)
                },
                LoadKey::Ramp,
            ),
            (
                Load {
                    timeout: Duration::from_secs(86_400),
                    ..closed(1, 1)
                },
                LoadKey::Timeout,
            ),
            (
                Load {
                    duration: Some(Duration::ZERO),
                    ..closed(1, 1)
                },
                LoadKey::Duration,
            ),
            (
                Load {
                    timeout: Duration::ZERO,
                    ..closed(1, 1)
                },
                LoadKey::Timeout,
            ),
            (
                Load {
                    rate: Some(f64::NAN),
                    ..closed(1, 1)
                },
                LoadKey::Rate,
            ),
            (
                Load {
                    rate: Some(2e7),
                    ..closed(1, 1)
                },
                LoadKey::Rate,
            ),
            (
                Load {
                    rate: Some(10.0),
                    slo: slo(),
                    ..closed(1, 1)
                },
                LoadKey::Rate,
            ),
            (
                Load {
                    io: IoMode::Uring,
                    coalesce: Coalesce::Auto,
                    ..closed(1, 1)
                },
                LoadKey::Io,
            ),
        ];
        for (load, key) in cases {
            let e = load.check(None).unwrap_err();
            assert_eq!(e.key, key, "{load:?}: {e}");
        }
        assert!(closed(2, 2).check(None).is_ok());
        // An open loop ignores coalescing; asked for explicitly, it is refused.
        let open = Load {
            slo: slo(),
            coalesce: Coalesce::Auto,
            ..closed(1, 1)
        };
        assert!(open.check(None).is_ok());
        let e = open.check_coalescing_closed_loop().unwrap_err();
        assert_eq!(e.key, LoadKey::Coalesce);
        // Over a Unix socket nothing is coalesced, so io_uring may wait.
        let unix = Load {
            io: IoMode::Uring,
            coalesce: Coalesce::Auto,
            ..closed(1, 1)
        };
        assert!(unix.check(Some(false)).is_ok());
        assert!(unix.check(Some(true)).is_err());
    }

    #[test]
    fn ramps_and_warm_ups_before_a_count_are_refused_where_asked() {
        let mut l = closed(1, 1);
        l.ramp = Duration::from_secs(2);
        let e = l.check_ramp_within_duration().unwrap_err();
        assert!(e.message.contains("longer than"), "{e}");
        l.duration = None;
        assert_eq!(
            l.check_ramp_within_duration().unwrap_err().message,
            "needs a duration, not a count"
        );
        l.ramp = Duration::ZERO;
        l.warmup = Duration::from_secs(1);
        assert_eq!(
            l.check_ramp_within_duration().unwrap_err().key,
            LoadKey::Warmup
        );
    }

    #[test]
    fn serializes_as_typed() {
        let l = Load {
            slo: Some("p99<10ms".parse().unwrap()),
            ..closed(2, 50)
        };
        let v = serde_json::to_value(&l).unwrap();
        assert_eq!(v["duration"], 1.0);
        assert_eq!(v["slo"], "p99<10ms");
        assert_eq!(v["arrivals"], "constant");
        assert_eq!(v["coalesce"], "off");
        assert_eq!(v["io"], "auto");
        assert!(v.get("netns").is_none());
    }
}
