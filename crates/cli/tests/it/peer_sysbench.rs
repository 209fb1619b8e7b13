//! sysbench 1.0.20's own cases for its OLTP scripts, MySQL driver,
//! options and commands (its tests/t/*.t cram files, rewritten here),
//! replayed against a MariaDB the test starts, with sysbench (to prove
//! each case) and with `tare mysql`: the exit status, the lines sysbench
//! prints (run-dependent numbers aside), and the server-side effect (the
//! tables and rows `prepare` leaves, each statement kind's count per
//! transaction from the server's `Com_*` counters). `TARE_BIN` runs the
//! cases against another tare binary (an older build, to count what it
//! passed).
//!
//! Tables hold 1,000 rows instead of sysbench's 10,000 (the suite's time);
//! docs/mysql.md lists the cases left out and tare's deliberate
//! differences (its banner, no "Threads fairness" block, exit status 2 on
//! bad input).

use std::collections::BTreeMap;
use std::process::Output;
use std::time::Duration;

use tare_engine::Endpoint;
use tare_mysql::session::Session;
use tare_mysql::Login;
use tare_testbed::MariaDb;

use crate::support::peer::{assert_cases_pass, bounded, has_lines, text, Case, Check, Tool};

const ROWS: u32 = 1000;

struct Ctx {
    server: MariaDb,
}

impl Ctx {
    fn session(&self) -> Session {
        let login = Login {
            user: "tare".into(),
            password: MariaDb::PASSWORD.into(),
            db: Some("sbtest".into()),
        };
        Session::connect(
            &Endpoint::Tcp(self.server.addr()),
            &login,
            Duration::from_secs(10),
        )
        .expect("the test's MariaDB answers")
    }

    /// `tool TEST --mysql-...=... ARGS`: sysbench's or tare's command line,
    /// the same words.
    fn run(&self, tool: Tool, test: &str, args: &[&str]) -> Output {
        let mut c = tool.command("sysbench", "mysql");
        c.arg(test)
            .arg("--mysql-host=127.0.0.1")
            .arg(format!("--mysql-port={}", self.server.port))
            .args(["--mysql-user=sbtest", "--mysql-db=sbtest"])
            .arg(format!("--table-size={ROWS}"))
            .args(args);
        bounded(c, Duration::from_secs(120))
    }

    /// The tables `sbtest*` dropped: every case starts from none.
    fn drop_tables(&self) {
        let mut s = self.session();
        for t in 1..=9 {
            s.query(&format!("DROP TABLE IF EXISTS sbtest{t}"))
                .expect("DROP TABLE");
        }
        s.quit();
    }

    /// `SHOW CREATE TABLE`, or `None` when the table does not exist.
    fn create_table(&self, t: u32) -> Option<String> {
        let mut s = self.session();
        let r = s.query(&format!("SHOW CREATE TABLE sbtest{t}")).ok()?;
        s.quit();
        r.rows.into_iter().next()?.into_iter().nth(1).flatten()
    }

    fn value(&self, sql: &str) -> String {
        let mut s = self.session();
        let v = s.value(sql).expect(sql).unwrap_or_default();
        s.quit();
        v
    }

    fn com(&self) -> BTreeMap<String, u64> {
        let mut s = self.session();
        let v = s.global_status().expect("SHOW GLOBAL STATUS");
        s.quit();
        v
    }
}

fn succeeded(o: &Output) -> Result<String, String> {
    if o.status.success() {
        Ok(text(&o.stdout))
    } else {
        Err(format!(
            "exit {:?}: {}{}",
            o.status.code(),
            text(&o.stdout),
            text(&o.stderr)
        ))
    }
}

fn lines(want: &[&str]) -> Vec<String> {
    want.iter().map(|s| s.to_string()).collect()
}

/// The messages of a one-thread `prepare` of `tables` tables.
fn prepare_lines(tables: u32, index: bool) -> Vec<String> {
    let mut v = Vec::new();
    for t in 1..=tables {
        v.push(format!("Creating table 'sbtest{t}'..."));
        v.push(format!("Inserting {ROWS} records into 'sbtest{t}'"));
        if index {
            v.push(format!("Creating a secondary index on 'sbtest{t}'..."));
        }
    }
    v
}

