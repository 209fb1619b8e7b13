//! Entry points for the fuzz targets in `crates/pg/fuzz`, not an API: thin
//! wrappers that take bytes and hand them to the parsers tare pg runs on
//! what a server sends and what a user writes, as the engine, the session
//! and the start-up use them. Each returns normally or panics on a broken
//! invariant (the fuzzer's finding); errors the input deserves are fine.

use std::sync::Arc;

use tare_engine::Endpoint;

use crate::config::{PgConfig, QueryMode, ScriptSource, ScriptSpec};
use crate::conninfo::{passfile_lookup, ConnParams};
use crate::program::Program;
use crate::protocol::{self, tag, Frames, ServerError};
use crate::script::random::Rng;
use crate::script::{split_weight, CommandKind, Piece};
use crate::session::{Next, Reply};
use crate::startup::{Handshake, Progress};

/// Frames `data` delivered in two reads split at `split`, as the engine and
/// the session keep a read buffer: complete messages are taken from its
/// front, the rest waits for more bytes. Returns the messages and whether
/// the framing failed.
fn framed(data: &[u8], split: usize) -> (Vec<(u8, Vec<u8>)>, bool) {
    let mut buf: Vec<u8> = Vec::new();
    let mut messages = Vec::new();
    for piece in [&data[..split], &data[split..]] {
        buf.extend_from_slice(piece);
        let mut f = Frames::new(&buf);
        loop {
            match f.next_frame() {
                Ok(Some((t, body))) => messages.push((t, body.to_vec())),
                Ok(None) => break,
                Err(_) => return (messages, true),
            }
        }
        let used = f.consumed();
        assert!(used <= buf.len(), "framing used {used} of {}", buf.len());
        if let Some(need) = f.pending_len() {
            assert!(need > buf.len() - used, "a complete message was left");
        }
        buf.drain(..used);
    }
    (messages, false)
}

/// A server's replies to statements: framed (whole, and split at the
/// first byte's share of the rest: both give the same messages), then each
/// message read as the engine reads a reply (SQLSTATE of an error, status
/// of `ReadyForQuery`) and as the session reads a query's result (rows,
/// the first error).
pub fn backend(data: &[u8]) {
    let Some((&first, data)) = data.split_first() else {
        return;
    };
    let split = first as usize * data.len() / 256;
    let (whole, whole_failed) = framed(data, data.len());
    let (split_messages, split_failed) = framed(data, split);
    assert_eq!(whole, split_messages, "messages differ when split");
    assert_eq!(whole_failed, split_failed, "framing fails only when split");

    let mut reply = Reply::default();
    for (t, body) in &whole {
        match *t {
            tag::ERROR => {
                let _ = protocol::sqlstate(body);
                let e = ServerError::parse(body);
                let _ = (e.class(), e.to_string());
                // The caret under any position, in a statement made of the
                // same bytes (lines, tabs, multibyte text, a far position).
                let text = String::from_utf8_lossy(body);
                let _ = (e.libpq_text(Some(&text)), e.libpq_text(None));
            }
            tag::READY => {
                let _ = protocol::ready_status(body);
            }
            // What `\gset`/`\aset` read: column names and row values.
            tag::ROW_DESCRIPTION => {
                let _ = protocol::column_names(body);
            }
            tag::DATA_ROW => {
                let _ = protocol::row_values(body);
            }
            _ => {}
        }
        match reply.on_message(*t, body) {
            Ok(Next::Ready) => reply = Reply::default(),
            Ok(Next::More | Next::CopyIn) => {}
            Err(e) => {
                let _ = e.to_string();
                reply = Reply::default();
            }
        }
    }
}

