//! A client's conversation with the server: connecting, the start-up
//! exchange, sending a statement's prebuilt messages, and reading replies
//! until `ReadyForQuery`. The transaction logic that reacts to those
//! replies is in [`super::worker`].

use std::io;

use tare_engine::poller::{Interest, Ready};
use tare_engine::uring::{self, Event, Io};

use super::client::{Client, Phase};
use super::worker::{AbortKind, Ctx};
use crate::config::QueryMode;
use crate::program::Program;
use crate::protocol::{self, tag};
use crate::script::expr::Value;
use crate::script::{CommandKind, Piece, Sql};
use crate::startup::Progress;

impl Ctx<'_> {
    /// Waits until `until` (run clock; `now` read just before) at the
    /// latest and handles what happened; returns how many events there were.
    pub(crate) fn wait(
        &mut self,
        clients: &mut [Client],
        now: u64,
        until: u64,
        ready: &mut Vec<Ready>,
        events: &mut Vec<Event>,
    ) -> io::Result<usize> {
        let n = self.io.wait(now, until, ready, events)?;
        for r in ready.iter() {
            self.on_event(clients, *r);
        }
        for ev in events.iter() {
            self.on_completion(clients, *ev);
        }
        Ok(n)
    }

    /// Closes `c`'s connection; with io_uring its receive and poll are
    /// cancelled first (they hold the socket open).
    pub(super) fn close(&mut self, c: &mut Client) {
        if let Io::Uring { ring, .. } = &mut self.io {
            if c.sock.is_some() && (c.armed || c.polling) {
                ring.cancel(uring::token(c.slot, c.epoch));
            }
        }
        c.disconnect();
    }

    /// io_uring: starts receiving on `c`'s connection.
    fn arm(&mut self, c: &mut Client) {
        if let (Io::Uring { ring, .. }, Some(s)) = (&mut self.io, &c.sock) {
            if !c.armed {
                ring.recv(s.fd(), uring::token(c.slot, c.epoch));
                c.armed = true;
            }
        }
    }

    /// io_uring: one wake-up when `c`'s socket is writable.
    fn poll_writable(&mut self, c: &mut Client) {
        if let (Io::Uring { ring, .. }, Some(s)) = (&mut self.io, &c.sock) {
            if !c.polling {
                ring.poll_writable(s.fd(), uring::token(c.slot, c.epoch));
                c.polling = true;
            }
        }
    }

    /// Handles one io_uring completion.
    fn on_completion(&mut self, clients: &mut [Client], ev: Event) {
        let (slot, epoch) = uring::untoken(ev.token());
        let live = clients
            .get(slot)
            .is_some_and(|c| c.sock.is_some() && c.epoch & 0x7fff_ffff == epoch);
        if !live {
            if let (Event::Data { buf, .. }, Io::Uring { ring, .. }) = (ev, &mut self.io) {
                ring.release(buf);
            }
            return;
        }
        let c = &mut clients[slot];
        match ev {
            Event::Ready {
                writable, hangup, ..
            } => {
                c.polling = false;
                if writable || (hangup && c.phase == Phase::Connecting) {
                    self.on_writable(c, slot);
                }
            }
            Event::Data {
                buf, len, armed, ..
            } => {
                c.armed = armed;
                if let Io::Uring { ring, .. } = &mut self.io {
                    c.absorb(ring.data(buf, len));
                    ring.release(buf);
                }
                let epoch = c.epoch;
                self.on_input(c, slot);
                if c.epoch == epoch && c.sock.is_some() {
                    self.arm(c);
                }
            }
            Event::Eof { .. } => {
                c.armed = false;
                self.abort(c, AbortKind::Read, "server closed the connection unexpectedly (perhaps the backend died while processing)");
            }
            Event::Failed { errno, .. } => {
                c.armed = false;
                if errno == libc::ENOBUFS {
                    self.arm(c);
                } else {
                    let e = io::Error::from_raw_os_error(errno);
                    self.abort(
                        c,
                        AbortKind::Read,
                        &format!("could not receive data from server: {e}"),
                    );
                }
            }
        }
    }

    /// Handles one readiness event for client `token`.
    pub(crate) fn on_event(&mut self, clients: &mut [Client], r: Ready) {
        let token = r.token as usize;
        let c = &mut clients[token];
        if r.writable || (r.hangup && c.phase == Phase::Connecting) {
            self.on_writable(c, token);
        }
        if (r.readable || r.hangup) && c.sock.is_some() && c.phase != Phase::Connecting {
            self.on_readable(c, token);
        }
    }

    pub(super) fn connect(&mut self, c: &mut Client, token: usize) {
        c.conn_start = self.clock.now_ns();
        match self.cfg.conn.endpoint.connect() {
            Ok(sock) => {
                if let Io::Epoll(p) = &self.io {
                    if let Err(e) = p.add(sock.fd(), token as u64, Interest::Write) {
                        return self.abort(c, AbortKind::Connect, &format!("epoll: {e}"));
                    }
                }
                if self.rx_stamps {
                    // Best effort: without stamps a reply is timed when read.
                    let _ = sock.enable_rx_timestamps();
                }
                c.sock = Some(sock);
                c.want_write = true;
                c.phase = Phase::Connecting;
                self.poll_writable(c);
            }
            Err(e) => self.abort(
                c,
                AbortKind::Connect,
                &format!(
                    "connection to server at {} failed: {e}",
                    self.cfg.conn.display_server()
                ),
            ),
        }
    }

    fn on_writable(&mut self, c: &mut Client, token: usize) {
        if c.phase == Phase::Connecting {
            let err = c.sock.as_ref().map(|s| s.take_error());
            match err {
                Some(Ok(None)) => {}
                Some(Ok(Some(e))) | Some(Err(e)) => {
                    return self.abort(
                        c,
                        AbortKind::Connect,
                        &format!(
                            "connection to server at {} failed: {e}",
                            self.cfg.conn.display_server()
                        ),
                    );
                }
                None => return,
            }
            c.phase = Phase::Starting;
            self.arm(c);
            c.wbuf.clear();
            if let Err(e) = crate::startup::Handshake::startup(&self.cfg.conn, &mut c.wbuf) {
                return self.abort(c, AbortKind::Connect, &e.to_string());
            }
        }
        self.flush(c, token);
    }

    /// Sends `wbuf`; waits for writability only while a write is
    /// unfinished (epoll: `EPOLLOUT` armed; io_uring: a one-shot poll).
    pub(super) fn flush(&mut self, c: &mut Client, token: usize) {
        match c.send_pending() {
            Ok(done) => {
                if !done {
                    self.poll_writable(c);
                }
                if done == c.want_write {
                    c.want_write = !done;
                    if let Io::Epoll(p) = &self.io {
                        let interest = if done {
                            Interest::Read
                        } else {
                            Interest::ReadWrite
                        };
                        let fd = c.sock.as_ref().map(|s| s.fd()).unwrap_or(-1);
                        if let Err(e) = p.modify(fd, token as u64, interest) {
                            self.abort(c, AbortKind::Write, &format!("epoll: {e}"));
                        }
                    }
                }
            }
            Err(e) => self.abort(
                c,
                AbortKind::Write,
                &format!("could not send data to server: {e}"),
            ),
        }
    }

    fn on_readable(&mut self, c: &mut Client, token: usize) {
        let stamps = self.rx_stamps.then_some(&self.rx_map);
        match c.fill(stamps) {
            Ok(0) => {
                return self.abort(c, AbortKind::Read, "server closed the connection unexpectedly (perhaps the backend died while processing)");
            }
            Ok(_) => {}
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock
                    || e.kind() == io::ErrorKind::Interrupted =>
            {
                return
            }
            Err(e) => {
                return self.abort(
                    c,
                    AbortKind::Read,
                    &format!("could not receive data from server: {e}"),
                )
            }
        }
        self.on_input(c, token);
    }

    /// Interprets the complete messages in `c`'s read buffer.
    fn on_input(&mut self, c: &mut Client, token: usize) {
        let mut pos = 0;
        let epoch = c.epoch;
        while c.epoch == epoch {
            let (msg_tag, start, end) = {
                let mut f = protocol::Frames::new(&c.rbuf[pos..c.rlen]);
                match f.next_frame() {
                    Ok(Some((t, body))) => (t, pos + 5, pos + 5 + body.len()),
                    Ok(None) => break,
                    Err(e) => return self.abort(c, AbortKind::Read, &e.to_string()),
                }
            };
            pos = end;
            match c.phase {
                Phase::Starting => {
                    let body = c.rbuf[start..end].to_vec();
                    let (params, mut out) = (&self.cfg.conn, std::mem::take(&mut c.wbuf));
                    let step = c.handshake.on_message(params, msg_tag, &body, &mut out);
                    c.wbuf = out;
                    match step {
                        Err(e) => return self.abort(c, AbortKind::Connect, &e.to_string()),
                        Ok(Progress::Continue) => {
                            if !c.wbuf.is_empty() {
                                self.flush(c, token);
                            }
                        }
                        Ok(Progress::Ready) => self.connected(c, token),
                    }
                }
                Phase::Waiting | Phase::RollingBack => match msg_tag {
                    tag::ERROR if c.error.is_none() => {
                        let body = &c.rbuf[start..end];
                        let code = protocol::sqlstate(body);
                        c.error = Some(code);
                        // The words only when they will be printed: an
                        // error that aborts the client, or every error
                        // under --verbose-errors (off the hot path).
                        if self.cfg.verbose_errors
                            || (!self.cfg.continue_on_error && !super::worker::retryable(code))
                        {
                            let text = sent_text(c, self.program);
                            let e = protocol::ServerError::parse(body);
                            c.error_text = Some(e.libpq_text(text.as_deref()));
                        }
                        // Once per worker, off the hot path: what a run in
                        // which every transaction fails says (docs/pg.md).
                        if self.first_failure.is_none() {
                            let e = protocol::ServerError::parse(body);
                            self.first_failure = Some(format!(
                                "{}: {} (SQLSTATE {})",
                                e.severity, e.message, e.code
                            ));
                        }
                    }
                    tag::ROW_DESCRIPTION
                    | tag::DATA_ROW
                    | tag::COMMAND_COMPLETE
                    | tag::EMPTY_QUERY => self.on_result(c, msg_tag, start..end),
                    tag::COPY_IN | tag::COPY_OUT | tag::COPY_BOTH => {
                        // pgbench: "COPY is not supported"; the server waits
                        // for data that never comes, so the client stops.
                        c.copy = true;
                        return self.abort(
                            c,
                            AbortKind::Script,
                            "COPY is not supported in pgbench, aborting",
                        );
                    }
                    tag::READY => {
                        if self.cfg.debug {
                            eprintln!("tare: client {} receiving", c.id);
                        }
                        // Only this message's body: an empty one must not
                        // read the next message's first byte as the status.
                        let status = protocol::ready_status(&c.rbuf[start..end]);
                        c.in_tx = status != b'I';
                        if c.phase == Phase::Waiting {
                            self.statement_done(c, token, status);
                        } else {
                            self.transaction_failed(c, token);
                        }
                    }
                    _ => {}
                },
                // Notices and parameter changes between statements.
                _ => {}
            }
        }
        if c.epoch == epoch {
            c.rbuf.copy_within(pos..c.rlen, 0);
            c.rlen -= pos;
        }
    }

    /// A result message of a statement with `\gset`/`\aset` (others
    /// ignore their rows).
    fn on_result(&mut self, c: &mut Client, msg_tag: u8, body: std::ops::Range<usize>) {
        let program = self.program;
        let Some(CommandKind::Sql(sql)) = program.scripts[c.script]
            .script
            .commands
            .get(c.cmd)
            .map(|x| &x.kind)
        else {
            return;
        };
        let Some(g) = &sql.gset else { return };
        let body = &c.rbuf[body];
        match msg_tag {
            tag::ROW_DESCRIPTION => c.results.describe(body),
            tag::DATA_ROW => c.results.row(body, g, &mut c.vars, &program.vars),
            _ => c.results.complete(),
        }
    }

    fn connected(&mut self, c: &mut Client, token: usize) {
        let now = self.clock.now_ns();
        let took = now.saturating_sub(c.conn_start);
        // The initial connections, then those of the measured period (a
        // ramp's reconnections under -C are not summarised).
        if !self.running || self.measuring(now) {
            self.conn_total_ns += took;
        }
        if self.running && self.measuring(now) {
            if let Some(h) = self.rec.connect.as_mut() {
                h.record_ns(took);
            }
        }
        c.phase = Phase::Idle;
        self.advance(c, token);
    }

    pub(super) fn send_statement(&mut self, c: &mut Client, token: usize) {
        let program = self.program;
        let CommandKind::Sql(sql) = &program.scripts[c.script].script.commands[c.cmd].kind else {
            return;
        };
        let stmt = program.scripts[c.script].stmts[c.cmd]
            .as_ref()
            .expect("every SQL command has prebuilt messages");
        c.wbuf.clear();
        match program.mode {
            QueryMode::Simple => {
                let vars = &c.vars;
                protocol::query(&mut c.wbuf, |b| substitute(b, sql, vars));
            }
            QueryMode::Extended | QueryMode::Prepared => {
                if program.mode == QueryMode::Prepared && !c.prepared[stmt.slot] {
                    c.wbuf.extend_from_slice(&stmt.parse);
                    c.prepared[stmt.slot] = true;
                }
                match &stmt.fixed {
                    Some(bytes) => c.wbuf.extend_from_slice(bytes),
                    None => {
                        if program.mode == QueryMode::Extended {
                            c.wbuf.extend_from_slice(&stmt.parse);
                        }
                        let vars = &c.vars;
                        protocol::bind(&mut c.wbuf, &stmt.name, sql.params.len(), |i, b| {
                            // pgbench sends an undefined variable as NULL.
                            match &vars[sql.params[i].0] {
                                Some(v) => {
                                    push_value(b, v);
                                    true
                                }
                                None => false,
                            }
                        });
                        if sql.gset.is_some() {
                            c.wbuf.extend_from_slice(&protocol::DESCRIBE_PORTAL);
                        }
                        c.wbuf.extend_from_slice(&protocol::EXECUTE);
                        c.wbuf.extend_from_slice(&protocol::SYNC);
                    }
                }
            }
        }
        if let Some(batch) = &mut c.pipeline {
            if sql.gset.is_some() {
                let why = "\\gset is not allowed in pipeline mode";
                return self.abort(c, AbortKind::Script, why);
            }
            // Without its Sync: \endpipeline sends one for the batch.
            let end = c.wbuf.len().saturating_sub(protocol::SYNC.len());
            batch.extend_from_slice(&c.wbuf[..end]);
            c.wbuf.clear();
            c.cmd += 1;
            return self.advance(c, token);
        }
        if self.cfg.per_statement {
            c.cmd_start = self.clock.now_ns();
        }
        if self.cfg.debug {
            debug_sending(c, &sql.text, program.mode);
        }
        c.phase = Phase::Waiting;
        self.flush(c, token);
    }

    /// `\endpipeline`: the batch and one Sync; its ReadyForQuery ends it.
    pub(super) fn end_pipeline(&mut self, c: &mut Client, token: usize) {
        let Some(batch) = c.pipeline.take() else {
            return self.abort(c, AbortKind::Script, "not in pipeline mode");
        };
        c.wbuf.clear();
        c.wbuf.extend_from_slice(&batch);
        c.wbuf.extend_from_slice(&protocol::SYNC);
        if self.cfg.per_statement {
            c.cmd_start = self.clock.now_ns();
        }
        c.phase = Phase::Waiting;
        self.flush(c, token);
    }
}

