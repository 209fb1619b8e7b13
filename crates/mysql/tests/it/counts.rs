//! tare mysql against a real MariaDB (tare_testbed::MariaDb): `prepare`
//! makes sysbench's tables, every run's counts equal the server's own
//! (`Com_commit`, `Questions`) over TCP and a Unix socket, in the binary
//! and text protocols, with lock wait timeouts retried; a wrong password,
//! an unknown database or missing tables is one line; `cleanup` drops the
//! tables; a killed server ends the run with its results kept.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tare_engine::Endpoint;
use tare_mysql::admin::Admin;
use tare_mysql::session::Session;
use tare_mysql::{Login, MysqlConfig, RandType, Workload};
use tare_record::LoadResult;
use tare_testbed::MariaDb;

const TABLES: u32 = 2;
const ROWS: u32 = 2000;

fn sbtest() -> Login {
    Login {
        user: "sbtest".into(),
        password: String::new(),
        db: Some("sbtest".into()),
    }
}

fn admin(ep: &Endpoint) -> Admin {
    Admin {
        endpoint: ep.clone(),
        login: sbtest(),
        tables: TABLES,
        table_size: ROWS,
        threads: 2,
        storage_engine: "innodb".into(),
        schema: tare_mysql::Schema::default(),
        rand: RandType::Special,
        seed: 1,
        timeout: Duration::from_secs(10),
        netns: None,
        allow_remote: false,
    }
}

fn config(ep: &Endpoint, workload: Workload) -> MysqlConfig {
    let mut cfg = MysqlConfig::new(ep.clone());
    cfg.workload = workload;
    cfg.tables = TABLES;
    cfg.table_size = ROWS;
    cfg.load.connections = 4;
    cfg.load.threads = 2;
    cfg.load.duration = None;
    cfg.seed = Some(7);
    cfg
}

/// The test's own session, as user `tare`.
struct Watcher {
    s: Session,
    /// Statements the last `settled` sent after its first (each counts
    /// in `Questions`).
    shows: u64,
}

impl Watcher {
    fn new(m: &MariaDb) -> Watcher {
        let login = Login {
            user: "tare".into(),
            password: MariaDb::PASSWORD.into(),
            db: None,
        };
        let s = Session::connect(&Endpoint::Tcp(m.addr()), &login, Duration::from_secs(10))
            .expect("the test's session logs in");
        Watcher { s, shows: 0 }
    }

