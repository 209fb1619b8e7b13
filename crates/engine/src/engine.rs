//! [`Engine`]: what every load engine is to the code written once for all
//! of them: the find-max search ([`crate::find_max::find_max`]), the
//! command line's shared flags and the experiment runner. An engine is a
//! config holding the shared [`Load`] beside its own settings, and one run.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use tare_record::{LoadResult, Unit};

use crate::load::Load;

/// A load engine (`tare http`, `tare pg`), implemented by a unit type in
/// the engine's crate (`tare_http::Http`, `tare_pg::Pg`).
pub trait Engine {
    /// Everything one run needs: a [`Load`] and the engine's own settings.
    type Config: Clone;
    /// Why a run could not happen (failed requests are counted, not errors).
    type Error: std::error::Error + Send + Sync + 'static;
    /// `tare NAME`, the record's `engine`, `[load] engine = "NAME"`, and
    /// its worker threads' names, `tare-NAME-N` ([`crate::workers`]).
    const NAME: &'static str;
    /// What one completion is; every result it records says so.
    const UNIT: Unit;

    /// A latency in microseconds as the engine's text prints it (wrk's
    /// units, pgbench's milliseconds).
    fn format_time(us: f64) -> String;
    fn load(config: &Self::Config) -> &Load;
    fn load_mut(config: &mut Self::Config) -> &mut Load;
    /// No live display: runs that follow each other (a search's probes)
    /// print nothing between them.
    fn quiet(config: &mut Self::Config);
    /// One run of `config`, ending early with what was measured once
    /// `stop` is set.
    fn run(config: &Self::Config, stop: Arc<AtomicBool>) -> Result<LoadResult, Self::Error>;
}
