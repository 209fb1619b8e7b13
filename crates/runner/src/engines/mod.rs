//! The load engines as experiments use them: one object-safe trait
//! ([`ExperimentEngine`]), one file per engine, and [`REGISTRY`], the one place that
//! lists them. `[load] engine = "NAME"` picks from it; the runner never
//! names an engine anywhere else.
//!
//! An engine file owns its table `[load.NAME]` (typed, every mistake an
//! error with file, line and key), its defaults, its cross-field checks, and
//! how the shared [`Load`], its table and what a deployment offers become a
//! run. What every engine does the same way is here: reading a table out of
//! the document with its spans ([`table_of`]), the warm-up as a plain closed
//! loop ([`run`]), the one find-max search ([`measure`]).

mod external;
mod http;
mod mysql;
mod net;
mod pg;
mod redis;
mod tool;

use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use serde::de::{DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::Deserializer as _;
use tare_engine::find_max::{find_max, Budget};
use tare_engine::load::{Load, LoadKey};
use tare_engine::{workers, Endpoint};
use tare_record::LoadResult;

use crate::executor::ExecError;
use crate::experiment::error::{ExperimentError, Locator};
use crate::experiment::LoadSettings;

/// Every engine an experiment can name, once.
pub(crate) static REGISTRY: &[&dyn ExperimentEngine] = &[
    &http::HttpEngine,
    &pg::PgEngine,
    &redis::RedisEngine,
    &mysql::MysqlEngine,
    &net::NetEngine,
    &tool::ToolEngine,
    &external::ExternalEngine,
];

/// The registered engine called `name`.
pub(crate) fn by_name(name: &str) -> Option<&'static dyn ExperimentEngine> {
    REGISTRY.iter().copied().find(|e| e.name() == name)
}

/// The registered names, in registry order (for error messages).
pub(crate) fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|e| e.name()).collect()
}

/// What an experiment engine is called and counts.
pub struct Kind {
    /// `[load] engine = "NAME"`, its table `[load.NAME]`, the record's
    /// `engine`.
    pub name: &'static str,
    /// What one completion is (the records' `unit`).
    pub unit: tare_record::Unit,
}

impl Kind {
    /// The name and unit of an engine of tare's own.
    pub(crate) fn of<E: tare_engine::Engine>() -> Kind {
        Kind {
            name: E::NAME,
            unit: E::UNIT,
        }
    }
}

/// A load engine, as the experiment runner uses it.
pub trait ExperimentEngine: Sync {
    /// Its name and unit.
    fn kind(&self) -> Kind;

    /// `[load] engine = "NAME"`, its table `[load.NAME]`, the record's
    /// `engine`.
    fn name(&self) -> &'static str {
        self.kind().name
    }

    /// What one completion is (the records' `unit`).
    fn unit(&self) -> tare_record::Unit {
        self.kind().unit
    }

    /// The shared settings an experiment starts from (its `[load]` keys
    /// override them).
    fn defaults(&self) -> Load;

    /// Reads and checks `[load.NAME]` (absent: its defaults). A table key
    /// that is a shared setting (`coalesce`) is set on `load`, with its
    /// place in `spans`, so the shared checks can point at it.
    fn table(
        &self,
        loc: &Locator<'_>,
        load: &mut Load,
        spans: &mut Spans,
    ) -> Result<Arc<dyn Table>, ExperimentError>;

    /// Whether it may load a target whose protocol is another engine's:
    /// the external engine runs whatever tool the experiment names, and
    /// the tool, not tare, speaks to the server.
    fn loads_any_target(&self) -> bool {
        false
    }

    /// The prefix of its worker threads' names: the monitor follows them.
    fn thread_prefix(&self) -> String {
        workers::thread_prefix(self.name())
    }
}

impl fmt::Debug for dyn ExperimentEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A checked table as `plan.json` records it: its serde form.
pub trait Snapshot {
    fn snapshot(&self) -> serde_json::Value;
}