/// Table `t` as sysbench makes it: its columns, keys, engine and rows.
fn table_is(ctx: &Ctx, t: u32, engine: &str, index: bool, auto_inc: bool) -> Check {
    let ddl = ctx
        .create_table(t)
        .ok_or_else(|| format!("no table sbtest{t}"))?;
    let mut want = vec![
        "`k` int(11) NOT NULL DEFAULT 0".to_string(),
        "`c` char(120) NOT NULL DEFAULT ''".to_string(),
        "`pad` char(60) NOT NULL DEFAULT ''".to_string(),
        "PRIMARY KEY (`id`)".to_string(),
        format!("ENGINE={engine}"),
    ];
    if auto_inc {
        want.push("`id` int(11) NOT NULL AUTO_INCREMENT".into());
        want.push(format!("AUTO_INCREMENT={}", ROWS + 1));
    } else {
        want.push("`id` int(11) NOT NULL,".into());
    }
    for w in &want {
        if !ddl.contains(w.as_str()) {
            return Err(format!("sbtest{t}: no {w:?} in {ddl}"));
        }
    }
    if ddl.contains(&format!("KEY `k_{t}` (`k`)")) != index {
        return Err(format!(
            "sbtest{t}: index k_{t} should be there: {index}: {ddl}"
        ));
    }
    let rows = ctx.value(&format!("SELECT COUNT(*) FROM sbtest{t}"));
    let max = ctx.value(&format!("SELECT MAX(id) FROM sbtest{t}"));
    if rows != ROWS.to_string() || max != ROWS.to_string() {
        return Err(format!("sbtest{t}: {rows} rows, ids up to {max}"));
    }
    Ok(())
}

fn tables_are(ctx: &Ctx, n: u32, engine: &str) -> Check {
    for t in 1..=n {
        table_is(ctx, t, engine, true, true)?;
    }
    match ctx.create_table(n + 1) {
        None => Ok(()),
        Some(_) => Err(format!("sbtest{} exists", n + 1)),
    }
}

/// `script_oltp_common.sh`'s first part with MyISAM: a one-thread
/// prepare of 8 tables, prewarm, cleanup.
fn case_prepare_prewarm_cleanup(ctx: &Ctx, tool: Tool) -> Check {
    let args = [
        "--db-driver=mysql",
        "--mysql-storage-engine=myisam",
        "--tables=8",
        "--threads=1",
    ];
    let with = |cmd: &'static str| [&args[..], &[cmd]].concat();
    let out = succeeded(&ctx.run(tool, "oltp_read_write", &with("prepare")))?;
    has_lines(&out, &prepare_lines(8, true))?;
    tables_are(ctx, 8, "MyISAM")?;
    let out = succeeded(&ctx.run(tool, "oltp_read_write", &with("prewarm")))?;
    has_lines(
        &out,
        &(1..=8)
            .map(|t| format!("Prewarming table sbtest{t}"))
            .collect::<Vec<_>>(),
    )?;
    let out = succeeded(&ctx.run(tool, "oltp_read_write", &with("cleanup")))?;
    has_lines(
        &out,
        &(1..=8)
            .map(|t| format!("Dropping table 'sbtest{t}'..."))
            .collect::<Vec<_>>(),
    )?;
    match (1..=8).find(|&t| ctx.create_table(t).is_some()) {
        Some(t) => Err(format!("sbtest{t} is still there")),
        None => Ok(()),
    }
}

/// Statement kinds per transaction, from the server's `Com_*` deltas
/// over a run of `events` transactions.
fn per_transaction(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
    events: u64,
) -> BTreeMap<&'static str, u64> {
    let d = |k: &str| after.get(k).unwrap_or(&0) - before.get(k).unwrap_or(&0);
    [
        "Com_select",
        "Com_update",
        "Com_delete",
        "Com_insert",
        "Com_begin",
        "Com_commit",
    ]
    .into_iter()
    .map(|k| (k, d(k) / events))
    .collect()
}

