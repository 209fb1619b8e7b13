//! `engine = "mysql"` (the default for a mariadb target): `[load.mysql]`
//! and runs of `tare_mysql`.
//!
//! ```toml
//! [load.mysql]
//! test = "oltp_read_only"  # oltp_read_only, oltp_read_write, oltp_point_select, oltp_write_only
//! tables = 1               # sysbench's --tables
//! table_size = 10000       # --table-size
//! protocol = "prepared"    # prepared (--db-ps-mode=auto) or text (disable)
//! rand_type = "special"    # --rand-type
//! user = "sbtest"          # --mysql-user, --mysql-password, --mysql-db
//! password = ""
//! database = "sbtest"
//! ```
//!
//! `[load] connections` are sysbench's `--threads`. The tables are made
//! (as `tare mysql prepare` makes them) before a deployment's first load
//! when they are not there, outside every measured period. `[load]
//! timeout` bounds connecting and each statement's reply.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use tare_engine::bounds;

use serde::{Deserialize, Serialize};
use tare_engine::load::Load;
use tare_mysql::admin::Admin;
use tare_mysql::{Login, Mysql, MysqlConfig, RandType, Workload};
use tare_record::LoadResult;
use toml::Spanned;

use super::{
    experiment_defaults, measure, no_nul, table_of, ExperimentEngine, Kind, Offer, Spans, Table,
};
use crate::executor::ExecError;
use crate::experiment::error::{ExperimentError, Locator};

pub(super) struct MysqlEngine;

/// `[load.mysql]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMysql {
    test: Option<Spanned<String>>,
    tables: Option<Spanned<i64>>,
    table_size: Option<Spanned<i64>>,
    protocol: Option<Spanned<String>>,
    rand_type: Option<Spanned<String>>,
    user: Option<Spanned<String>>,
    password: Option<Spanned<String>>,
    database: Option<Spanned<String>>,
}

/// `[load.mysql]`, checked.
#[derive(Clone, Debug, PartialEq, Serialize)]
struct MysqlTable {
    test: String,
    tables: u32,
    table_size: u32,
    protocol: String,
    rand_type: String,
    user: String,
    database: String,
    #[serde(skip)]
    password: String,
    #[serde(skip)]
    workload: Workload,
    #[serde(skip)]
    rand: RandType,
}

impl ExperimentEngine for MysqlEngine {
    fn kind(&self) -> Kind {
        Kind::of::<Mysql>()
    }

    /// The shared defaults with sysbench's patience: a statement may take
    /// up to 10 s (a range scan on a loaded server).
    fn defaults(&self) -> Load {
        Load {
            timeout: tare_mysql::config::DEFAULT_TIMEOUT,
            ..experiment_defaults()
        }
    }

    fn table(
        &self,
        loc: &Locator<'_>,
        _load: &mut Load,
        _spans: &mut Spans,
    ) -> Result<Arc<dyn Table>, ExperimentError> {
        let raw: RawMysql = table_of(loc, self.name())?.unwrap_or_default();
        let workload = match &raw.test {
            Some(t) => Workload::parse(t.get_ref())
                .map_err(|e| loc.error(t.span(), "load.mysql.test", e))?,
            None => Workload::ReadOnly,
        };
        let rand = match &raw.rand_type {
            Some(t) => RandType::parse(t.get_ref())
                .map_err(|e| loc.error(t.span(), "load.mysql.rand_type", e))?,
            None => RandType::Special,
        };
        let prepared = match &raw.protocol {
            Some(p) => match p.get_ref().as_str() {
                "prepared" => true,
                "text" => false,
                _ => {
                    return Err(loc.error(
                        p.span(),
                        "load.mysql.protocol",
                        "must be \"prepared\" or \"text\"",
                    ))
                }
            },
            None => true,
        };
        // The bounds `tare mysql --tables --table-size` has too.
        let int = |v: &Option<Spanned<i64>>, key: &str, default: u32, max: u32| {
            v.as_ref().map_or(Ok(default), |v| {
                let n = *v.get_ref();
                u32::try_from(n)
                    .ok()
                    .filter(|n| (1..=max).contains(n))
                    .ok_or_else(|| loc.error(v.span(), key, format!("must be between 1 and {max}")))
            })
        };
        let text = |v: &Option<Spanned<String>>, key: &str, default: &str| match v {
            Some(v) => no_nul(loc, v, key).map(|()| v.get_ref().clone()),
            None => Ok(default.to_string()),
        };
        Ok(Arc::new(MysqlTable {
            test: workload.name().into(),
            tables: int(&raw.tables, "load.mysql.tables", 1, bounds::MAX_TABLES)?,
            table_size: int(
                &raw.table_size,
                "load.mysql.table_size",
                tare_mysql::config::DEFAULT_TABLE_SIZE,
                bounds::MAX_TABLE_SIZE,
            )?,
            protocol: if prepared { "prepared" } else { "text" }.into(),
            rand_type: rand.name().into(),
            user: text(
                &raw.user,
                "load.mysql.user",
                tare_mysql::config::DEFAULT_USER,
            )?,
            password: text(&raw.password, "load.mysql.password", "")?,
            database: text(
                &raw.database,
                "load.mysql.database",
                tare_mysql::config::DEFAULT_DB,
            )?,
            workload,
            rand,
        }))
    }
}

