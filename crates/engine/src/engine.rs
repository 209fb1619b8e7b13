//! [`Engine`]: what every load engine is to the code written once for all
//! of them: the find-max search ([`crate::find_max::find_max`]), the
//! command line's shared flags and the experiment runner. An engine is a
//! config holding the shared [`Load`] beside its own settings, and one run.
//! What is the same for every engine is written here once, as provided
//! methods: reaching the config's [`Load`] ([`HoldsLoad`]), the shared
//! settings checked and spelt in the engine's words ([`Engine::SUBJECTS`]),
//! a run to its end.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use tare_record::{LoadResult, Unit};

use crate::load::{Load, LoadKey};

/// A config that holds the shared [`Load`] in a field called `load`
/// ([`holds_load!`](crate::holds_load) writes the two accessors).
pub trait HoldsLoad {
    fn shared_load(&self) -> &Load;
    fn shared_load_mut(&mut self) -> &mut Load;
}

/// `holds_load!(Config)`: `Config`'s field `load` is its shared [`Load`].
#[macro_export]
macro_rules! holds_load {
    ($config:ty) => {
        impl $crate::HoldsLoad for $config {
            fn shared_load(&self) -> &$crate::Load {
                &self.load
            }
            fn shared_load_mut(&mut self) -> &mut $crate::Load {
                &mut self.load
            }
        }
    };
}

/// A load engine (`tare http`, `tare pg`), implemented by a unit type in
/// the engine's crate (`tare_http::Http`, `tare_pg::Pg`).
pub trait Engine {
    /// Everything one run needs: a [`Load`] and the engine's own settings.
    type Config: Clone + HoldsLoad;
    /// Why a run could not happen (failed requests are counted, not errors).
    type Error: std::error::Error + Send + Sync + 'static;
    /// `tare NAME`, the record's `engine`, `[load] engine = "NAME"`, and
    /// its worker threads' names, `tare-NAME-N` ([`crate::workers`]).
    const NAME: &'static str;
    /// What one completion is; every result it records says so.
    const UNIT: Unit;
    /// The shared settings as the engine's command line spells them (its
    /// peer tool's flags, `clients (-c)`); a key not listed is its
    /// [`LoadKey::flag`].
    const SUBJECTS: &'static [(LoadKey, &'static str)] = &[];

    /// A latency in microseconds as the engine's text prints it (wrk's
    /// units; by default pgbench's and redis-benchmark's milliseconds).
    fn format_time(us: f64) -> String {
        format!("{:.3}ms", us / 1e3)
    }

    fn load(config: &Self::Config) -> &Load {
        config.shared_load()
    }

    fn load_mut(config: &mut Self::Config) -> &mut Load {
        config.shared_load_mut()
    }

    /// No live display: runs that follow each other (a search's probes)
    /// print nothing between them.
    fn quiet(config: &mut Self::Config);

    /// One run of `config`, ending early with what was measured once
    /// `stop` is set.
    fn run(config: &Self::Config, stop: Arc<AtomicBool>) -> Result<LoadResult, Self::Error>;

    /// One run of `config` to its end.
    fn run_to_end(config: &Self::Config) -> Result<LoadResult, Self::Error> {
        Self::run(config, Arc::new(AtomicBool::new(false)))
    }

    /// A shared setting as the engine spells it ([`Engine::SUBJECTS`]).
    fn subject(key: LoadKey) -> &'static str {
        Self::SUBJECTS
            .iter()
            .find(|(k, _)| *k == key)
            .map_or_else(|| key.flag(), |(_, s)| s)
    }

    /// [`Load::check`] (`tcp`: the target is a TCP address), the error in
    /// the engine's words.
    fn check_load(load: &Load, tcp: bool) -> Result<(), String> {
        load.check(Some(tcp))
            .map_err(|e| e.with_subject(Self::subject(e.key)))
    }

    /// [`Load::check_ramp_within_duration`] in the engine's words;
    /// `unbounded`: what a ramp or warm-up of a count-bounded run is told
    /// (`needs a duration (-T)`).
    fn check_ramp(load: &Load, unbounded: &str) -> Result<(), String> {
        load.check_ramp_within_duration()
            .map_err(|e| match load.duration {
                None => format!("{} {unbounded}", Self::subject(e.key)),
                Some(_) => e.with_subject(Self::subject(e.key)),
            })
    }
}