fn counts_are(got: &BTreeMap<&'static str, u64>, want: [u64; 6]) -> Check {
    let got_v: Vec<u64> = got.values().copied().collect();
    // BTreeMap order: begin, commit, delete, insert, select, update.
    let want_v = vec![want[4], want[5], want[2], want[3], want[0], want[1]];
    if got_v == want_v {
        Ok(())
    } else {
        Err(format!(
            "statements per transaction {got:?}, not select {} update {} delete {} insert {} begin {} commit {}",
            want[0], want[1], want[2], want[3], want[4], want[5]
        ))
    }
}

/// The SQL statistics block of a run of `events` transactions.
fn statistics(events: u64, r: u64, w: u64, o: u64) -> Vec<String> {
    let total = r + w + o;
    let mut v = lines(&["SQL statistics:", "    queries performed:"]);
    v.push(format!("        read:                            {r}"));
    v.push(format!("        write:                           {w}"));
    v.push(format!("        other:                           {o}"));
    v.push(format!("        total:                           {total}"));
    v.push(format!(
        "    transactions:                        {events:<6} (* per sec.)"
    ));
    v.push(format!(
        "    queries:                             {total:<6} (* per sec.)"
    ));
    v.extend(lines(&[
        "    ignored errors:                      0      (* per sec.)",
        "    reconnects:                          0      (* per sec.)",
        "",
        "General statistics:",
        "    total time:                          *s",
    ]));
    v.push(format!("    total number of events:              {events}"));
    v.extend(lines(&[
        "Latency (ms):",
        "         min:  *.*",
        "         avg:  *.*",
        "         max:  *.*",
        "         95th percentile:  *.*",
        "         sum: *.*",
    ]));
    v
}

/// Prepares `tables` tables with sysbench (the run cases' common start).
/// What `tool TEST ARGS` printed, and the server's counters before and
/// after it.
type Counted = (String, BTreeMap<String, u64>, BTreeMap<String, u64>);

fn counted(ctx: &Ctx, tool: Tool, test: &str, args: &[&str]) -> Result<Counted, String> {
    let before = ctx.com();
    let out = succeeded(&ctx.run(tool, test, args))?;
    Ok((out, before, ctx.com()))
}

fn prepare(ctx: &Ctx, tables: &str) -> Check {
    succeeded(&ctx.run(Tool::Peer, "oltp_read_write", &[tables, "prepare"])).map(drop)
}

/// `script_oltp_common.sh`'s second part: a parallel prepare of 8
/// tables, then `--events=100` of oltp_read_write with `--threads=2`
/// overridden by a later `--threads=1` (as the read/write test writes it).
fn case_read_write_run(ctx: &Ctx, tool: Tool) -> Check {
    let args = ["--tables=8", "--threads=2", "--threads=1"];
    succeeded(&ctx.run(tool, "oltp_read_write", &[&args[..], &["prepare"]].concat()))?;
    tables_are(ctx, 8, "InnoDB")?;
    let (out, before, after) = counted(
        ctx,
        tool,
        "oltp_read_write",
        &[&["--events=100"], &args[..], &["run"]].concat(),
    )?;
    let mut want = lines(&[
        "Running the test with following options:",
        "Number of threads: 1",
        "Initializing random number generator from current time",
        "",
        "",
        "Initializing worker threads...",
        "",
        "Threads started!",
        "",
    ]);
    want.extend(statistics(100, 1400, 400, 200));
    has_lines(&out, &want)?;
    counts_are(&per_transaction(&before, &after, 100), [14, 2, 1, 1, 1, 1])
}

/// oltp_point_select with two threads: one autocommit SELECT each.
fn case_point_select_run(ctx: &Ctx, tool: Tool) -> Check {
    prepare(ctx, "--tables=8")?;
    let (out, before, after) = counted(
        ctx,
        tool,
        "oltp_point_select",
        &["--events=100", "--tables=8", "--threads=2", "run"],
    )?;
    let mut want = lines(&["Number of threads: 2"]);
    want.extend(statistics(100, 100, 0, 0));
    has_lines(&out, &want)?;
    counts_are(&per_transaction(&before, &after, 100), [1, 0, 0, 0, 0, 0])
}

