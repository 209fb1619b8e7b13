//! `engine = "redis"` (the default for a redis target): `[load.redis]` and
//! runs of `tare_redis`.
//!
//! ```toml
//! [load.redis]
//! tests = ["get"]         # redis-benchmark's -t names; several take turns on every connection
//!                         # (or vary them: [factors] workload = ["get", "set"])
//! command = ["SET", "key:__rand_int__", "v"]   # instead of tests: one custom command
//! data_size = 3           # -d: bytes of each value
//! keyspace = 100000       # -r: keys drawn from this many (absent: one key)
//! pipeline = 1            # -P: commands sent at once per connection
//! coalesce = "off"        # off, auto or a pause: batched wake-ups (closed loop, TCP)
//! ```
//!
//! `[load] timeout` bounds connecting and each command's reply. Before each
//! trial's warm-up the server is emptied (`FLUSHALL`) and, for GET, every
//! key it may read stored, for the LRANGE tests the list they read filled
//! (`tare_redis::prepare`), as seed 002 did between runs; the trial
//! records it (`prepared`).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tare_engine::load::{Load, LoadKey};
use tare_record::LoadResult;
use tare_redis::config::{MAX_DATA_SIZE, MAX_PIPELINE};
use tare_redis::{Preparation, Redis, RedisConfig, Test, Workload};
use toml::Spanned;

use super::{experiment_defaults, measure, table_of, ExperimentEngine, Kind, Offer, Spans, Table};
use crate::executor::ExecError;
use crate::experiment::error::{ExperimentError, Locator};

pub(super) struct RedisEngine;

/// `[load.redis]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRedis {
    tests: Option<Spanned<Vec<String>>>,
    command: Option<Spanned<Vec<String>>>,
    data_size: Option<Spanned<i64>>,
    keyspace: Option<Spanned<i64>>,
    pipeline: Option<Spanned<i64>>,
    coalesce: Option<Spanned<String>>,
}

/// `[load.redis]`, checked.
#[derive(Clone, Debug, PartialEq, Serialize)]
struct RedisTable {
    /// The tests' names, or the custom command's words.
    tests: Vec<String>,
    #[serde(skip)]
    workloads: Vec<Workload>,
    data_size: usize,
    keyspace: Option<u64>,
    pipeline: usize,
}

impl ExperimentEngine for RedisEngine {
    fn kind(&self) -> Kind {
        Kind::of::<Redis>()
    }

    fn defaults(&self) -> Load {
        experiment_defaults()
    }

    fn table(
        &self,
        loc: &Locator<'_>,
        load: &mut Load,
        spans: &mut Spans,
    ) -> Result<Arc<dyn Table>, ExperimentError> {
        let raw: RawRedis = table_of(loc, self.name())?.unwrap_or_default();
        if let Some(c) = &raw.coalesce {
            load.coalesce = c
                .get_ref()
                .parse()
                .map_err(|e| loc.error(c.span(), "load.redis.coalesce", e))?;
            spans.set(LoadKey::Coalesce, c.span(), "load.redis.coalesce");
        }
        let workloads = match (&raw.tests, &raw.command) {
            (Some(t), Some(_)) => {
                return Err(loc.error(
                    t.span(),
                    "load.redis.tests",
                    "give tests or a command, not both",
                ))
            }
            (None, Some(c)) => {
                if c.get_ref().is_empty() || c.get_ref().iter().any(|w| w.contains('\0')) {
                    return Err(loc.error(
                        c.span(),
                        "load.redis.command",
                        "must be a non-empty list of words without NUL bytes",
                    ));
                }
                vec![Workload::Custom(c.get_ref().clone())]
            }
            (Some(t), None) => {
                if t.get_ref().is_empty() {
                    return Err(loc.error(t.span(), "load.redis.tests", "lists no test"));
                }
                t.get_ref()
                    .iter()
                    .map(|n| n.parse::<Test>().map(Workload::Test))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| loc.error(t.span(), "load.redis.tests", e))?
            }
            (None, None) => vec![Workload::Test(Test::Get)],
        };
        let int = |v: &Option<Spanned<i64>>, key: &str, lo: i64, hi: i64| {
            v.as_ref()
                .map(|v| {
                    let n = *v.get_ref();
                    if (lo..=hi).contains(&n) {
                        Ok(n)
                    } else {
                        Err(loc.error(v.span(), key, format!("must be between {lo} and {hi}")))
                    }
                })
                .transpose()
        };
        let data_size = int(
            &raw.data_size,
            "load.redis.data_size",
            0,
            MAX_DATA_SIZE as i64,
        )?
        .unwrap_or(tare_redis::config::DEFAULT_DATA_SIZE as i64) as usize;
        let keyspace = int(&raw.keyspace, "load.redis.keyspace", 1, i64::MAX)?.map(|n| n as u64);
        let pipeline = int(&raw.pipeline, "load.redis.pipeline", 1, MAX_PIPELINE as i64)?
            .unwrap_or(1) as usize;
        let table = RedisTable {
            tests: workloads.iter().map(Workload::name).collect(),
            workloads,
            data_size,
            keyspace,
            pipeline,
        };
        if let Err(e) = table.preparation().check() {
            let span = raw
                .keyspace
                .as_ref()
                .or(raw.data_size.as_ref())
                .map_or(0..0, |v| v.span());
            return Err(loc.error(span, "load.redis", e));
        }
        Ok(Arc::new(table))
    }
}

