//! `tare pg --init`: pgbench's tables, created and filled as `pgbench -i`
//! does, step by step (`-I`, default `dtgvp`: drop, create, generate,
//! vacuum, primary keys; `f` foreign keys), with pgbench 15's DDL, options
//! (`-F`, `--partitions`, `--partition-method`, `--unlogged-tables`,
//! tablespaces) and row counts: per unit of scale 1 branch, 10 tellers and
//! 100 000 accounts (pgbench.c `nbranches`, `ntellers`, `naccounts`).
//! Data is always generated server-side (`g` as `G`: docs/pg.md).

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

/// pgbench 15's `initCreateTables`: name, columns, whether `-F` applies.
const DDL: [(&str, &str, bool); 4] = [
    (
        "pgbench_history",
        "tid int,bid int,aid int,delta int,mtime timestamp,filler char(22)",
        false,
    ),
    (
        "pgbench_tellers",
        "tid int not null,bid int,tbalance int,filler char(84)",
        true,
    ),
    (
        "pgbench_accounts",
        "aid int not null,bid int,abalance int,filler char(84)",
        true,
    ),
    (
        "pgbench_branches",
        "bid int not null,bbalance int,filler char(88)",
        true,
    ),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionMethod {
    Range,
    Hash,
}

/// What `pgbench -i` is asked.
#[derive(Clone, Debug)]
pub struct InitOptions {
    pub scale: u32,
    /// `-I`: the steps, in order (`dtgGvpf`; spaces ignored).
    pub steps: String,
    pub fillfactor: u32,
    /// Partitions of pgbench_accounts (0: none).
    pub partitions: u32,
    pub partition_method: PartitionMethod,
    pub unlogged: bool,
    pub tablespace: Option<String>,
    pub index_tablespace: Option<String>,
}

impl InitOptions {
    pub fn new(scale: u32) -> InitOptions {
        InitOptions {
            scale,
            steps: "dtgvp".into(),
            fillfactor: 100,
            partitions: 0,
            partition_method: PartitionMethod::Range,
            unlogged: false,
            tablespace: None,
            index_tablespace: None,
        }
    }
}

/// Creates and fills the tables; `log` receives pgbench's progress lines.
pub fn init(
    conn: &ConnParams,
    opts: &InitOptions,
    timeout: Duration,
    log: &mut dyn FnMut(&str),
) -> Result<(), PgError> {
    let scale = opts.scale;
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
    let mut done = Vec::new();
    for step in opts.steps.chars().filter(|c| *c != ' ') {
        let (name, label, sqls) = match step {
            'd' => (
                "drop tables",
                "dropping old tables...".to_string(),
                vec![format!("drop table if exists {}", TABLES.join(", "))],
            ),
            't' => ("create tables", "creating tables...".into(), create(opts)),
            'g' | 'G' => (
                "server-side generate",
                "generating data (server-side)...".into(),
                generate(scale as u64),
            ),
            'v' => (
                "vacuum",
                "vacuuming...".into(),
                TABLES.iter().map(|t| format!("vacuum analyze {t}")).collect(),
            ),
            'p' => ("primary keys", "creating primary keys...".into(), keys(opts)),
            'f' => ("foreign keys", "creating foreign keys...".into(), foreign()),
            other => {
                return Err(PgError::Config(format!(
                    "unrecognized initialization step \"{other}\"; Allowed step characters are: \"dtgGvpf\"."
                )))
            }
        };
        log(&label);
        if step == 't' && opts.partitions > 0 {
            log(&format!("creating {} partitions...", opts.partitions));
        }
        let t = Instant::now();
        for sql in &sqls {
            s.query(sql)?;
        }
        done.push(format!("{name} {:.2} s", t.elapsed().as_secs_f64()));
    }
    log(&format!(
        "done in {:.2} s ({}).",
        begin.elapsed().as_secs_f64(),
        done.join(", ")
    ));
    Ok(())
}

/// `initCreateTables` and `createPartitions`.
fn create(o: &InitOptions) -> Vec<String> {
    let unlogged = if o.unlogged { " unlogged" } else { "" };
    let space = o
        .tablespace
        .as_ref()
        .map(|t| format!(" tablespace {t}"))
        .unwrap_or_default();
    let mut out = Vec::new();
    for (table, cols, ff) in DDL {
        let partitioned = table == "pgbench_accounts" && o.partitions > 0;
        let mut sql = format!("create{unlogged} table {table}({cols})");
        if partitioned {
            let how = match o.partition_method {
                PartitionMethod::Range => "range",
                PartitionMethod::Hash => "hash",
            };
            sql.push_str(&format!(" partition by {how} (aid)"));
        } else if ff {
            sql.push_str(&format!(" with (fillfactor={})", o.fillfactor));
        }
        sql.push_str(&space);
        out.push(sql);
    }
    let n = o.partitions as u64;
    let accounts = o.scale as u64 * 100_000;
    let part_size = accounts.div_ceil(n.max(1));
    for p in 1..=n {
        let bound = match o.partition_method {
            PartitionMethod::Range => {
                let from = if p == 1 {
                    "minvalue".to_string()
                } else {
                    ((p - 1) * part_size + 1).to_string()
                };
                let to = if p == n {
                    "maxvalue".to_string()
                } else {
                    (p * part_size + 1).to_string()
                };
                format!("for values from ({from}) to ({to})")
            }
            PartitionMethod::Hash => format!("for values with (modulus {n}, remainder {})", p - 1),
        };
        out.push(format!(
            "create{unlogged} table pgbench_accounts_{p} partition of pgbench_accounts {bound} with (fillfactor={}){space}",
            o.fillfactor
        ));
    }
    out
}

fn generate(n: u64) -> Vec<String> {
    vec![
        "begin".into(),
        "truncate table pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers".into(),
        format!("insert into pgbench_branches(bid,bbalance) select bid, 0 from generate_series(1, {n}) as bid"),
        format!("insert into pgbench_tellers(tid,bid,tbalance) select tid, (tid - 1) / 10 + 1, 0 from generate_series(1, {}) as tid", n * 10),
        format!("insert into pgbench_accounts(aid,bid,abalance,filler) select aid, (aid - 1) / 100000 + 1, 0, '' from generate_series(1, {}) as aid", n * 100_000),
        "commit".into(),
    ]
}

fn keys(o: &InitOptions) -> Vec<String> {
    let space = o
        .index_tablespace
        .as_ref()
        .map(|t| format!(" using index tablespace {t}"))
        .unwrap_or_default();
    [
        ("pgbench_branches", "bid"),
        ("pgbench_tellers", "tid"),
        ("pgbench_accounts", "aid"),
    ]
    .map(|(t, k)| format!("alter table {t} add primary key ({k}){space}"))
    .to_vec()
}

/// `initCreateFKeys`.
fn foreign() -> Vec<String> {
    [
        "alter table pgbench_tellers add constraint pgbench_tellers_bid_fkey foreign key (bid) references pgbench_branches",
        "alter table pgbench_accounts add constraint pgbench_accounts_bid_fkey foreign key (bid) references pgbench_branches",
        "alter table pgbench_history add constraint pgbench_history_bid_fkey foreign key (bid) references pgbench_branches",
        "alter table pgbench_history add constraint pgbench_history_tid_fkey foreign key (tid) references pgbench_tellers",
        "alter table pgbench_history add constraint pgbench_history_aid_fkey foreign key (aid) references pgbench_accounts",
    ]
    .map(String::from)
    .to_vec()
}