/// `--create-secondary=off`: no index on `k`, and no message about it.
fn case_create_secondary_off(ctx: &Ctx, tool: Tool) -> Check {
    let out = succeeded(&ctx.run(
        tool,
        "oltp_read_write",
        &["--create-secondary=off", "--tables=1", "prepare"],
    ))?;
    if out.contains("Creating a secondary index") {
        return Err(format!("an index message in:\n{out}"));
    }
    has_lines(&out, &prepare_lines(1, false))?;
    table_is(ctx, 1, "InnoDB", false, true)
}

/// `--auto-inc=off --verbosity=1`: ids 1..N written by the client, no
/// AUTO_INCREMENT, and only the tables' messages printed.
fn case_auto_inc_off(ctx: &Ctx, tool: Tool) -> Check {
    let args = ["--tables=1", "--auto-inc=off", "--verbosity=1"];
    let with = |cmd: &'static str| [&args[..], &[cmd]].concat();
    let out = succeeded(&ctx.run(tool, "oltp_read_write", &with("prepare")))?;
    if out.lines().filter(|l| !l.is_empty()).count() != 3 {
        return Err(format!("more than the table's messages:\n{out}"));
    }
    has_lines(&out, &prepare_lines(1, true))?;
    table_is(ctx, 1, "InnoDB", true, false)?;
    let out = succeeded(&ctx.run(
        tool,
        "oltp_read_write",
        &[&["--events=20"], &with("run")[..]].concat(),
    ))?;
    if !out.trim().is_empty() {
        return Err(format!("run printed at --verbosity=1:\n{out}"));
    }
    let out = succeeded(&ctx.run(tool, "oltp_read_write", &with("cleanup")))?;
    if out.trim() != "Dropping table 'sbtest1'..." {
        return Err(format!("cleanup printed:\n{out}"));
    }
    Ok(())
}

/// `--secondary=on`: `id` has a plain index instead of the primary key.
fn case_secondary(ctx: &Ctx, tool: Tool) -> Check {
    succeeded(&ctx.run(
        tool,
        "oltp_read_only",
        &["--secondary=on", "--tables=1", "prepare"],
    ))?;
    let ddl = ctx.create_table(1).ok_or("no table sbtest1")?;
    if !ddl.contains("KEY `xid` (`id`)") || ddl.contains("PRIMARY KEY") {
        return Err(format!("not an xid key: {ddl}"));
    }
    Ok(())
}

/// A script's path names its test; `oltp_read_only` is 14 selects in
/// BEGIN/COMMIT.
fn case_script_path(ctx: &Ctx, tool: Tool) -> Check {
    prepare(ctx, "--tables=2")?;
    let (_, before, after) = counted(
        ctx,
        tool,
        "/usr/share/sysbench/oltp_read_only.lua",
        &["--events=50", "--tables=2", "run"],
    )?;
    counts_are(&per_transaction(&before, &after, 50), [14, 0, 0, 0, 1, 1])
}

/// `--skip-trx=on`: autocommit, no BEGIN/COMMIT; and the retried errors
/// and the driver named as sysbench's options name them.
fn case_skip_trx(ctx: &Ctx, tool: Tool) -> Check {
    prepare(ctx, "--tables=1")?;
    let (out, before, after) = counted(
        ctx,
        tool,
        "oltp_read_only",
        &[
            "--events=50",
            "--skip-trx=on",
            "--mysql-ignore-errors=1213,1020,1205",
            "--db-driver=mysql",
            "run",
        ],
    )?;
    has_lines(&out, &statistics(50, 700, 0, 0))?;
    counts_are(&per_transaction(&before, &after, 50), [14, 0, 0, 0, 0, 0])
}

/// `--range-selects=off`: only the point selects.
fn case_range_selects_off(ctx: &Ctx, tool: Tool) -> Check {
    prepare(ctx, "--tables=1")?;
    let (out, before, after) = counted(
        ctx,
        tool,
        "oltp_read_only",
        &["--events=50", "--range-selects=off", "run"],
    )?;
    has_lines(&out, &statistics(50, 500, 0, 100))?;
    counts_are(&per_transaction(&before, &after, 50), [10, 0, 0, 0, 1, 1])
}