impl RedisTable {
    fn preparation(&self) -> Preparation<'_> {
        Preparation {
            workloads: &self.workloads,
            data_size: self.data_size,
            keyspace: self.keyspace,
        }
    }
}

impl Table for RedisTable {
    fn run(
        &self,
        load: &Load,
        offer: &Offer<'_>,
        stop: &Arc<AtomicBool>,
    ) -> Result<LoadResult, ExecError> {
        let mut cfg = RedisConfig::new(offer.endpoint.clone());
        cfg.load = load.clone();
        cfg.workloads = self.workloads.clone();
        cfg.data_size = self.data_size;
        cfg.keyspace = self.keyspace;
        cfg.pipeline = self.pipeline;
        // The deployment is a server tare started (loopback, namespace or container).
        cfg.allow_remote = true;
        measure::<Redis>(&cfg, stop)
    }

    /// A level is one of redis-benchmark's test names, or several joined
    /// by `+` taking turns on every connection (`set+get`).
    fn with_workload(&self, level: &str) -> Result<Arc<dyn Table>, String> {
        let workloads = level
            .split('+')
            .map(|n| n.parse::<Test>().map(Workload::Test))
            .collect::<Result<Vec<_>, _>>()?;
        let table = RedisTable {
            tests: workloads.iter().map(Workload::name).collect(),
            workloads,
            ..self.clone()
        };
        table.preparation().check()?;
        Ok(Arc::new(table))
    }

    fn prepare(&self, load: &Load, offer: &Offer<'_>) -> Result<Option<String>, ExecError> {
        self.preparation()
            .apply(offer.endpoint, load.timeout)
            .map(Some)
            .map_err(ExecError::new)
    }
}

#[cfg(test)]
mod tests {
    use crate::experiment::Experiment;

    fn parse(table: &str) -> Result<Experiment, String> {
        super::super::parse_with_table("redis", "redis", table)
    }

    #[test]
    fn the_table_and_its_defaults_are_recorded() {
        let e = parse("").unwrap();
        let snap = e.load.snapshot();
        assert_eq!(snap["engine"], "redis");
        assert_eq!(snap["redis"]["tests"][0], "get");
        assert_eq!(snap["redis"]["pipeline"], 1);
        let e = parse(
            "tests = [\"get\", \"set\"]\nkeyspace = 100000\ndata_size = 50\ncoalesce = \"auto\"\n",
        )
        .unwrap();
        assert_eq!(e.load.shared.coalesce, tare_engine::Coalesce::Auto);
        let snap = e.load.snapshot();
        assert_eq!(snap["redis"]["tests"][1], "set");
        assert_eq!(snap["redis"]["keyspace"], 100000);
        assert_eq!(snap["redis"]["data_size"], 50);
    }

    fn experiment(factors: &str) -> Result<Experiment, String> {
        let text = format!(
            "[target]\nkind = \"redis\"\n[factors]\n{factors}\n[load]\nduration = \"2s\"\n[load.redis]\ntests = [\"get\", \"set\"]\nkeyspace = 1000\n"
        );
        Experiment::parse(
            &text,
            std::path::Path::new("exp.toml"),
            &crate::experiment::ConfigSource::RelativeTo(".".into()),
        )
        .map_err(|e| e.to_string())
    }

    /// GET and SET as levels of a factor (seed 002 ran them one after the
    /// other): each cell sends only its own, the rest of the table kept.
    #[test]
    fn workload_levels_replace_the_tests_of_each_cell() {
        let e = experiment("workload = [\"GET\", \"set\", \"set+get\"]\nconnections = [1, 10]")
            .unwrap();
        assert_eq!(e.cells.len(), 6);
        let tests = |i: usize| {
            let s = e.cells[i].load_settings(&e.load).table.snapshot();
            (s["tests"].clone(), s["keyspace"].clone())
        };
        assert_eq!(e.cells[0].id, "workload=get,connections=1");
        assert_eq!(tests(0), (serde_json::json!(["get"]), 1000.into()));
        assert_eq!(tests(3), (serde_json::json!(["set"]), 1000.into()));
        assert_eq!(tests(5).0, serde_json::json!(["set", "get"]));
        let err = experiment("workload = [\"get\", \"gte\"]").unwrap_err();
        assert!(
            err.starts_with("exp.toml:4:")
                && err.contains("`factors.workload`")
                && err.contains("gte"),
            "{err}"
        );
    }

    #[test]
    fn an_engine_without_workloads_refuses_the_factor() {
        let text = "[target]\nkind = \"tare-serve\"\n[factors]\nworkload = [\"get\"]\n[load]\n";
        let err = Experiment::parse(
            text,
            std::path::Path::new("exp.toml"),
            &crate::experiment::ConfigSource::RelativeTo(".".into()),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("has no workload factor (engine http)"),
            "{err}"
        );
    }

    #[test]
    fn mistakes_name_their_line_and_key() {
        super::super::assert_refused_at_line_6(
            parse,
            &[
                ("tests = [\"bogus\"]\n", "load.redis.tests"),
                ("tests = []\n", "load.redis.tests"),
                ("pipeline = 0\n", "load.redis.pipeline"),
                ("keyspace = 0\n", "load.redis.keyspace"),
                ("command = []\n", "load.redis.command"),
                ("coalesce = \"soon\"\n", "load.redis.coalesce"),
                (
                    "tests = [\"get\"]\ncommand = [\"PING\"]\n",
                    "load.redis.tests",
                ),
            ],
        );
    }
}
