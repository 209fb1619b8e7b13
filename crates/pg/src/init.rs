//! `tare pg --init -s SCALE`: pgbench's tables, created and filled as
//! `pgbench -i -I dtGvp` does (drop, create, server-side generate, vacuum,
//! primary keys), with pgbench 15's DDL and row counts: per unit of scale
//! 1 branch, 10 tellers and 100 000 accounts (pgbench.c `nbranches`,
//! `ntellers`, `naccounts`).

use std::time::{Duration, Instant};

use crate::conninfo::ConnParams;
use crate::error::PgError;
use crate::session::Session;

const TABLES: [&str; 4] = [
    "pgbench_accounts",
    "pgbench_branches",
    "pgbench_history",
    "pgbench_tellers",
];

/// pgbench 15's `initCreateTables`, with its default fillfactor of 100.
const DDL: [&str; 4] = [
    "create table pgbench_history(tid int,bid int,aid int,delta int,mtime timestamp,filler char(22))",
    "create table pgbench_tellers(tid int not null,bid int,tbalance int,filler char(84)) with (fillfactor=100)",
    "create table pgbench_accounts(aid int not null,bid int,abalance int,filler char(84)) with (fillfactor=100)",
    "create table pgbench_branches(bid int not null,bbalance int,filler char(88)) with (fillfactor=100)",
];

/// Creates and fills the tables; `log` receives pgbench's progress lines.
pub fn init(
    conn: &ConnParams,
    scale: u32,
    timeout: Duration,
    log: &mut dyn FnMut(&str),
) -> Result<(), PgError> {
    if scale == 0 {
        return Err(PgError::Config("invalid scaling factor: 0".into()));
    }
    // 100 000 accounts per unit in an int column: pgbench's limit too.
    if scale as u64 * 100_000 > i32::MAX as u64 {
        return Err(PgError::Config(format!(
            "scale {scale} is too large (at most 21474)"
        )));
    }
    let mut s = Session::connect(conn, timeout)?;
    let begin = Instant::now();
    let mut steps = Vec::new();
    let mut step = |name: &str, s: &mut Session, sqls: &[String]| -> Result<(), PgError> {
        let t = Instant::now();
        for sql in sqls {
            s.query(sql)?;
        }
        steps.push(format!("{name} {:.2} s", t.elapsed().as_secs_f64()));
        Ok(())
    };
    log("dropping old tables...");
    step(
        "drop tables",
        &mut s,
        &[format!("drop table if exists {}", TABLES.join(", "))],
    )?;
    log("creating tables...");
    step("create tables", &mut s, &DDL.map(String::from))?;
    log("generating data (server-side)...");
    let n = scale as u64;
    step(
        "server-side generate",
        &mut s,
        &[
            "begin".into(),
            "truncate table pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers".into(),
            format!("insert into pgbench_branches(bid,bbalance) select bid, 0 from generate_series(1, {n}) as bid"),
            format!("insert into pgbench_tellers(tid,bid,tbalance) select tid, (tid - 1) / 10 + 1, 0 from generate_series(1, {}) as tid", n * 10),
            format!("insert into pgbench_accounts(aid,bid,abalance,filler) select aid, (aid - 1) / 100000 + 1, 0, '' from generate_series(1, {}) as aid", n * 100_000),
            "commit".into(),
        ],
    )?;
    log("vacuuming...");
    step(
        "vacuum",
        &mut s,
        &[
            "pgbench_branches",
            "pgbench_tellers",
            "pgbench_accounts",
            "pgbench_history",
        ]
        .map(|t| format!("vacuum analyze {t}")),
    )?;
    log("creating primary keys...");
    step(
        "primary keys",
        &mut s,
        &[
            "alter table pgbench_branches add primary key (bid)".into(),
            "alter table pgbench_tellers add primary key (tid)".into(),
            "alter table pgbench_accounts add primary key (aid)".into(),
        ],
    )?;
    log(&format!(
        "done in {:.2} s ({}).",
        begin.elapsed().as_secs_f64(),
        steps.join(", ")
    ));
    Ok(())
}
