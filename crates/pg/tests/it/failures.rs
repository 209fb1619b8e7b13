//! Bad input and bad luck: failing queries are counted by SQLSTATE class
//! while the run goes on, script errors name file and line, and a server
//! that dies mid-run ends the run with its partial results and a clear error.

use crate::pgserver;

use std::time::{Duration, Instant};

use pgserver::{script, PgServer};
use tare_pg::{Length, PgError, QueryMode, ScriptSource, ScriptSpec};

/// `-r`, as pgbench's: a command's mean latency is of its executions that
/// succeeded; one that failed after 50 ms of work counts as a failure only.
#[test]
fn statement_latency_leaves_out_failed_executions() {
    let server = PgServer::start("");
    let mut cfg = server.config();
    cfg.load.connections = 1;
    cfg.load.threads = 1;
    cfg.set_length(Length::TransactionsPerClient(3));
    cfg.per_statement = true;
    cfg.scripts = vec![script(
        "slow_failure.sql",
        "select 1;\nselect 1 / ((select count(*) from pg_sleep(0.05)) - 1);\n",
    )];
    let pg = tare_pg::run(&cfg).unwrap().pg.unwrap();
    assert_eq!(pg.failed, 3);
    assert_eq!(pg.statements[1].failures, 3);
    assert_eq!(pg.statements[1].mean_ms, 0.0, "{:?}", pg.statements);
    assert_eq!(pg.statements[0].failures, 0);
}

#[test]
fn failing_queries_are_counted_by_class_and_the_run_goes_on() {
    let server = PgServer::start("");
    let mut s = server.session();
    s.query("create table tare_once (id int primary key)")
        .unwrap();
    let runs = [QueryMode::Simple, QueryMode::Extended, QueryMode::Prepared]
        .into_iter()
        .flat_map(|m| tare_testbed::io_modes().into_iter().map(move |io| (m, io)));
    for (mode, io) in runs {
        s.query("truncate tare_once").unwrap();
        let mut cfg = server.config();
        cfg.mode = mode;
        cfg.load.io = io;
        cfg.load.connections = 2;
        cfg.load.threads = 2;
        cfg.set_length(Length::TransactionsPerClient(6));
        cfg.per_statement = true;
        // Each client's first insert succeeds; every later one violates the
        // primary key (23505) inside a transaction block, which tare rolls back.
        cfg.scripts = vec![script(
            "once.sql",
            "BEGIN;\ninsert into tare_once values (:client_id);\nselect 1 / (:client_id + 1);\nEND;\n",
        )];
        let r = tare_pg::run(&cfg).unwrap();
        assert_eq!(r.requests, 2, "{mode}");
        assert_eq!(r.errors.status, 10, "{mode}");
        let pg = r.pg.unwrap();
        assert_eq!(pg.failed, 10);
        assert_eq!(
            pg.failed_by_sqlstate_class.get("23"),
            Some(&10),
            "{:?}",
            pg.failed_by_sqlstate_class
        );
        assert_eq!(pg.aborted_clients, 0);
        assert_eq!(pg.statements[1].failures, 10);
        assert_eq!(pg.statements[2].failures, 0);
        let rows = s.query_value("select count(*) from tare_once").unwrap();
        assert_eq!(rows.as_deref(), Some("2"));
    }
    // A failure outside a transaction block (division by zero, class 22).
    let mut cfg = server.config();
    cfg.load.connections = 1;
    cfg.set_length(Length::TransactionsPerClient(20));
    cfg.scripts = vec![script("div.sql", "\\set d random(0, 1)\nselect 1 / :d;\n")];
    let r = tare_pg::run(&cfg).unwrap();
    let pg = r.pg.unwrap();
    assert_eq!(r.requests + pg.failed, 20);
    assert!(
        pg.failed > 0 && r.requests > 0,
        "{} ok, {} failed",
        r.requests,
        pg.failed
    );
    assert_eq!(pg.failed_by_sqlstate_class.get("22"), Some(&pg.failed));
}

#[test]
fn script_errors_name_file_and_line() {
    let dir = std::env::temp_dir().join(format!("tare-pg-script-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("broken.sql");
    std::fs::write(&path, "select 1;\n\n\\set x random(1, \nselect :x;\n").unwrap();
    let mut cfg = tare_pg::PgConfig::new(
        tare_engine::Endpoint::Tcp("127.0.0.1:1".parse().unwrap()),
        "u",
        "d",
    );
    cfg.scripts = vec![ScriptSpec {
        source: ScriptSource::File(path.clone()),
        weight: 1,
    }];
    // Reported before any connection is tried (nothing listens on port 1).
    let e = tare_pg::run(&cfg).unwrap_err();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(matches!(e, PgError::Script(_)), "{e:?}");
    let msg = e.to_string();
    assert!(msg.starts_with(&format!("{}:3: ", path.display())), "{msg}");
    assert!(msg.contains("\\set x"), "{msg}");

    cfg.scripts = vec![script("unknown.sql", "select 1;\n\\frobnicate now\n")];
    let msg = tare_pg::run(&cfg).unwrap_err().to_string();
    assert!(
        msg.starts_with("unknown.sql:2: invalid command in command \"frobnicate\""),
        "{msg}"
    );
}

#[test]
fn an_undefined_variable_is_sent_as_null_in_prepared_mode() {
    // pgbench 15 binds an undefined variable as NULL (its getQueryParams).
    let server = PgServer::start("");
    let mut cfg = server.config();
    cfg.mode = QueryMode::Prepared;
    cfg.continue_on_error = false;
    cfg.set_length(Length::TransactionsPerClient(3));
    cfg.scripts = vec![script("undef.sql", "select 1 / (:nope::int is null)::int;")];
    let r = tare_pg::run(&cfg).unwrap();
    let pg = r.pg.unwrap();
    assert_eq!((r.requests, pg.failed, pg.aborted_clients), (3, 0, 0));
}

#[test]
fn a_server_that_dies_mid_run_ends_it_with_partial_results() {
    for io in tare_testbed::io_modes() {
        dies_mid_run(io);
    }
}

fn dies_mid_run(io: tare_engine::IoMode) {
    let mut server = PgServer::start("");
    let mut cfg = server.config();
    cfg.load.io = io;
    cfg.mode = QueryMode::Prepared;
    cfg.load.connections = 4;
    cfg.load.threads = 2;
    cfg.set_length(Length::Duration(Duration::from_secs(20)));
    cfg.scripts = vec![script("one.sql", "select 1;")];
    let started = Instant::now();
    let run = std::thread::spawn(move || tare_pg::run(&cfg));
    std::thread::sleep(Duration::from_millis(1000));
    server.kill();
    let r = run.join().unwrap().expect("partial results, not an error");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the run did not notice the dead server"
    );
    assert!(r.requests > 0);
    assert!(r.duration_s < 15.0);
    let pg = r.pg.unwrap();
    assert_eq!(pg.aborted_clients, 4);
    let why = pg.abort_error.unwrap();
    // Whichever the client noticed first: EOF, a reset on read, or a broken pipe on write.
    assert!(
        why.contains("server closed the connection")
            || why.contains("could not receive data from server")
            || why.contains("could not send data to server"),
        "{why}"
    );
    assert!(r.errors.read + r.errors.write >= 1, "{:?}", r.errors);
}