impl<T: serde::Serialize> Snapshot for T {
    fn snapshot(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// An engine's checked `[load.NAME]` table.
pub trait Table: fmt::Debug + Send + Sync + Snapshot {
    /// One run with `load` (threads already within the connections, the
    /// warm-up already done by the runner) against what the deployment
    /// offers.
    fn run(
        &self,
        load: &Load,
        offer: &Offer<'_>,
        stop: &Arc<AtomicBool>,
    ) -> Result<LoadResult, ExecError>;

    /// This table with the `workload` factor's `level` (canonical: lower
    /// case, tests joined by `+`) in place of what it sends; an engine
    /// without the notion refuses every level.
    fn with_workload(&self, level: &str) -> Result<Arc<dyn Table>, String> {
        let _ = level;
        Err("this engine has no workload factor".into())
    }

    /// The files the table read (a request mix's), as the run directory
    /// keeps them: each is copied there and hashed in the provenance.
    fn inputs(&self) -> Vec<crate::experiment::InputFile> {
        Vec::new()
    }

    /// The program that makes the load when it is not tare's own threads
    /// (the external engine's tool): the monitor watches it by name.
    fn generator_process(&self) -> Option<&'static str> {
        None
    }

    /// Readies the server before a trial's warm-up (the runner's thread is
    /// already in the client's namespace): what was done, or `None`.
    fn prepare(&self, load: &Load, offer: &Offer<'_>) -> Result<Option<String>, ExecError> {
        let _ = (load, offer);
        Ok(None)
    }
}

/// What a deployment offers an engine.
pub struct Offer<'a> {
    /// Where the load goes: loopback, a namespace or a container tare
    /// created (ARCHITECTURE.md, "Principles": loopback only by default).
    pub endpoint: &'a Endpoint,
    /// The served resource's URL (for postgres, a `postgres://` URL of the
    /// same endpoint).
    pub url: String,
    /// The network namespace a client must load from, when the placement puts
    /// the client on another "machine".
    pub netns: Option<&'a std::path::Path>,
}

/// Where each shared setting was written, for errors that name its line
/// and key; a setting not written points at `[load]`.
pub struct Spans {
    whole: Range<usize>,
    at: Vec<(LoadKey, Range<usize>, String)>,
}

impl Spans {
    pub(crate) fn new(whole: Range<usize>) -> Spans {
        Spans {
            whole,
            at: Vec::new(),
        }
    }

    /// `key` was written at `span`, under the experiment key `name`.
    pub fn set(&mut self, key: LoadKey, span: Range<usize>, name: impl Into<String>) {
        self.at.push((key, span, name.into()));
    }

    /// The place and experiment key of `key`.
    pub fn of(&self, key: LoadKey) -> (Range<usize>, String) {
        self.at
            .iter()
            .rev()
            .find(|(k, _, _)| *k == key)
            .map(|(_, span, name)| (span.clone(), name.clone()))
            .unwrap_or_else(|| (self.whole.clone(), format!("load.{}", key.name())))
    }
}

/// The load a run gets: threads within the connections (a cell's
/// `connections` level may be below `[load] threads`; pgbench and wrk
/// would refuse or shrink them, the runner shrinks them).
pub(crate) fn effective(load: &Load) -> Load {
    let mut l = load.clone();
    l.threads = l.threads.min(l.connections).max(1);
    l
}

/// One load of a deployed cell. `measure: false` is the warm-up: a plain
/// closed loop of `settings`' warm-up length, whatever the measured load's
/// schedule. The runner's warm-up is its own run, so no engine repeats it.
pub(crate) fn run(
    settings: &LoadSettings,
    measure: bool,
    offer: &Offer<'_>,
    stop: &Arc<AtomicBool>,
) -> Result<LoadResult, ExecError> {
    let mut load = effective(&settings.shared);
    load.netns = offer.netns.map(Into::into);
    load.warmup = Duration::ZERO;
    if !measure {
        load.rate = None;
        load.ramp = Duration::ZERO;
        load.slo = None;
    }
    let mut result = settings.table.run(&load, offer, stop)?;
    result.generator_cpus = generator_cpus(load.cpus.as_ref());
    Ok(result)
}