/// The start-up and authentication exchange: the first byte chooses
/// whether a password is known, the rest is the server's side of the
/// conversation, framed, each message fed to the state machine until it
/// is ready or fails. Whatever tare answers must be whole messages.
pub fn startup(data: &[u8]) {
    let Some((&first, data)) = data.split_first() else {
        return;
    };
    let params = ConnParams {
        endpoint: Endpoint::Tcp(([127, 0, 0, 1], 5432).into()),
        host: "127.0.0.1".into(),
        port: 5432,
        user: "tare".into(),
        database: "bench".into(),
        password: (first & 1 == 1).then(|| "secret".into()),
        application_name: "tare".into(),
        options: None,
    };
    let mut out = Vec::new();
    Handshake::startup(&params, &mut out).expect("valid parameters");
    let mut hs = Handshake::new();
    let (messages, _) = framed(data, data.len());
    for (t, body) in messages {
        out.clear();
        let step = hs.on_message(&params, t, &body, &mut out);
        let mut f = Frames::new(&out);
        while let Ok(Some(_)) = f.next_frame() {}
        assert_eq!(f.consumed(), out.len(), "tare sent a partial message");
        match step {
            Ok(Progress::Continue) => {}
            Ok(Progress::Ready) => return,
            Err(e) => {
                let _ = e.to_string();
                return;
            }
        }
    }
}

/// A pgbench script file (read as UTF-8 text: other bytes never reach the
/// parser) compiled in every query mode; where it compiles, each client-side
/// command runs once as a client would run it (`\set` evaluated, a SQL
/// command's text assembled for the simple protocol).
pub fn script(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The command line's `-f FILE@WEIGHT`.
    let _ = split_weight(text);
    for mode in [QueryMode::Simple, QueryMode::Extended, QueryMode::Prepared] {
        let mut cfg = PgConfig::new(Endpoint::Tcp(([127, 0, 0, 1], 5432).into()), "u", "db");
        cfg.mode = mode;
        cfg.scripts = vec![ScriptSpec {
            source: ScriptSource::Text {
                name: "fuzz.sql".into(),
                text: text.to_string(),
            },
            weight: 1,
        }];
        match Program::compile(&cfg, 1, 1) {
            Ok(program) => run_once(&program),
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
}

/// One pass over every command of every script, the way a client runs it.
fn run_once(program: &Arc<Program>) {
    let mut vars = program.initial.clone();
    let mut rng = Rng::new(7);
    for s in &program.scripts {
        for cmd in &s.script.commands {
            match &cmd.kind {
                CommandKind::Set { var, expr } => {
                    let mut env = crate::script::expr::Env {
                        vars: &vars,
                        names: &program.vars,
                        rng: &mut rng,
                        at: (0, 1),
                    };
                    if let Ok(v) = expr.eval(&mut env) {
                        vars[var.0] = Some(v);
                    }
                }
                CommandKind::If { expr, .. } | CommandKind::Elif { expr, .. } => {
                    let mut env = crate::script::expr::Env {
                        vars: &vars,
                        names: &program.vars,
                        rng: &mut rng,
                        at: (0, 1),
                    };
                    let _ = expr.eval(&mut env);
                }
                CommandKind::Sleep { .. }
                | CommandKind::Else { .. }
                | CommandKind::Endif
                | CommandKind::Shell { .. }
                | CommandKind::Fail(_)
                | CommandKind::StartPipeline
                | CommandKind::EndPipeline => {}
                CommandKind::Sql(sql) => {
                    let text = sql.text.as_bytes();
                    let mut buf = Vec::new();
                    protocol::query(&mut buf, |b| {
                        for piece in &sql.pieces {
                            match piece {
                                Piece::Lit(r) => b.extend_from_slice(&text[r.clone()]),
                                Piece::Var(id, r) => match &vars[id.0] {
                                    Some(v) => b.extend_from_slice(v.to_string().as_bytes()),
                                    None => b.extend_from_slice(&text[r.clone()]),
                                },
                            }
                        }
                    });
                    let mut f = Frames::new(&buf);
                    assert!(matches!(f.next_frame(), Ok(Some((b'Q', _)))));
                    assert_eq!(f.consumed(), buf.len());
                }
            }
        }
    }
}

/// A password file (`~/.pgpass`, read as UTF-8 text), looked up for a
/// socket directory, a host name and an address.
pub fn passfile(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for host in ["/var/run/postgresql", "localhost", "10.0.0.1"] {
        let _ = passfile_lookup(text, host, 5432, "bench", "tare");
    }
}
