//! A small blocking client: tare's own statements (the pre-run check,
//! `prepare`, `cleanup`, `SHOW GLOBAL STATUS` in tests), over the text
//! protocol, every call bounded by the session's timeout.

use std::collections::BTreeMap;
use std::time::Duration;

use tare_engine::Endpoint;

use crate::error::MysqlError;
use crate::protocol::{self, ServerError};
use crate::wire::{Login, Wire};

/// A statement's result: its rows (text values, `None` for NULL) or the
/// rows it changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Answer {
    pub columns: usize,
    pub rows: Vec<Vec<Option<String>>>,
    pub affected_rows: u64,
}

pub struct Session {
    wire: Wire,
    timeout: Duration,
}

impl Session {
    /// Connects and logs in within `timeout`.
    pub fn connect(
        endpoint: &Endpoint,
        login: &Login,
        timeout: Duration,
    ) -> Result<Session, MysqlError> {
        Ok(Session {
            wire: Wire::open(endpoint, login, timeout)?,
            timeout,
        })
    }

    /// The version the server announced (`10.11.6-MariaDB-0+deb12u1`).
    pub fn server_version(&self) -> &str {
        &self.wire.server_version
    }

    /// Runs `sql`; an error reply is the inner `Err`.
    pub(crate) fn try_query(
        &mut self,
        sql: &str,
    ) -> Result<Result<Answer, ServerError>, MysqlError> {
        self.wire.extend(self.timeout);
        let mut out = Vec::new();
        protocol::command(&mut out, protocol::COM_QUERY, sql.as_bytes());
        self.wire.write_all(&out)?;
        let proto = |e: protocol::ProtoError| MysqlError::Protocol(e.to_string());
        let mut answer = Answer::default();
        loop {
            let (_, p) = self.wire.read_packet()?;
            match p.first() {
                Some(0xFF) => return Ok(Err(protocol::parse_err(&p).map_err(proto)?)),
                Some(0x00) => {
                    let ok = protocol::parse_ok(&p).map_err(proto)?;
                    answer.affected_rows += ok.affected_rows;
                    if ok.status & 0x8 == 0 {
                        return Ok(Ok(answer));
                    }
                }
                Some(0xFB) => return Err(proto(protocol::ProtoError::LocalInfile)),
                Some(_) => {
                    let (n, _) = protocol::get_lenenc(&p)
                        .ok_or(MysqlError::Protocol("a bad column count".into()))?;
                    let n = n as usize;
                    answer.columns = n;
                    for _ in 0..n {
                        self.wire.read_packet()?;
                    }
                    let (_, eof) = self.wire.read_packet()?;
                    if eof.first() != Some(&0xFE) {
                        return Err(MysqlError::Protocol("no EOF after the columns".into()));
                    }
                    loop {
                        let (_, p) = self.wire.read_packet()?;
                        if p.first() == Some(&0xFF) {
                            return Ok(Err(protocol::parse_err(&p).map_err(proto)?));
                        }
                        if p.first() == Some(&0xFE) && p.len() < 9 {
                            let status =
                                p.get(3..5).map_or(0, |s| u16::from_le_bytes([s[0], s[1]]));
                            if status & 0x8 == 0 {
                                return Ok(Ok(answer));
                            }
                            break;
                        }
                        answer.rows.push(protocol::text_row(&p, n).map_err(proto)?);
                    }
                }
                None => return Err(MysqlError::Protocol("an empty packet".into())),
            }
        }
    }

    /// Runs `sql`; an error reply is an error naming the statement.
    pub fn query(&mut self, sql: &str) -> Result<Answer, MysqlError> {
        self.try_query(sql)?.map_err(|e| MysqlError::Server {
            context: short(sql),
            error: e,
        })
    }

    /// The first column of the first row.
    pub fn value(&mut self, sql: &str) -> Result<Option<String>, MysqlError> {
        Ok(self
            .query(sql)?
            .rows
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next().flatten()))
    }

    /// `SHOW GLOBAL STATUS` as name → value (`Com_commit`, `Questions`).
    pub fn global_status(&mut self) -> Result<BTreeMap<String, u64>, MysqlError> {
        Ok(self
            .query("SHOW GLOBAL STATUS")?
            .rows
            .into_iter()
            .filter_map(|r| {
                let mut it = r.into_iter();
                let k = it.next().flatten()?;
                let v = it.next().flatten()?.parse().ok()?;
                Some((k, v))
            })
            .collect())
    }

    /// COM_STMT_PREPARE of `sql` (tests of the binary protocol).
    pub fn prepare(&mut self, sql: &str) -> Result<Result<u32, ServerError>, MysqlError> {
        self.wire.extend(self.timeout);
        self.wire.prepare(sql)
    }

    /// Ends the session politely (COM_QUIT).
    pub fn quit(mut self) {
        let mut out = Vec::new();
        protocol::command(&mut out, protocol::COM_QUIT, &[]);
        let _ = self.wire.write_all(&out);
    }
}

/// A statement as an error names it: its first 60 characters.
fn short(sql: &str) -> String {
    let one: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    match one.char_indices().nth(60) {
        Some((i, _)) => format!("{}...", &one[..i]),
        None => one,
    }
}