/// The CPUs a generator's threads can use on the machine this runs on
/// (`tare agent load` on a remote host counts its host's): its `[cpus]
/// generator` list within this process's affinity, else the affinity.
/// The verdict judges the generator against these, not against the
/// monitored machine's (docs/remote.md, "Monitored where it runs").
fn generator_cpus(pinned: Option<&tare_engine::cpu::CpuList>) -> u32 {
    let allowed = tare_engine::cpu::CpuList::allowed()
        .map(|a| a.cpus().to_vec())
        .unwrap_or_default();
    let within = pinned
        .map(|p| p.cpus().iter().filter(|c| allowed.contains(c)).count())
        .unwrap_or(0);
    if within > 0 {
        within as u32
    } else {
        allowed.len() as u32
    }
}

/// Readies a deployed cell for a trial ([`Table::prepare`]), from the
/// client's network namespace when the placement puts the client on
/// another "machine" (a thread of its own enters it).
pub(crate) fn prepare(
    settings: &LoadSettings,
    offer: &Offer<'_>,
) -> Result<Option<String>, ExecError> {
    let Some(ns) = offer.netns else {
        return settings.table.prepare(&settings.shared, offer);
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            tare_engine::netns::enter(ns).map_err(ExecError::new)?;
            settings.table.prepare(&settings.shared, offer)
        })
        .join()
        .unwrap_or_else(|_| Err(ExecError::new("preparing the server panicked")))
    })
}

/// Open-loop probes a `load.slo` trial may run (beside the capacity probe
/// and the confirmation): a trial stays within ~8 load durations.
const FIND_MAX_RUNS: usize = 6;

/// Runs `config` once, or with an slo, searches the highest rate meeting it
/// and records the confirming run at that rate (its `schedule.target_rate`
/// is the answer): the one search every engine's experiments use.
pub(crate) fn measure<E: tare_engine::Engine>(
    config: &E::Config,
    stop: &Arc<AtomicBool>,
) -> Result<LoadResult, ExecError> {
    let Some(slo) = &E::load(config).slo else {
        return E::run(config, stop.clone()).map_err(ExecError::new);
    };
    let found = find_max::<E>(config, Budget::runs(FIND_MAX_RUNS), stop).map_err(ExecError::new)?;
    found.best.ok_or_else(|| {
        ExecError::new(format!(
            "no rate met {slo} (closed-loop capacity {:.0}/s)",
            found.capacity_rps
        ))
    })
}

/// Deserializes `[load.<name>]` of the experiment's text into `T`; `None`
/// when absent.
pub(crate) fn table_of<T: DeserializeOwned>(
    loc: &Locator<'_>,
    name: &str,
) -> Result<Option<T>, ExperimentError> {
    value_at(loc, &["load", name])
}

/// Deserializes the value at `path` (table names from the top) of the
/// experiment's text into `T`, straight from the TOML, so `toml::Spanned`
/// fields keep their spans and toml's errors point at the line; `None`
/// when absent.
pub(crate) fn value_at<T: DeserializeOwned>(
    loc: &Locator<'_>,
    path: &[&str],
) -> Result<Option<T>, ExperimentError> {
    toml::de::Deserializer::new(loc.text)
        .deserialize_map(At::<T> {
            path,
            found: PhantomData,
        })
        .map_err(|e| loc.toml_error(&e))
}

/// The shared settings an experiment starts from, whatever its engine:
/// short trials (3 s after a 1 s warm-up) at 50 connections over 2 threads.
pub(crate) fn experiment_defaults() -> Load {
    Load {
        threads: 2,
        connections: 50,
        duration: Some(Duration::from_secs(3)),
        warmup: Duration::from_secs(1),
        timeout: Duration::from_secs(2),
        ..Load::default()
    }
}

/// A seed that walks tables down `path` and deserializes what is there.
struct At<'p, T> {
    path: &'p [&'p str],
    found: PhantomData<T>,
}