/// `--debug`: pgbench's "client N sending ..." with the statement as sent
/// (in simple mode, the variables substituted).
fn debug_sending(c: &Client, text: &str, mode: QueryMode) {
    let sent = match mode {
        // Q, length, the text, its NUL.
        QueryMode::Simple if c.wbuf.len() > 6 => {
            String::from_utf8_lossy(&c.wbuf[5..c.wbuf.len() - 1]).into_owned()
        }
        _ => text.to_string(),
    };
    eprintln!("tare: client {} sending {sent}", c.id);
}

/// Simple mode's statement text: the script's text with each defined
/// variable's value in place of its `:name`.
#[inline]
fn substitute(b: &mut Vec<u8>, sql: &Sql, vars: &[Option<Value>]) {
    let text = sql.text.as_bytes();
    for piece in &sql.pieces {
        match piece {
            Piece::Lit(r) => b.extend_from_slice(&text[r.clone()]),
            Piece::Var(id, r) => match &vars[id.0] {
                Some(v) => push_value(b, v),
                None => b.extend_from_slice(&text[r.clone()]),
            },
        }
    }
}

/// The statement in flight as the server got it, for the caret under an
/// error's position (libpq shows the text it sent): in simple mode with
/// the variables substituted, else with `$n` parameters. `None` for a
/// pipeline's batch, whose failing statement is not known here.
fn sent_text(c: &Client, program: &Program) -> Option<String> {
    let command = program.scripts[c.script].script.commands.get(c.cmd)?;
    let CommandKind::Sql(sql) = &command.kind else {
        return None;
    };
    Some(match program.mode {
        QueryMode::Simple => {
            let mut b = Vec::new();
            substitute(&mut b, sql, &c.vars);
            String::from_utf8_lossy(&b).into_owned()
        }
        QueryMode::Extended | QueryMode::Prepared => sql.parameterized.clone(),
    })
}

/// A variable's value as statement text or a text-format parameter.
#[inline]
fn push_value(b: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Int(i) => protocol::push_int(b, *i),
        Value::Text(s) => b.extend_from_slice(s.as_bytes()),
        other => {
            use std::io::Write;
            let _ = write!(b, "{other}");
        }
    }
}