    /// The status once every other session has gone (their COM_QUIT is
    /// counted when the server reads it, after the client returned).
    fn settled(&mut self) -> BTreeMap<String, u64> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut shows = 0;
        let mut last = None;
        loop {
            let st = self.s.global_status().unwrap();
            shows += 1;
            // Alone, and nothing but this session's own SHOW since the last look.
            let quiet = last.is_some_and(|q| st["Questions"] == q + 1);
            if (st["Threads_connected"] == 1 && quiet) || Instant::now() > deadline {
                self.shows = shows;
                return st;
            }
            last = Some(st["Questions"]);
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn queries(r: &LoadResult) -> u64 {
    let d = r.mysql.as_ref().unwrap();
    d.reads + d.writes + d.other
}

/// Runs `cfg` and checks the server counted what tare did.
fn run_and_check(w: &mut Watcher, cfg: &MysqlConfig) -> LoadResult {
    let before = w.settled();
    let r = tare_mysql::run(cfg).unwrap_or_else(|e| panic!("{}: {e}", cfg.workload.name()));
    let after = w.settled();
    let delta = |k: &str| after[k] - before[k];
    let d = r.mysql.as_ref().unwrap();
    let what = format!("{} over {}", d.workload, r.transport);
    assert_eq!(r.errors.total(), 0, "{what}: {:?} {d:?}", r.errors);
    assert_eq!(r.requests, cfg.events.unwrap(), "{what}");
    if cfg.workload != Workload::PointSelect {
        assert_eq!(delta("Com_commit"), r.requests, "{what}: Com_commit");
    }
    assert_eq!(
        delta("Questions"),
        queries(&r) + d.ignored_errors + r.errors.status + d.untimed_commands + w.shows,
        "{what}: Questions ({d:?})"
    );
    let executes = if d.protocol == "prepared" {
        queries(&r) - delta("Com_rollback")
    } else {
        0
    };
    assert_eq!(
        delta("Com_stmt_execute"),
        executes,
        "{what}: Com_stmt_execute"
    );
    r
}

#[test]
fn prepare_run_and_cleanup_match_the_server() {
    let m = MariaDb::start();
    let tcp = Endpoint::Tcp(m.addr());
    let unix = Endpoint::Unix(m.socket.clone());
    let mut w = Watcher::new(&m);

    // prepare: sysbench's tables, rows and index.
    let mut said = Vec::new();
    admin(&tcp).prepare(&mut said).unwrap();
    let said = String::from_utf8(said).unwrap();
    assert!(said.contains("Creating table 'sbtest2'..."), "{said}");
    assert!(
        said.contains("Inserting 2000 records into 'sbtest1'"),
        "{said}"
    );
    for t in 1..=TABLES {
        let n =
            w.s.value(&format!("SELECT COUNT(*) FROM sbtest.sbtest{t}"))
                .unwrap();
        assert_eq!(n.as_deref(), Some("2000"));
        let idx =
            w.s.query(&format!(
                "SHOW INDEX FROM sbtest.sbtest{t} WHERE Key_name = 'k_{t}'"
            ))
            .unwrap();
        assert_eq!(idx.rows.len(), 1, "index k_{t}");
    }

    // Exact counts: binary protocol over TCP, text over the Unix socket,
    // under both waits (--io). One connection for read-write: InnoDB
    // deadlocks need two, and a retried statement is counted apart
    // (ignored_errors).
    for io in tare_testbed::io_modes() {
        let mut rw = config(&tcp, Workload::ReadWrite);
        rw.load.io = io;
        rw.load.connections = 1;
        rw.load.threads = 1;
        rw.events = Some(200);
        let r = run_and_check(&mut w, &rw);
        let d = r.mysql.as_ref().unwrap();
        assert_eq!(d.reads, 200 * 14);
        assert_eq!((d.writes, d.other), (200 * 4, 200 * 2), "no retries here");
        assert!(d.server_version.contains("MariaDB"), "{}", d.server_version);
        assert!(r.latency_us.max > 0.0);
        assert_eq!(r.wakeups.as_ref().unwrap().io, io.to_string());

        // Reads take no locks: four connections, exact counts. Ranges of
        // 500 rows (~65 KB) outgrow the 32 KB read buffers (and io_uring's
        // receive buffers), so replies are put together across reads.
        let mut ro = config(&unix, Workload::ReadOnly);
        ro.load.io = io;
        ro.mix.range_size = 500;
        ro.prepared = false;
        ro.events = Some(60);
        let r = run_and_check(&mut w, &ro);
        assert_eq!(r.mysql.as_ref().unwrap().reads, 60 * 14);
        assert_eq!(r.wakeups.as_ref().unwrap().io, io.to_string());

        let mut ps = config(&tcp, Workload::PointSelect);
        ps.load.io = io;
        ps.events = Some(300);
        run_and_check(&mut w, &ps);
    }

    // A time-bounded run: a COMMIT in flight at the deadline may count on
    // the server only.
    let before = w.settled();
    let mut timed = config(&tcp, Workload::ReadOnly);
    timed.load.duration = Some(Duration::from_millis(700));
    let r = tare_mysql::run(&timed).unwrap();
    let after = w.settled();
    let commits = after["Com_commit"] - before["Com_commit"];
    assert!(r.requests > 0);
    assert!(
        (r.requests..=r.requests + r.in_flight).contains(&commits),
        "{} transactions, {} in flight, Com_commit {commits}",
        r.requests,
        r.in_flight
    );

    // Lock wait timeouts are retried (sysbench's --mysql-ignore-errors)
    // and counted; the server still agrees.
    w.s.query("SET GLOBAL innodb_lock_wait_timeout = 1")
        .unwrap();
    let before = w.settled();
    w.s.query("BEGIN").unwrap();
    w.s.query("SELECT id FROM sbtest.sbtest1 FOR UPDATE")
        .unwrap();
    w.s.query("SELECT id FROM sbtest.sbtest2 FOR UPDATE")
        .unwrap();
    let release = std::thread::spawn({
        let login = Login {
            user: "tare".into(),
            password: MariaDb::PASSWORD.into(),
            db: None,
        };
        let ep = tcp.clone();
        move || {
            // A second session watches for the retries, then the test's
            // transaction ends below when this thread returns.
            let mut s = Session::connect(&ep, &login, Duration::from_secs(10)).unwrap();
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                let st = s.global_status().unwrap();
                if st["Com_rollback"] >= 1 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            s.quit();
        }
    });
    let mut wo = config(&tcp, Workload::WriteOnly);
    wo.load.connections = 2;
    wo.load.threads = 1;
    wo.events = Some(4);
    let handle = std::thread::spawn(move || tare_mysql::run(&wo));
    release.join().unwrap();
    w.s.query("ROLLBACK").unwrap();
    let r = handle.join().unwrap().unwrap();
    let after = w.settled();
    let delta = |k: &str| after[k] - before[k];
    let d = r.mysql.as_ref().unwrap();
    assert_eq!(r.requests, 4);
    assert!(d.ignored_errors >= 1, "{d:?}");
    assert_eq!(d.ignored_by_code.keys().collect::<Vec<_>>(), vec!["1205"]);
    assert_eq!(delta("Com_commit"), 4);
    // The watcher's BEGIN, 2 SELECTs, ROLLBACK and shows; the helper's
    // shows and quit are not ours to count, so only the floor holds here.
    assert!(delta("Questions") >= queries(&r) + d.untimed_commands);
    w.s.query("SET GLOBAL innodb_lock_wait_timeout = 50")
        .unwrap();

    // One-line errors.
    let mut bad = config(&tcp, Workload::ReadOnly);
    bad.events = Some(1);
    bad.login.user = "tare".into();
    bad.login.password = "wrong".into();
    let e = tare_mysql::run(&bad).unwrap_err().to_string();
    assert!(
        e.starts_with("ERROR 1045 (28000): Access denied for user 'tare'"),
        "{e}"
    );
    assert!(!e.contains('\n'));
    bad.login.password = MariaDb::PASSWORD.into();
    bad.login.db = Some("nope".into());
    let e = tare_mysql::run(&bad).unwrap_err().to_string();
    assert!(e.contains("Unknown database 'nope'"), "{e}");
    bad.login = sbtest();
    bad.tables = 3;
    let e = tare_mysql::run(&bad).unwrap_err().to_string();
    assert!(
        e.contains("sbtest3' doesn't exist") && e.contains("tare mysql prepare"),
        "{e}"
    );
    let refused = MysqlConfig {
        endpoint: Endpoint::Unix(m.dir.join("no.sock")),
        ..config(&tcp, Workload::ReadOnly)
    };
    let e = tare_mysql::run(&MysqlConfig {
        events: Some(1),
        ..refused
    })
    .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("could not connect to MySQL at unix:"),
        "{e}"
    );

    // The password is checked with mysql_native_password's scramble.
    let mut ok = config(&tcp, Workload::PointSelect);
    ok.login.user = "tare".into();
    ok.login.password = MariaDb::PASSWORD.into();
    ok.events = Some(10);
    assert_eq!(tare_mysql::run(&ok).unwrap().requests, 10);

    // cleanup drops the tables.
    let mut said = Vec::new();
    admin(&tcp).cleanup(&mut said).unwrap();
    assert!(String::from_utf8(said)
        .unwrap()
        .contains("Dropping table 'sbtest2'..."));
    let left = w.s.query("SHOW TABLES FROM sbtest").unwrap();
    assert!(left.rows.is_empty(), "{:?}", left.rows);
}

#[test]
fn a_killed_server_ends_the_run_with_results_kept() {
    let mut m = MariaDb::start();
    let tcp = Endpoint::Tcp(m.addr());
    let mut a = admin(&tcp);
    a.tables = 1;
    a.prepare(&mut std::io::sink()).unwrap();
    // One run under each wait (--io), killed together.
    let t0 = Instant::now();
    let runs: Vec<_> = tare_testbed::io_modes()
        .into_iter()
        .map(|io| {
            let mut cfg = config(&tcp, Workload::ReadOnly);
            cfg.tables = 1;
            cfg.load.io = io;
            cfg.load.duration = Some(Duration::from_secs(30));
            (io, std::thread::spawn(move || tare_mysql::run(&cfg)))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(800));
    m.kill();
    for (io, run) in runs {
        let r = run
            .join()
            .unwrap()
            .expect("a lost server is a result, not an error");
        let d = r.mysql.as_ref().unwrap();
        assert_eq!(r.wakeups.as_ref().unwrap().io, io.to_string());
        assert!(r.requests > 0, "{io}: what was measured is kept");
        assert_eq!(d.aborted_connections, 4, "{io}: {d:?}");
        assert!(r.errors.read + r.errors.write > 0, "{io}: {:?}", r.errors);
        assert!(d.abort_error.is_some());
        assert!(tare_mysql::report::text(&r).contains("connections ended early: 4 of 4"));
    }
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "the runs ended with the server"
    );
}