impl<'de, T: DeserializeOwned> DeserializeSeed<'de> for At<'_, T> {
    type Value = Option<T>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, T: DeserializeOwned> Visitor<'de> for At<'_, T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a table with {}", self.path.join("."))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<String>()? {
            if key != self.path[0] {
                map.next_value::<IgnoredAny>()?;
            } else if self.path.len() == 1 {
                found = Some(map.next_value::<T>()?);
            } else {
                found = map.next_value_seed(At::<T> {
                    path: &self.path[1..],
                    found: PhantomData,
                })?;
            }
        }
        Ok(found)
    }
}

/// A string key of an engine's table that must hold no NUL byte (it would
/// end a C string or a protocol field early): the error names its line.
pub(crate) fn no_nul(
    loc: &Locator<'_>,
    value: &toml::Spanned<String>,
    key: &str,
) -> Result<(), ExperimentError> {
    if value.get_ref().contains('\0') {
        return Err(loc.error(value.span(), key, "contains a NUL byte"));
    }
    Ok(())
}

/// An experiment for `target` whose `[load.<engine>]` table is `table`, parsed
/// as `exp.toml` (the engines' tests).
#[cfg(test)]
pub(crate) fn parse_with_table(
    target: &str,
    engine: &str,
    table: &str,
) -> Result<crate::experiment::Experiment, String> {
    use crate::experiment::{ConfigSource, Experiment};
    let text = format!(
        "[target]\nkind = \"{target}\"\n[load]\nduration = \"2s\"\n[load.{engine}]\n{table}"
    );
    Experiment::parse(
        &text,
        std::path::Path::new("exp.toml"),
        &ConfigSource::RelativeTo(".".into()),
    )
    .map_err(|e| e.to_string())
}

/// Each `(table, key)` case, parsed by `parse`, is refused by an error
/// on line 6 (the table's first line) that names `key` (the engines'
/// tests).
#[cfg(test)]
pub(crate) fn assert_refused_at_line_6(
    parse: impl Fn(&str) -> Result<crate::experiment::Experiment, String>,
    cases: &[(&str, &str)],
) {
    for (table, key) in cases {
        let e = parse(table).unwrap_err();
        assert!(
            e.starts_with("exp.toml:6:") && e.contains(&format!("`{key}`")),
            "{table}: {e}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_engine_is_registered_once_by_name() {
        let names = names();
        let mut unique = names.clone();
        unique.dedup();
        assert_eq!(names, unique);
        for n in names {
            assert_eq!(by_name(n).unwrap().name(), n);
            assert_eq!(by_name(n).unwrap().thread_prefix(), format!("tare-{n}-"));
        }
        assert!(by_name("smtp").is_none());
    }

    /// A target's engine is how an experiment loads it by default: each must
    /// be registered, or loading an experiment for it would fail.
    #[test]
    fn every_target_speaks_a_registered_engine() {
        for t in tare_deploy::TargetKind::all().map(tare_deploy::TargetKind::target) {
            assert!(
                by_name(t.engine()).is_some(),
                "{}: {}",
                t.name(),
                t.engine()
            );
        }
        for p in tare_deploy::Protocol::ALL {
            assert!(by_name(p.engine()).is_some(), "{p}");
        }
    }

    #[derive(serde::Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        a: toml::Spanned<i64>,
    }

    #[test]
    fn a_table_is_read_with_its_spans_and_its_mistakes_located() {
        let text = "[target]\nkind = 1\n[load]\nx = 2\n[load.t]\na = 5\n";
        let loc = Locator {
            file: std::path::Path::new("e.toml"),
            text,
            inputs: None,
        };
        let t: Inner = table_of(&loc, "t").unwrap().unwrap();
        assert_eq!(*t.a.get_ref(), 5);
        assert_eq!(&text[t.a.span()], "5");
        assert_eq!(table_of::<Inner>(&loc, "u").unwrap(), None);
        let bad = text.replace("a = 5", "a = 5\nb = 6");
        let loc = Locator {
            file: std::path::Path::new("e.toml"),
            text: &bad,
            inputs: None,
        };
        let e = table_of::<Inner>(&loc, "t").unwrap_err().to_string();
        assert!(e.starts_with("e.toml:7:1: `b`: unknown field `b`"), "{e}");
    }
}