/// `--report-interval=1`: announced, then a line a second on stdout.
fn case_report_interval(ctx: &Ctx, tool: Tool) -> Check {
    prepare(ctx, "--tables=1")?;
    let out = succeeded(&ctx.run(
        tool,
        "oltp_read_write",
        &["--time=3", "--events=0", "--report-interval=1", "run"],
    ))?;
    has_lines(
        &out,
        &lines(&[
            "Report intermediate results every 1 second(s)",
            "[ 2s ] thds: 1 tps: * qps: * (r/w/o: */*/*) lat (ms,95%): *.* err/s: 0.00 reconn/s: 0.00",
        ]),
    )
}

/// `--rand-seed` and `--rate` as the header tells them.
fn case_seed_and_rate(ctx: &Ctx, tool: Tool) -> Check {
    prepare(ctx, "--tables=1")?;
    let out = succeeded(&ctx.run(
        tool,
        "oltp_point_select",
        &["--events=20", "--rate=100", "--rand-seed=7", "run"],
    ))?;
    has_lines(
        &out,
        &lines(&[
            "Number of threads: 1",
            "Target transaction rate: 100/sec",
            "Initializing random number generator from seed (7).",
            "    total number of events:              20",
        ]),
    )
}

/// `SCRIPT help`: the script's options, each with its default.
fn case_help(ctx: &Ctx, tool: Tool) -> Check {
    let out = succeeded(&ctx.run(tool, "/usr/share/sysbench/oltp_read_write.lua", &["help"]))?;
    has_lines(
        &out,
        &lines(&[
            "oltp_read_write.lua options:",
            "  --auto_inc[=on|off] * Use AUTO_INCREMENT column as Primary Key (for MySQL), or its alternatives in other DBMS. When disabled, use client-generated IDs [on]",
            "  --create_secondary[=on|off] * Create a secondary index in addition to the PRIMARY KEY [on]",
            "  --delete_inserts=N * Number of DELETE/INSERT combinations per transaction [1]",
            "  --point_selects=N * Number of point SELECT queries per transaction [10]",
            "  --range_selects[=on|off] * Enable/disable all range SELECT queries [on]",
            "  --secondary[=on|off] * Use a secondary index in place of the PRIMARY KEY [off]",
            "  --skip_trx[=on|off] * Don't start explicit transactions and execute all queries in the AUTOCOMMIT mode [off]",
            "  --table_size=N * Number of rows per table [10000]",
            "  --tables=N * Number of tables [1]",
        ]),
    )
}

/// An unknown test: a non-zero exit naming it.
fn case_unknown_test(ctx: &Ctx, tool: Tool) -> Check {
    let o = ctx.run(tool, "foo", &["run"]);
    let all = format!("{}{}", text(&o.stdout), text(&o.stderr));
    if o.status.success() || !all.contains("'foo'") && !all.contains("\"foo\"") {
        return Err(format!("exit {:?}: {all}", o.status.code()));
    }
    Ok(())
}

const CASES: [Case<Ctx>; 13] = [
    (
        "oltp_read_write MyISAM: prepare, prewarm, cleanup",
        case_prepare_prewarm_cleanup,
    ),
    (
        "oltp_read_write InnoDB: parallel prepare, --events=100 run, repeated --threads",
        case_read_write_run,
    ),
    ("oltp_point_select: --threads=2 run", case_point_select_run),
    ("--create-secondary=off", case_create_secondary_off),
    ("--auto-inc=off --verbosity=1", case_auto_inc_off),
    ("--secondary=on", case_secondary),
    ("a script path", case_script_path),
    (
        "--skip-trx=on, --mysql-ignore-errors, --db-driver",
        case_skip_trx,
    ),
    ("--range-selects=off", case_range_selects_off),
    ("--report-interval=1", case_report_interval),
    ("--rand-seed and --rate", case_seed_and_rate),
    ("SCRIPT help", case_help),
    ("an unknown test", case_unknown_test),
];

#[test]
fn sysbench_cases_pass_with_the_peer_and_tare() {
    let ctx = Ctx {
        server: MariaDb::start(),
    };
    assert_cases_pass(&ctx, &CASES, Ctx::drop_tables, "sysbench");
}
