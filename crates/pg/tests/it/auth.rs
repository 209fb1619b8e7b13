//! Authentication against a real server: SCRAM-SHA-256, MD5 and cleartext
//! password users (pg_hba.conf), over TCP and the Unix socket, and the
//! errors a user sees for a wrong password, no password or a missing database.

use crate::pgserver;

use std::time::Duration;

use pgserver::PgServer;
use tare_pg::{Length, PgConfig, PgError, QueryMode};

const HBA: &str = "\
host all tare_scram 127.0.0.1/32 scram-sha-256
host all tare_md5 127.0.0.1/32 md5
host all tare_pw 127.0.0.1/32 password
local all tare_scram scram-sha-256
local all tare_md5 md5
local all tare_pw password";

fn config(server: &PgServer, tcp: bool, user: &str, password: Option<&str>, db: &str) -> PgConfig {
    let ep = if tcp {
        server.tcp_endpoint()
    } else {
        server.unix_endpoint()
    };
    let mut c = PgConfig::new(ep, user, db);
    c.conn.password = password.map(String::from);
    c.load.connections = 2;
    c.set_length(Length::TransactionsPerClient(5));
    c.mode = QueryMode::Prepared;
    // Generous: SCRAM's 4096 PBKDF2 rounds on a loaded CI machine.
    c.load.timeout = Duration::from_secs(20);
    c.scripts = vec![pgserver::script("one.sql", "select 1;")];
    c
}

#[test]
fn every_password_method_authenticates_and_wrong_input_is_a_clear_error() {
    let server = PgServer::start(HBA);
    let mut s = server.session();
    s.query("create user tare_scram password 'scram-secret'")
        .unwrap();
    // MD5 needs an MD5-hashed password: with a SCRAM verifier the server
    // would silently upgrade `md5` lines to SCRAM.
    s.query("set password_encryption = 'md5'").unwrap();
    s.query("create user tare_md5 password 'md5-secret'")
        .unwrap();
    s.query("reset password_encryption").unwrap();
    s.query("create user tare_pw password 'pw-secret'").unwrap();
    assert_eq!(
        s.query_value("select rolpassword like 'md5%' from pg_authid where rolname = 'tare_md5'")
            .unwrap()
            .as_deref(),
        Some("t")
    );

    for tcp in [true, false] {
        for (user, pw) in [
            ("tare_scram", "scram-secret"),
            ("tare_md5", "md5-secret"),
            ("tare_pw", "pw-secret"),
        ] {
            // Both the pre-run check and the engine's own connections
            // (plus every reconnection under -C) authenticate.
            for reconnect in [false, true] {
                let mut c = config(&server, tcp, user, Some(pw), "postgres");
                c.connect_per_transaction = reconnect;
                let r = tare_pg::run(&c)
                    .unwrap_or_else(|e| panic!("{user} tcp={tcp} -C={reconnect}: {e}"));
                assert_eq!(r.requests, 10, "{user}");
            }
            let e =
                tare_pg::run(&config(&server, tcp, user, Some("wrong"), "postgres")).unwrap_err();
            assert!(
                matches!(e, PgError::Refused { .. }),
                "{user} tcp={tcp}: {e:?} ({e})"
            );
            let msg = e.to_string();
            assert!(
                msg.contains("password authentication failed for user \"") && msg.contains(user),
                "{msg}"
            );
            assert!(msg.starts_with("connection to server at "), "{msg}");

            let msg = tare_pg::run(&config(&server, tcp, user, None, "postgres"))
                .unwrap_err()
                .to_string();
            assert!(msg.contains("no password supplied"), "{msg}");
        }
    }
    let msg = tare_pg::run(&config(&server, true, "postgres", None, "tare_no_such_db"))
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("database \"tare_no_such_db\" does not exist"),
        "{msg}"
    );

    // Nothing listening: a connection error naming the address, not a hang.
    let mut c = config(&server, true, "postgres", None, "postgres");
    c.conn.endpoint = tare_engine::Endpoint::Tcp("127.0.0.1:1".parse().unwrap());
    let msg = tare_pg::run(&c).unwrap_err().to_string();
    assert!(
        msg.contains("(127.0.0.1), port 1 failed") && msg.contains("refused"),
        "{msg}"
    );
}

#[test]
fn environment_variables_resolve_like_libpq() {
    let server = PgServer::start(HBA);
    let mut s = server.session();
    s.query("create user tare_scram password 'env-secret'")
        .unwrap();
    let port = server.port.to_string();
    let dir = server.socket_dir.display().to_string();
    let env = |k: &str| -> Option<String> {
        match k {
            "PGHOST" => Some(dir.clone()),
            "PGPORT" => Some(port.clone()),
            "PGUSER" => Some("tare_scram".into()),
            "PGPASSWORD" => Some("env-secret".into()),
            "PGDATABASE" => Some("postgres".into()),
            _ => None,
        }
    };
    let conn = tare_pg::ConnParams::resolve(&tare_pg::ConnFlags::default(), &env).unwrap();
    assert_eq!(conn.endpoint, server.unix_endpoint());
    let mut c = config(&server, false, "x", None, "x");
    c.conn = conn;
    assert_eq!(tare_pg::run(&c).unwrap().requests, 10);
}
