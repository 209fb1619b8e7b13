//! `tare pg` against a real PostgreSQL: every query mode, scripts with
//! variables, the built-in scripts after `--init`, `-C`, `-r`, `\sleep`, and
//! counts checked against the server's own statistics and tables.

use crate::pgserver;

use std::time::{Duration, Instant};

use pgserver::{script, PgServer};
use tare_pg::session::Session;
use tare_pg::{Length, PgConfig, QueryMode, ScriptSource, ScriptSpec};

fn count(s: &mut Session, sql: &str) -> i64 {
    s.query_value(sql).unwrap().unwrap().parse().unwrap()
}

/// `xact_commit` of `db`, once it stops moving (backends flush their
/// statistics when they exit, shortly after the run's connections close).
fn settled_commits(s: &mut Session, db: &str, at_least: i64) -> i64 {
    let sql = format!("select xact_commit from pg_stat_database where datname = '{db}'");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = -1;
    loop {
        let v = count(s, &sql);
        if v >= at_least && v == last {
            return v;
        }
        if Instant::now() > deadline {
            return v;
        }
        last = v;
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn every_query_mode_runs_exact_transaction_counts() {
    let server = PgServer::start("");
    let mut admin = server.session();
    admin.query("create database tare_count").unwrap();
    let (clients, per_client) = (3usize, 40u64);
    let runs = [QueryMode::Simple, QueryMode::Extended, QueryMode::Prepared]
        .into_iter()
        .flat_map(|m| tare_testbed::io_modes().into_iter().map(move |io| (m, io)));
    // Each run starts from the count the one before it settled at (only
    // the runs touch tare_count), so it waits for the statistics once.
    let mut before = settled_commits(&mut admin, "tare_count", 0);
    for (mode, io) in runs {
        for endpoint in [server.unix_endpoint(), server.tcp_endpoint()] {
            let mut cfg = PgConfig::new(endpoint.clone(), "postgres", "tare_count");
            cfg.mode = mode;
            cfg.load.io = io;
            cfg.load.connections = clients;
            cfg.load.threads = 2;
            cfg.set_length(Length::TransactionsPerClient(per_client));
            cfg.scripts = vec![script("one.sql", "select 1;")];
            let r = tare_pg::run(&cfg).unwrap();
            let expected = clients as u64 * per_client;
            assert_eq!(r.requests, expected, "{mode} over {endpoint}, {io}");
            assert_eq!(r.wakeups.as_ref().unwrap().io, io.to_string());
            assert_eq!(r.errors.total(), 0);
            assert!(r.latency_us.p50 > 0.0);
            assert_eq!(r.transport, endpoint.transport());
            // The server saw each statement commit exactly once, plus one
            // start-up transaction per connection (the clients' and the
            // pre-run check's) and the check's `SHOW server_version`:
            // nothing lost, nothing doubled.
            let after = settled_commits(&mut admin, "tare_count", before + expected as i64);
            let overhead = clients as i64 + 2;
            assert_eq!(
                after - before,
                expected as i64 + overhead,
                "{mode} over {endpoint}: xact_commit delta vs {expected} statements + {overhead}"
            );
            before = after;
        }
    }
}

#[test]
fn builtin_scripts_after_init_keep_the_books_balanced() {
    let server = PgServer::start("");
    tare_pg::init::init(
        &server.params("postgres", "postgres"),
        &tare_pg::init::InitOptions::new(1),
        Duration::from_secs(30),
        &mut |_| {},
    )
    .unwrap();
    let mut s = server.session();
    assert_eq!(
        count(&mut s, "select count(*) from pgbench_accounts"),
        100_000
    );
    assert_eq!(count(&mut s, "select count(*) from pgbench_tellers"), 10);

    let totals = |s: &mut Session| {
        (
            count(s, "select sum(abalance) from pgbench_accounts"),
            count(s, "select sum(tbalance) from pgbench_tellers"),
            count(s, "select sum(bbalance) from pgbench_branches"),
            count(s, "select coalesce(sum(delta), 0) from pgbench_history"),
        )
    };
    for (mode, builtin, history_rows) in [
        (QueryMode::Prepared, "tpcb-like", 30),
        (QueryMode::Extended, "simple-update", 30),
        (QueryMode::Simple, "select-only", 0),
    ] {
        s.query("truncate pgbench_history").unwrap();
        let (a0, t0, b0, _) = totals(&mut s);
        let mut cfg = server.config();
        cfg.mode = mode;
        cfg.load.connections = 3;
        cfg.load.threads = 1;
        cfg.set_length(Length::TransactionsPerClient(10));
        cfg.scripts = vec![ScriptSpec {
            source: ScriptSource::Builtin(builtin.into()),
            weight: 1,
        }];
        cfg.vacuum = false;
        let r = tare_pg::run(&cfg).unwrap();
        assert_eq!(r.requests, 30, "{builtin}");
        let pg = r.pg.unwrap();
        assert_eq!(pg.scale, 1, "scale read from pgbench_branches");
        assert_eq!(
            count(&mut s, "select count(*) from pgbench_history"),
            history_rows,
            "{builtin}"
        );
        // Each transaction's delta reached exactly the tables its script updates.
        let (a, t, b, h) = totals(&mut s);
        match builtin {
            "tpcb-like" => assert_eq!((a - a0, t - t0, b - b0), (h, h, h)),
            "simple-update" => assert_eq!((a - a0, t - t0, b - b0), (h, 0, 0)),
            _ => assert_eq!((a - a0, t - t0, b - b0, h), (0, 0, 0, 0)),
        }
    }
}

#[test]
fn scripts_with_variables_weights_sleep_reconnect_and_per_statement_latency() {
    let server = PgServer::start("");
    let mut s = server.session();
    s.query("create table tare_vars (client int, x int, y bigint, g int, e int)")
        .unwrap();
    let text = "\\set x random(1, 10)\n\
                \\set y :x * 2 + :offset\n\
                \\set g random_gaussian(1, 100, 2.5)\n\
                \\set e random_exponential(1, 100, 3)\n\
                insert into tare_vars values (:client_id, :x, :y, :g, :e);\n";
    for mode in [QueryMode::Simple, QueryMode::Extended, QueryMode::Prepared] {
        s.query("truncate tare_vars").unwrap();
        let mut cfg = server.config();
        cfg.mode = mode;
        cfg.load.connections = 4;
        cfg.load.threads = 2;
        cfg.set_length(Length::TransactionsPerClient(25));
        cfg.scripts = vec![script("vars.sql", text)];
        cfg.variables = vec![("offset".into(), "1000".into())];
        cfg.per_statement = true;
        let r = tare_pg::run(&cfg).unwrap();
        assert_eq!(r.requests, 100, "{mode}");
        assert_eq!(
            count(&mut s, "select count(*) from tare_vars"),
            100,
            "{mode}"
        );
        assert_eq!(
            count(
                &mut s,
                "select count(*) from tare_vars where y <> x * 2 + 1000 or x not between 1 and 10"
            ),
            0
        );
        assert_eq!(count(&mut s, "select count(*) from tare_vars where g not between 1 and 100 or e not between 1 and 100"), 0);
        assert_eq!(
            count(&mut s, "select count(distinct client) from tare_vars"),
            4
        );
        assert_eq!(
            count(&mut s, "select min(client) + max(client) from tare_vars"),
            3
        );
        let pg = r.pg.unwrap();
        assert_eq!(pg.statements.len(), 5);
        assert_eq!(pg.statements[4].line, 5);
        assert!(pg.statements[4].mean_ms > 0.0);
        assert!(pg.statements[4]
            .command
            .starts_with("insert into tare_vars"));
    }

    // Two weighted scripts: both run, in roughly the asked proportion.
    let mut cfg = server.config();
    cfg.load.connections = 2;
    cfg.set_length(Length::TransactionsPerClient(200));
    cfg.scripts = vec![
        script("a.sql", "select 1;"),
        ScriptSpec {
            weight: 3,
            ..script("b.sql", "select 2;")
        },
    ];
    let r = tare_pg::run(&cfg).unwrap();
    let per = r.pg.unwrap().script_results;
    assert_eq!(per[0].transactions + per[1].transactions, 400);
    assert!((40..160).contains(&per[0].transactions), "{per:?}");

    // \sleep is part of the transaction's latency, as in pgbench.
    let mut cfg = server.config();
    cfg.set_length(Length::TransactionsPerClient(3));
    cfg.scripts = vec![script(
        "sleep.sql",
        "\\set ms 20\n\\sleep :ms ms\nselect 1;",
    )];
    let r = tare_pg::run(&cfg).unwrap();
    assert_eq!(r.requests, 3);
    assert!(r.latency_us.min >= 20_000.0, "{:?}", r.latency_us);

    // -C: one connection per transaction, each one counted and timed.
    let sessions = |s: &mut Session| {
        count(
            s,
            "select sessions from pg_stat_database where datname = 'postgres'",
        )
    };
    for io in tare_testbed::io_modes() {
        let before = sessions(&mut s);
        let mut cfg = server.config();
        cfg.mode = QueryMode::Prepared;
        cfg.load.connections = 2;
        cfg.load.threads = 2;
        cfg.connect_per_transaction = true;
        cfg.set_length(Length::TransactionsPerClient(15));
        cfg.scripts = vec![script("one.sql", "select 1;")];
        cfg.load.io = io;
        let r = tare_pg::run(&cfg).unwrap();
        assert_eq!(r.requests, 30, "{io}");
        assert!(!r.keepalive);
        assert_eq!(r.connect_us.map(|c| c.p50 > 0.0), Some(true));
        let pg = r.pg.unwrap();
        assert!(pg.connection_time_ms > 0.0);
        // Backends report their session to the statistics when they end,
        // flushed at most once a second: wait for it (15 s at most).
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut grown = sessions(&mut s) - before;
        while grown < 30 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
            grown = sessions(&mut s) - before;
        }
        assert!(
            grown >= 30,
            "{io}: pg_stat_database.sessions grew by {grown}"
        );
    }
}

#[test]
fn timed_run_fills_the_timeline_and_validates_against_the_schema() {
    let server = PgServer::start("");
    let mut cfg = server.config();
    cfg.mode = QueryMode::Prepared;
    cfg.load.connections = 4;
    cfg.load.threads = 2;
    cfg.set_length(Length::Duration(Duration::from_millis(1500)));
    cfg.scripts = vec![script("one.sql", "select 1;")];
    let r = tare_pg::run(&cfg).unwrap();
    assert!(r.requests > 100);
    assert!((1.4..2.0).contains(&r.duration_s), "{}", r.duration_s);
    assert_eq!(r.timeline.len(), 2);
    assert_eq!(r.timeline.iter().sum::<u64>(), r.requests);
    assert!(r.generator_cpu_s > 0.0);
    let tps = r.tps.unwrap();
    assert!((tps - r.requests as f64 / r.duration_s).abs() < 1e-6 * tps);
    let pg = r.pg.clone().unwrap();
    assert!(pg.tps_including_connect <= tps);
    let hist = tare_record::Latency::decode(&r.hdr).unwrap();
    assert_eq!(hist.count(), r.requests);

    let value = serde_json::to_value(&r).unwrap();
    let schema_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/json-schema.json");
    match std::fs::read_to_string(schema_path) {
        Ok(text) => {
            let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
            let validator = jsonschema::validator_for(&schema).expect("schema compiles");
            let errors: Vec<String> = validator
                .iter_errors(&value)
                .map(|e| format!("{e} at {}", e.instance_path))
                .collect();
            assert!(errors.is_empty(), "{errors:#?}");
        }
        Err(_) => {
            for field in [
                "engine",
                "target",
                "duration_s",
                "connections",
                "threads",
                "requests",
                "errors",
                "tps",
                "latency_us",
                "hdr",
                "timeline",
                "generator_cpu_s",
            ] {
                assert!(value.get(field).is_some(), "missing {field}");
            }
        }
    }
    assert_eq!(value["engine"], "pg");
    for p in ["p50", "p90", "p99", "p999", "p9999"] {
        assert!(value["latency_us"][p].as_f64().unwrap() > 0.0, "{p}");
    }
}