impl MysqlTable {
    fn login(&self) -> Login {
        Login {
            user: self.user.clone(),
            password: self.password.clone(),
            db: Some(self.database.clone()),
        }
    }
}

impl Table for MysqlTable {
    fn run(
        &self,
        load: &Load,
        offer: &Offer<'_>,
        stop: &Arc<AtomicBool>,
    ) -> Result<LoadResult, ExecError> {
        let admin = Admin {
            endpoint: offer.endpoint.clone(),
            login: self.login(),
            tables: self.tables,
            table_size: self.table_size,
            threads: 2,
            storage_engine: "innodb".into(),
            schema: tare_mysql::Schema::default(),
            rand: self.rand,
            seed: 1,
            timeout: load.timeout.max(Duration::from_secs(10)),
            netns: offer.netns.map(Into::into),
            allow_remote: true,
        };
        admin
            .prepare_if_missing(&mut std::io::sink())
            .map_err(ExecError::new)?;
        let mut cfg = MysqlConfig::new(offer.endpoint.clone());
        cfg.load = load.clone();
        cfg.login = self.login();
        cfg.workload = self.workload;
        cfg.tables = self.tables;
        cfg.table_size = self.table_size;
        cfg.rand = self.rand;
        cfg.prepared = self.protocol == "prepared";
        // The deployment is a server tare started (loopback, namespace or container).
        cfg.allow_remote = true;
        measure::<Mysql>(&cfg, stop)
    }
}

#[cfg(test)]
mod tests {
    use crate::experiment::Experiment;

    fn parse(table: &str) -> Result<Experiment, String> {
        super::super::parse_with_table("mariadb", "mysql", table)
    }

    #[test]
    fn the_table_and_its_defaults_are_recorded() {
        let e = parse("").unwrap();
        let snap = e.load.snapshot();
        assert_eq!(snap["engine"], "mysql");
        assert_eq!(snap["mysql"]["test"], "oltp_read_only");
        assert_eq!(snap["mysql"]["table_size"], 10000);
        assert_eq!(snap["mysql"]["protocol"], "prepared");
        let e = parse(
            "test = \"oltp_write_only\"\ntables = 4\nprotocol = \"text\"\npassword = \"x\"\n",
        )
        .unwrap();
        let snap = e.load.snapshot();
        assert_eq!(snap["mysql"]["test"], "oltp_write_only");
        assert_eq!(snap["mysql"]["tables"], 4);
        assert_eq!(snap["mysql"]["protocol"], "text");
        assert!(snap["mysql"].get("password").is_none(), "never recorded");
    }

    #[test]
    fn mistakes_name_their_line_and_key() {
        super::super::assert_refused_at_line_6(
            parse,
            &[
                ("test = \"bogus\"\n", "load.mysql.test"),
                ("tables = 0\n", "load.mysql.tables"),
                ("table_size = -1\n", "load.mysql.table_size"),
                ("protocol = \"binary\"\n", "load.mysql.protocol"),
                ("rand_type = \"zipf\"\n", "load.mysql.rand_type"),
            ],
        );
    }
}
