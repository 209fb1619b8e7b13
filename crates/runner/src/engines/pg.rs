//! `engine = "pg"` (the default for a postgres target): `[load.pg]` and
//! runs of `tare_pg`.
//!
//! ```toml
//! [load.pg]
//! mode = "prepared"       # simple, extended or prepared (pgbench -M)
//! script = "SELECT 1;"    # run as one transaction
//! reconnect = false       # true: a new connection per transaction (pgbench -C)
//! coalesce = "off"        # off, auto or a pause (closed loop, not with reconnect)
//! user = "postgres"
//! database = "postgres"
//! ```
//!
//! `[load] timeout` bounds establishing a connection (pg has no
//! per-transaction timeout; default 10 s, libpq's habit). `[load] ramp`
//! comes before the measured period and may not outlast it.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tare_engine::load::{Load, LoadKey};
use tare_engine::Coalesce;
use tare_pg::{Pg, PgConfig, QueryMode, ScriptSource, ScriptSpec};
use tare_record::LoadResult;
use toml::Spanned;

use super::{
    experiment_defaults, measure, no_nul, table_of, ExperimentEngine, Kind, Offer, Spans, Table,
};
use crate::executor::ExecError;
use crate::experiment::error::{ExperimentError, Locator};

pub(super) struct PgEngine;

/// `[load.pg]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPg {
    mode: Option<Spanned<String>>,
    script: Option<Spanned<String>>,
    reconnect: Option<bool>,
    coalesce: Option<Spanned<String>>,
    user: Option<Spanned<String>>,
    database: Option<Spanned<String>>,
}

/// `[load.pg]`, checked.
#[derive(Clone, Debug, PartialEq, Serialize)]
struct PgTable {
    #[serde(serialize_with = "mode_name")]
    mode: QueryMode,
    /// SQL run as one transaction.
    script: String,
    /// A new connection per transaction (pgbench `-C`).
    reconnect: bool,
    user: String,
    database: String,
}

fn mode_name<S: serde::Serializer>(mode: &QueryMode, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(mode.name())
}

impl ExperimentEngine for PgEngine {
    fn kind(&self) -> Kind {
        Kind::of::<Pg>()
    }

    /// The experiment's defaults, with tare pg's connect timeout.
    fn defaults(&self) -> Load {
        Load {
            timeout: Duration::from_secs(10),
            ..experiment_defaults()
        }
    }

    fn table(
        &self,
        loc: &Locator<'_>,
        load: &mut Load,
        spans: &mut Spans,
    ) -> Result<Arc<dyn Table>, ExperimentError> {
        let raw: RawPg = table_of(loc, self.name())?.unwrap_or_default();
        let mode = match &raw.mode {
            None => QueryMode::Prepared,
            Some(m) => m.get_ref().parse().map_err(|_| {
                loc.error(
                    m.span(),
                    "load.pg.mode",
                    "must be simple, extended or prepared",
                )
            })?,
        };
        let text = |v: &Option<Spanned<String>>, key: &str, default: &str| {
            v.as_ref().map_or(Ok(default.to_string()), |v| {
                no_nul(loc, v, key).map(|()| v.get_ref().clone())
            })
        };
        let script = text(&raw.script, "load.pg.script", "SELECT 1;")?;
        // A NUL would cut the start-up message's field short (tare pg
        // refuses it too; here the error names the file's line).
        let user = text(&raw.user, "load.pg.user", "postgres")?;
        let database = text(&raw.database, "load.pg.database", "postgres")?;
        let reconnect = raw.reconnect.unwrap_or(false);
        if let Some(c) = &raw.coalesce {
            load.coalesce = c
                .get_ref()
                .parse::<Coalesce>()
                .map_err(|e| loc.error(c.span(), "load.pg.coalesce", e))?;
            spans.set(LoadKey::Coalesce, c.span(), "load.pg.coalesce");
            if load.coalesce != Coalesce::Off && reconnect {
                return Err(loc.error(
                    c.span(),
                    "load.pg.coalesce",
                    "not with reconnect: connecting takes several round trips",
                ));
            }
        }
        // pg measures after its ramp, which may not outlast the measured period.
        load.check_ramp_within_duration().map_err(|e| {
            let (span, key) = spans.of(e.key);
            loc.error(span, &key, format!("{} (pg)", e.message))
        })?;
        Ok(Arc::new(PgTable {
            mode,
            script,
            reconnect,
            user,
            database,
        }))
    }
}

impl Table for PgTable {
    fn run(
        &self,
        load: &Load,
        offer: &Offer<'_>,
        stop: &Arc<AtomicBool>,
    ) -> Result<LoadResult, ExecError> {
        let mut cfg = PgConfig::new(offer.endpoint.clone(), &self.user, &self.database);
        cfg.load = load.clone();
        // The run is bounded by `load.duration`, not by a count.
        cfg.transactions = None;
        cfg.mode = self.mode;
        cfg.scripts = vec![ScriptSpec {
            source: ScriptSource::Text {
                name: "experiment".into(),
                text: self.script.clone(),
            },
            weight: 1,
        }];
        cfg.connect_per_transaction = self.reconnect;
        // The deployment is a cluster tare started (loopback, namespace or container).
        cfg.allow_remote = true;
        cfg.vacuum = false;
        measure::<Pg>(&cfg, stop)
    }
}

#[cfg(test)]
mod tests {
    use crate::experiment::Experiment;

    fn parse(table: &str) -> Result<Experiment, String> {
        super::super::parse_with_table("postgres", "pg", table)
    }

    /// Regression: `[load.pg] user = "a\u0000"` panicked in tare pg's
    /// start-up (`expect`); it is now one line naming the file, line and key.
    #[test]
    fn pg_user_with_a_nul_byte_is_an_error_not_a_panic() {
        let e = parse("user = \"a\\u0000\"\n").unwrap_err();
        assert_eq!(e, "exp.toml:6:8: `load.pg.user`: contains a NUL byte");
        super::super::assert_refused_at_line_6(
            parse,
            &[
                ("database = \"d\\u0000\"\n", "load.pg.database"),
                ("script = \"select 1;\\u0000\"\n", "load.pg.script"),
                ("mode = \"fast\"\n", "load.pg.mode"),
            ],
        );
    }

    #[test]
    fn the_table_and_its_defaults_are_recorded() {
        let e = parse("").unwrap();
        let snap = e.load.snapshot();
        assert_eq!(snap["engine"], "pg");
        assert_eq!(snap["timeout"], 10.0, "the connect timeout");
        assert_eq!(snap["pg"]["mode"], "prepared");
        assert_eq!(snap["pg"]["user"], "postgres");
        assert!(snap.get("http").is_none());
    }
}
