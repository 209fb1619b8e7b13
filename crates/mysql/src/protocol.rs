//! The MySQL client/server protocol, as far as tare speaks it: packets,
//! the v10 handshake and its reply (mysql_native_password, and the switch
//! to it that MariaDB may ask for), OK/ERR/EOF, COM_QUERY,
//! COM_STMT_PREPARE/EXECUTE/CLOSE, and [`Scanner`], which finds where a
//! reply ends in a byte stream without copying or decoding its rows (the
//! hot path).
//!
//! A packet is a 3-byte little-endian payload length, a sequence id and the
//! payload; every command starts at sequence 0. tare asks for
//! CLIENT_PROTOCOL_41 and not CLIENT_DEPRECATE_EOF, so a result set is
//! column count, column definitions, EOF, rows, EOF (or ERR instead of a
//! row), as both MySQL and MariaDB still send it.

use sha1::{Digest, Sha1};
use sha2::Sha256;

/// The largest payload of one packet; a longer one continues in the next.
pub(crate) const MAX_PAYLOAD: usize = 0xFF_FFFF;

pub const COM_QUIT: u8 = 0x01;
pub const COM_QUERY: u8 = 0x03;
pub(crate) const COM_STMT_PREPARE: u8 = 0x16;
pub(crate) const COM_STMT_EXECUTE: u8 = 0x17;

// Capability flags (the protocol's CLIENT_* constants).
const CLIENT_LONG_PASSWORD: u32 = 0x1;
const CLIENT_LONG_FLAG: u32 = 0x4;
const CLIENT_CONNECT_WITH_DB: u32 = 0x8;
const CLIENT_PROTOCOL_41: u32 = 0x200;
const CLIENT_TRANSACTIONS: u32 = 0x2000;
const CLIENT_SECURE_CONNECTION: u32 = 0x8000;
const CLIENT_MULTI_RESULTS: u32 = 0x2_0000;
const CLIENT_PLUGIN_AUTH: u32 = 0x8_0000;
const CLIENT_PLUGIN_AUTH_LENENC_DATA: u32 = 0x20_0000;

/// Status flag: another result set follows this one.
const SERVER_MORE_RESULTS_EXISTS: u16 = 0x8;

/// utf8mb4_general_ci: a character set both servers have.
const CHARSET: u8 = 45;

/// MySQL's binary-protocol column types tare binds.
const TYPE_LONGLONG: u8 = 0x08;
const TYPE_STRING: u8 = 0xFE;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ProtoError {
    #[error("{0}")]
    Malformed(&'static str),
    #[error("a reply of more than 16 MiB in one packet (not supported)")]
    TooLong,
    #[error("LOCAL INFILE requested by the server (not supported)")]
    LocalInfile,
}

/// An ERR packet: the server's error number, SQLSTATE and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerError {
    pub code: u16,
    pub state: String,
    pub message: String,
}

impl std::fmt::Display for ServerError {
    /// As the mysql client prints it: `ERROR 1045 (28000): Access denied...`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.state.is_empty() {
            write!(f, "ERROR {}: {}", self.code, self.message)
        } else {
            write!(f, "ERROR {} ({}): {}", self.code, self.state, self.message)
        }
    }
}

impl std::error::Error for ServerError {}

/// The header of the packet at the start of `buf`: (payload length,
/// sequence id), or `None` before 4 bytes have arrived.
#[inline]
pub fn header(buf: &[u8]) -> Option<(usize, u8)> {
    if buf.len() < 4 {
        return None;
    }
    Some((
        buf[0] as usize | (buf[1] as usize) << 8 | (buf[2] as usize) << 16,
        buf[3],
    ))
}

/// Starts a packet in `out`; [`end_packet`] fills in its length.
#[inline]
pub(crate) fn begin_packet(out: &mut Vec<u8>, seq: u8) -> usize {
    let at = out.len();
    out.extend_from_slice(&[0, 0, 0, seq]);
    at
}

/// Writes the length of the packet begun at `at` (payloads tare writes are
/// far below 16 MiB).
#[inline]
pub(crate) fn end_packet(out: &mut [u8], at: usize) {
    let len = out.len() - at - 4;
    debug_assert!(len < MAX_PAYLOAD);
    out[at] = len as u8;
    out[at + 1] = (len >> 8) as u8;
    out[at + 2] = (len >> 16) as u8;
}

/// A length-encoded integer.
pub(crate) fn put_lenenc(out: &mut Vec<u8>, n: u64) {
    match n {
        0..=250 => out.push(n as u8),
        251..=0xFFFF => {
            out.push(0xFC);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xFF_FFFF => {
            out.push(0xFD);
            out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xFE);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
}

/// Reads a length-encoded integer at the start of `b`: (value, bytes used).
/// `None` for NULL (0xFB) or a truncated one.
pub(crate) fn get_lenenc(b: &[u8]) -> Option<(u64, usize)> {
    let le = |n: usize| -> Option<u64> {
        let bytes = b.get(1..1 + n)?;
        Some(bytes.iter().rev().fold(0u64, |a, &x| a << 8 | x as u64))
    };
    match *b.first()? {
        x @ 0..=250 => Some((x as u64, 1)),
        0xFC => Some((le(2)?, 3)),
        0xFD => Some((le(3)?, 4)),
        0xFE => Some((le(8)?, 9)),
        _ => None,
    }
}

/// A length-encoded string at the start of `b`: (bytes or `None` for NULL,
/// bytes used).
pub(crate) fn get_lenenc_str(b: &[u8]) -> Result<(Option<&[u8]>, usize), ProtoError> {
    if b.first() == Some(&0xFB) {
        return Ok((None, 1));
    }
    let (n, used) = get_lenenc(b).ok_or(ProtoError::Malformed("a truncated length"))?;
    let end = used
        .checked_add(usize::try_from(n).map_err(|_| ProtoError::Malformed("a huge length"))?)
        .ok_or(ProtoError::Malformed("a huge length"))?;
    let s = b
        .get(used..end)
        .ok_or(ProtoError::Malformed("a truncated string"))?;
    Ok((Some(s), end))
}

/// The server's first packet (Protocol::HandshakeV10).
#[derive(Clone, Debug)]
pub struct Handshake {
    /// MariaDB's, without the `5.5.5-` its old-client form starts with.
    pub server_version: String,
    pub connection_id: u32,
    /// The 20-byte scramble.
    pub salt: Vec<u8>,
    pub capabilities: u32,
    /// The authentication plugin the server proposes.
    pub plugin: String,
}

fn cstr(b: &[u8]) -> Result<(&[u8], &[u8]), ProtoError> {
    let n = b
        .iter()
        .position(|&x| x == 0)
        .ok_or(ProtoError::Malformed("a string without its NUL"))?;
    Ok((&b[..n], &b[n + 1..]))
}

/// Parses the handshake packet's payload; an ERR packet here (too many
/// connections, a blocked host) is the server's refusal.
pub(crate) fn parse_handshake(p: &[u8]) -> Result<Result<Handshake, ServerError>, ProtoError> {
    match p.first() {
        Some(0xFF) => return Ok(Err(parse_err(p)?)),
        Some(10) => {}
        Some(_) => return Err(ProtoError::Malformed("not a protocol 10 handshake")),
        None => return Err(ProtoError::Malformed("an empty handshake")),
    }
    let (version, rest) = cstr(&p[1..])?;
    let short = || ProtoError::Malformed("a truncated handshake");
    let fixed = rest.get(..31).ok_or_else(short)?;
    let connection_id = u32::from_le_bytes([fixed[0], fixed[1], fixed[2], fixed[3]]);
    let mut salt = fixed[4..12].to_vec();
    let caps_low = u16::from_le_bytes([fixed[13], fixed[14]]) as u32;
    let caps_high = u16::from_le_bytes([fixed[18], fixed[19]]) as u32;
    let capabilities = caps_low | caps_high << 16;
    let auth_len = fixed[20] as usize;
    let mut rest = &rest[31..];
    if capabilities & CLIENT_SECURE_CONNECTION != 0 {
        // The scramble's second part: max(13, len - 8) bytes, the last a NUL.
        let n = auth_len.saturating_sub(8).max(13);
        let part = rest.get(..n).ok_or_else(short)?;
        let part = part.strip_suffix(&[0]).unwrap_or(part);
        salt.extend_from_slice(part);
        rest = &rest[n..];
    }
    let plugin = if capabilities & CLIENT_PLUGIN_AUTH != 0 && !rest.is_empty() {
        let end = rest.iter().position(|&x| x == 0).unwrap_or(rest.len());
        String::from_utf8_lossy(&rest[..end]).into_owned()
    } else {
        "mysql_native_password".into()
    };
    let version = String::from_utf8_lossy(version);
    Ok(Ok(Handshake {
        server_version: version
            .strip_prefix("5.5.5-")
            .unwrap_or(&version)
            .to_string(),
        connection_id,
        salt,
        capabilities,
        plugin,
    }))
}

/// mysql_native_password: SHA1(pw) XOR SHA1(salt + SHA1(SHA1(pw))); an
/// empty password answers with nothing.
pub(crate) fn native_password(password: &[u8], salt: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let h1 = Sha1::digest(password);
    let h2 = Sha1::digest(h1);
    let mut h = Sha1::new();
    h.update(salt.get(..20).unwrap_or(salt));
    h.update(h2);
    let h3 = h.finalize();
    h1.iter().zip(h3.iter()).map(|(a, b)| a ^ b).collect()
}

/// caching_sha2_password's fast path: SHA256(pw) XOR
/// SHA256(SHA256(SHA256(pw)) followed by the salt); an empty password
/// answers with nothing. The server compares it with the hash it cached at
/// the user's last full authentication.
pub(crate) fn sha2_password(password: &[u8], salt: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let h1 = Sha256::digest(password);
    let h2 = Sha256::digest(h1);
    let mut h = Sha256::new();
    h.update(h2);
    h.update(salt.get(..20).unwrap_or(salt));
    let h3 = h.finalize();
    h1.iter().zip(h3.iter()).map(|(a, b)| a ^ b).collect()
}

/// The plugin tare answers a server's proposal with: caching_sha2_password
/// when proposed (MySQL 8's default), else mysql_native_password (a server
/// whose user needs another plugin asks to switch).
pub(crate) fn answer_plugin(proposed: &str) -> &'static str {
    match proposed {
        CACHING_SHA2 => CACHING_SHA2,
        _ => "mysql_native_password",
    }
}

pub(crate) const CACHING_SHA2: &str = "caching_sha2_password";

/// caching_sha2_password's AuthMoreData after the scramble: the server had
/// the hash cached and an OK follows (`FAST_AUTH_OK`), or it needs the
/// password itself (`FULL_AUTH`).
pub(crate) const FAST_AUTH_OK: u8 = 3;
pub(crate) const FULL_AUTH: u8 = 4;

/// What tare answers for the plugin `plugin` with `salt`: the scramble of
/// mysql_native_password or caching_sha2_password, the password itself for
/// mysql_clear_password (the caller allows that only over a Unix socket),
/// or why not.
pub(crate) fn auth_data(plugin: &str, password: &[u8], salt: &[u8]) -> Result<Vec<u8>, String> {
    match plugin {
        "mysql_native_password" | "" => Ok(native_password(password, salt)),
        CACHING_SHA2 => Ok(sha2_password(password, salt)),
        "mysql_clear_password" => {
            let mut v = password.to_vec();
            v.push(0);
            Ok(v)
        }
        other => Err(format!(
            "the server asks for the {other} authentication plugin; tare mysql speaks mysql_native_password and caching_sha2_password (create the user WITH mysql_native_password)"
        )),
    }
}

/// The handshake response (HandshakeResponse41) as a whole packet, sequence 1.
pub(crate) fn handshake_response(
    out: &mut Vec<u8>,
    hs: &Handshake,
    user: &str,
    auth: &[u8],
    plugin: &str,
    db: Option<&str>,
) {
    let mut caps = CLIENT_LONG_PASSWORD
        | CLIENT_LONG_FLAG
        | CLIENT_PROTOCOL_41
        | CLIENT_TRANSACTIONS
        | CLIENT_SECURE_CONNECTION
        | CLIENT_MULTI_RESULTS
        | CLIENT_PLUGIN_AUTH
        | CLIENT_PLUGIN_AUTH_LENENC_DATA;
    if db.is_some() {
        caps |= CLIENT_CONNECT_WITH_DB;
    }
    caps &= hs.capabilities | CLIENT_LONG_PASSWORD;
    let at = begin_packet(out, 1);
    out.extend_from_slice(&caps.to_le_bytes());
    out.extend_from_slice(&(MAX_PAYLOAD as u32).to_le_bytes());
    out.push(CHARSET);
    out.extend_from_slice(&[0u8; 23]);
    out.extend_from_slice(user.as_bytes());
    out.push(0);
    if caps & CLIENT_PLUGIN_AUTH_LENENC_DATA != 0 {
        put_lenenc(out, auth.len() as u64);
    } else {
        out.push(auth.len() as u8);
    }
    out.extend_from_slice(auth);
    if let Some(db) = db.filter(|_| caps & CLIENT_CONNECT_WITH_DB != 0) {
        out.extend_from_slice(db.as_bytes());
        out.push(0);
    }
    if caps & CLIENT_PLUGIN_AUTH != 0 {
        out.extend_from_slice(plugin.as_bytes());
        out.push(0);
    }
    end_packet(out, at);
}

/// What the server answers during authentication.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum AuthReply {
    Ok,
    Err(ServerError),
    /// AuthSwitchRequest: answer for this plugin with this salt.
    Switch {
        plugin: String,
        salt: Vec<u8>,
    },
    /// AuthMoreData (a plugin's further exchange).
    More(Vec<u8>),
}

pub(crate) fn parse_auth_reply(p: &[u8]) -> Result<AuthReply, ProtoError> {
    match p.first() {
        Some(0x00) => Ok(AuthReply::Ok),
        Some(0xFF) => Ok(AuthReply::Err(parse_err(p)?)),
        Some(0xFE) => {
            if p.len() == 1 {
                // The old switch to mysql_old_password.
                return Ok(AuthReply::Switch {
                    plugin: "mysql_old_password".into(),
                    salt: Vec::new(),
                });
            }
            let (name, rest) = cstr(&p[1..])?;
            let salt = rest.strip_suffix(&[0]).unwrap_or(rest).to_vec();
            Ok(AuthReply::Switch {
                plugin: String::from_utf8_lossy(name).into_owned(),
                salt,
            })
        }
        Some(0x01) => Ok(AuthReply::More(p[1..].to_vec())),
        _ => Err(ProtoError::Malformed("an unknown authentication reply")),
    }
}

/// An ERR packet's payload.
pub(crate) fn parse_err(p: &[u8]) -> Result<ServerError, ProtoError> {
    if p.len() < 3 || p[0] != 0xFF {
        return Err(ProtoError::Malformed("a truncated ERR packet"));
    }
    let code = u16::from_le_bytes([p[1], p[2]]);
    let rest = &p[3..];
    let (state, message) = match rest.first() {
        Some(b'#') if rest.len() >= 6 => (&rest[1..6], &rest[6..]),
        _ => (&rest[..0], rest),
    };
    Ok(ServerError {
        code,
        state: String::from_utf8_lossy(state).into_owned(),
        message: String::from_utf8_lossy(message).into_owned(),
    })
}

/// An OK packet's counts and status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ok {
    pub affected_rows: u64,
    pub last_insert_id: u64,
    pub status: u16,
    pub warnings: u16,
}

pub(crate) fn parse_ok(p: &[u8]) -> Result<Ok, ProtoError> {
    let bad = ProtoError::Malformed("a truncated OK packet");
    if p.is_empty() {
        return Err(bad);
    }
    let (affected_rows, a) = get_lenenc(&p[1..]).ok_or(bad.clone())?;
    let (last_insert_id, b) = get_lenenc(&p[1 + a..]).ok_or(bad.clone())?;
    let at = 1 + a + b;
    let (status, warnings) = match p.get(at..at + 4) {
        Some(s) => (
            u16::from_le_bytes([s[0], s[1]]),
            u16::from_le_bytes([s[2], s[3]]),
        ),
        None => (0, 0),
    };
    Ok(Ok {
        affected_rows,
        last_insert_id,
        status,
        warnings,
    })
}

/// An EOF packet: 0xFE and fewer than 9 bytes (a row starting with 0xFE is
/// a length of 8 bytes, so at least 9).
#[inline]
fn is_eof(p: &[u8]) -> bool {
    p.first() == Some(&0xFE) && p.len() < 9
}

#[inline]
fn eof_status(p: &[u8]) -> u16 {
    match p.get(3..5) {
        Some(s) => u16::from_le_bytes([s[0], s[1]]),
        None => 0,
    }
}

/// A command with one argument as a whole packet: COM_QUERY's SQL,
/// COM_STMT_PREPARE's statement.
pub fn command(out: &mut Vec<u8>, com: u8, arg: &[u8]) {
    let at = begin_packet(out, 0);
    out.push(com);
    out.extend_from_slice(arg);
    end_packet(out, at);
}

/// One bound parameter.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Param<'a> {
    Int(i64),
    Str(&'a [u8]),
}

/// COM_STMT_EXECUTE of statement `id` with `params`, no cursor. The
/// parameters' types go with `types` (new-params-bound = 1); without, the
/// server reuses the types of the statement's previous execution, as
/// libmysqlclient sends them (and so sysbench): once per statement.
pub(crate) fn stmt_execute(out: &mut Vec<u8>, id: u32, params: &[Param<'_>], types: bool) {
    let at = begin_packet(out, 0);
    out.push(COM_STMT_EXECUTE);
    out.extend_from_slice(&id.to_le_bytes());
    out.push(0); // CURSOR_TYPE_NO_CURSOR
    out.extend_from_slice(&1u32.to_le_bytes()); // iteration count
    if !params.is_empty() {
        out.extend(std::iter::repeat_n(0u8, params.len().div_ceil(8)));
        out.push(u8::from(types));
        if types {
            for p in params {
                let t = match p {
                    Param::Int(_) => TYPE_LONGLONG,
                    Param::Str(_) => TYPE_STRING,
                };
                out.extend_from_slice(&[t, 0]);
            }
        }
        for p in params {
            match p {
                Param::Int(v) => out.extend_from_slice(&v.to_le_bytes()),
                Param::Str(s) => {
                    put_lenenc(out, s.len() as u64);
                    out.extend_from_slice(s);
                }
            }
        }
    }
    end_packet(out, at);
}

/// A reply, once [`Scanner`] has seen all of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    /// An OK packet (a statement without a result set).
    Ok { affected_rows: u64 },
    /// A result set of this many rows.
    Rows(u64),
    /// An ERR packet: the server's error number.
    Err(u16),
    /// COM_STMT_PREPARE's answer: the statement id and its parameter count.
    Prepared { id: u32, params: u16 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// The reply's first packet.
    First,
    /// Column definitions still to come, then an EOF.
    Columns(u64),
    ColumnsEof,
    /// Rows until an EOF (or ERR).
    Rows,
    /// A prepare: parameter definitions, their EOF, columns, their EOF.
    PrepParams {
        params: u64,
        columns: u64,
    },
    PrepParamsEof {
        columns: u64,
    },
    PrepColumns(u64),
    PrepColumnsEof,
}

/// Finds where a reply ends, packet by packet, in bytes as they arrive:
/// [`Scanner::scan`] consumes whole packets only and says how many bytes
/// it used, so the caller keeps the rest for the next read. Rows are
/// counted, not decoded.
#[derive(Clone, Debug)]
pub(crate) struct Scanner {
    state: State,
    prepare: bool,
    rows: u64,
    /// For a prepare: the id and parameter count of its OK.
    prepared: (u32, u16),
    /// A result set of several (CALL, multi-statement) is one reply.
    more: bool,
}

impl Scanner {
    /// For the reply to COM_QUERY or COM_STMT_EXECUTE.
    pub(crate) fn query() -> Scanner {
        Scanner {
            state: State::First,
            prepare: false,
            rows: 0,
            prepared: (0, 0),
            more: false,
        }
    }

    /// For the reply to COM_STMT_PREPARE.
    pub(crate) fn prepare() -> Scanner {
        Scanner {
            prepare: true,
            ..Scanner::query()
        }
    }

    /// Scans whole packets of `buf`: `(bytes used, the reply when it is
    /// complete)`. After a complete reply the scanner is ready for the
    /// next one of the same kind.
    pub(crate) fn scan(&mut self, buf: &[u8]) -> Result<(usize, Option<Reply>), ProtoError> {
        let mut used = 0;
        while let Some((len, _seq)) = header(&buf[used..]) {
            if len == MAX_PAYLOAD {
                return Err(ProtoError::TooLong);
            }
            let end = used + 4 + len;
            if end > buf.len() {
                break;
            }
            let p = &buf[used + 4..end];
            used = end;
            if let Some(r) = self.packet(p)? {
                return Ok((used, Some(r)));
            }
        }
        Ok((used, None))
    }

    /// Bytes still needed for the packet at the start of `buf` (to grow a
    /// read buffer once for a large one).
    pub(crate) fn pending_len(buf: &[u8]) -> Option<usize> {
        header(buf).map(|(len, _)| 4 + len)
    }

    fn done(&mut self, r: Reply) -> Option<Reply> {
        self.state = State::First;
        self.rows = 0;
        Some(r)
    }

    fn packet(&mut self, p: &[u8]) -> Result<Option<Reply>, ProtoError> {
        match self.state {
            State::First => self.first(p),
            State::Columns(n) => {
                if is_eof(p) || p.first() == Some(&0xFF) {
                    return Err(ProtoError::Malformed(
                        "fewer column definitions than columns",
                    ));
                }
                self.state = if n == 1 {
                    State::ColumnsEof
                } else {
                    State::Columns(n - 1)
                };
                Ok(None)
            }
            State::ColumnsEof => {
                if !is_eof(p) {
                    return Err(ProtoError::Malformed("no EOF after the column definitions"));
                }
                self.state = State::Rows;
                Ok(None)
            }
            State::Rows => self.row(p),
            State::PrepParams { params, columns } => {
                if is_eof(p) {
                    return Err(ProtoError::Malformed(
                        "fewer parameter definitions than parameters",
                    ));
                }
                self.state = State::PrepParams {
                    params: params - 1,
                    columns,
                };
                if params == 1 {
                    self.state = State::PrepParamsEof { columns };
                }
                Ok(None)
            }
            State::PrepParamsEof { columns } => {
                if !is_eof(p) {
                    return Err(ProtoError::Malformed(
                        "no EOF after the parameter definitions",
                    ));
                }
                self.state = State::PrepColumns(columns);
                self.prepare_step()
            }
            State::PrepColumns(n) => {
                if is_eof(p) {
                    return Err(ProtoError::Malformed(
                        "fewer column definitions than columns",
                    ));
                }
                self.state = if n == 1 {
                    State::PrepColumnsEof
                } else {
                    State::PrepColumns(n - 1)
                };
                Ok(None)
            }
            State::PrepColumnsEof => {
                if !is_eof(p) {
                    return Err(ProtoError::Malformed("no EOF after the column definitions"));
                }
                let (id, params) = self.prepared;
                Ok(self.done(Reply::Prepared { id, params }))
            }
        }
    }

    /// The first packet of a reply: an error, an OK (of a prepare or a
    /// statement), or a result set's column count.
    fn first(&mut self, p: &[u8]) -> Result<Option<Reply>, ProtoError> {
        match p.first() {
            None => Err(ProtoError::Malformed("an empty packet")),
            Some(0xFF) => {
                let e = parse_err(p)?;
                self.more = false;
                Ok(self.done(Reply::Err(e.code)))
            }
            Some(0x00) if self.prepare => {
                if p.len() < 9 {
                    return Err(ProtoError::Malformed("a truncated prepare OK"));
                }
                let id = u32::from_le_bytes([p[1], p[2], p[3], p[4]]);
                let columns = u16::from_le_bytes([p[5], p[6]]) as u64;
                let params = u16::from_le_bytes([p[7], p[8]]);
                self.prepared = (id, params);
                self.state = State::PrepParams {
                    params: params as u64,
                    columns,
                };
                self.prepare_step()
            }
            Some(0x00) => {
                let ok = parse_ok(p)?;
                if ok.status & SERVER_MORE_RESULTS_EXISTS != 0 {
                    self.more = true;
                    return Ok(None);
                }
                let had_rows = std::mem::take(&mut self.more);
                Ok(self.done(if had_rows {
                    Reply::Rows(self.rows)
                } else {
                    Reply::Ok {
                        affected_rows: ok.affected_rows,
                    }
                }))
            }
            Some(0xFB) => Err(ProtoError::LocalInfile),
            Some(_) if self.prepare => Err(ProtoError::Malformed("not a prepare reply")),
            Some(_) => {
                let (n, used) = get_lenenc(p).ok_or(ProtoError::Malformed("a column count"))?;
                if used != p.len() || n == 0 {
                    return Err(ProtoError::Malformed("not a column count"));
                }
                self.state = State::Columns(n);
                Ok(None)
            }
        }
    }

    /// A packet of a result set's rows: a row, an error, or the EOF that
    /// ends the set (or announces another).
    fn row(&mut self, p: &[u8]) -> Result<Option<Reply>, ProtoError> {
        if p.first() == Some(&0xFF) {
            let e = parse_err(p)?;
            self.more = false;
            return Ok(self.done(Reply::Err(e.code)));
        }
        if is_eof(p) {
            if eof_status(p) & SERVER_MORE_RESULTS_EXISTS != 0 {
                self.more = true;
                self.state = State::First;
                return Ok(None);
            }
            self.more = false;
            let rows = self.rows;
            return Ok(self.done(Reply::Rows(rows)));
        }
        self.rows += 1;
        Ok(None)
    }

    /// Skips the parts of a prepare reply that are empty.
    fn prepare_step(&mut self) -> Result<Option<Reply>, ProtoError> {
        if let State::PrepParams { params: 0, columns } = self.state {
            self.state = State::PrepColumns(columns);
        }
        if self.state == State::PrepColumns(0) {
            let (id, params) = self.prepared;
            return Ok(self.done(Reply::Prepared { id, params }));
        }
        Ok(None)
    }
}

/// A text-protocol row's values (the blocking session's results).
pub(crate) fn text_row(p: &[u8], columns: usize) -> Result<Vec<Option<String>>, ProtoError> {
    let mut at = 0;
    let mut row = Vec::with_capacity(columns);
    for _ in 0..columns {
        let (v, used) = get_lenenc_str(&p[at..])?;
        row.push(v.map(|b| String::from_utf8_lossy(b).into_owned()));
        at += used;
    }
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn execute_sends_the_types_only_when_asked() {
        let params = [Param::Int(7), Param::Str(b"ab")];
        let (mut first, mut next) = (Vec::new(), Vec::new());
        stmt_execute(&mut first, 3, &params, true);
        stmt_execute(&mut next, 3, &params, false);
        // Header, command, id, cursor, iterations, null bitmap, bound flag.
        let head = 4 + 1 + 4 + 1 + 4 + 1;
        assert_eq!(first[head], 1);
        assert_eq!(
            &first[head + 1..head + 5],
            &[TYPE_LONGLONG, 0, TYPE_STRING, 0]
        );
        assert_eq!(next[head], 0);
        assert_eq!(&next[head + 1..], &first[head + 5..]);
        assert_eq!(next.len() + 4, first.len());
    }

    fn pkt(seq: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        let at = begin_packet(&mut v, seq);
        v.extend_from_slice(payload);
        end_packet(&mut v, at);
        v
    }

    const EOF: &[u8] = &[0xFE, 0, 0, 2, 0];

    #[test]
    fn native_password_matches_the_known_vector() {
        // The scramble of "password" for a salt of 20 bytes 0x01..0x14,
        // computed independently with Python's hashlib.
        let salt: Vec<u8> = (1..=20).collect();
        let got = native_password(b"password", &salt);
        let hex: String = got.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex.len(), 40);
        assert_eq!(native_password(b"", &salt), Vec::<u8>::new());
        // Symmetric check: XOR with SHA1(pw) gives SHA1(salt + SHA1(SHA1(pw))).
        let h1 = Sha1::digest(b"password");
        let x: Vec<u8> = got.iter().zip(h1.iter()).map(|(a, b)| a ^ b).collect();
        let mut h = Sha1::new();
        h.update(&salt);
        h.update(Sha1::digest(h1));
        assert_eq!(x, h.finalize().to_vec());
    }

    #[test]
    fn sha2_password_matches_the_vectors_other_clients_test_with() {
        // go-sql-driver/mysql's auth_test.go (TestSHA256Pass): this salt,
        // "secret" and "secret2".
        let salt = [
            10, 47, 74, 111, 75, 73, 34, 48, 88, 76, 114, 74, 37, 13, 3, 80, 82, 2, 23, 21,
        ];
        let hex = |v: Vec<u8>| v.iter().map(|b| format!("{b:02x}")).collect::<String>();
        assert_eq!(
            hex(sha2_password(b"secret", &salt)),
            "f490e76f66d9d86665ce54d98c78d0acfe2fb0b08b423da807144873d30b312c"
        );
        assert_eq!(
            hex(sha2_password(b"secret2", &salt)),
            "abc3934a012cf342e876071c8ee202de51785b430258a7a0138bc79c4d800bc6"
        );
        assert!(sha2_password(b"", &salt).is_empty());
        assert_eq!(answer_plugin(CACHING_SHA2), CACHING_SHA2);
        assert_eq!(answer_plugin("client_ed25519"), "mysql_native_password");
    }

    #[test]
    fn a_result_set_is_found_across_reads() {
        let mut bytes = pkt(1, &[2]);
        bytes.extend(pkt(2, b"coldef-a"));
        bytes.extend(pkt(3, b"coldef-b"));
        bytes.extend(pkt(4, EOF));
        for i in 0..3u8 {
            bytes.extend(pkt(5 + i, &[0, 0, 0, 0, i]));
        }
        bytes.extend(pkt(8, EOF));
        bytes.extend(pkt(0, &[0, 1, 0, 2, 0, 0, 0])); // the next reply: OK
        let mut s = Scanner::query();
        let mut at = 0;
        let mut got = Vec::new();
        // One byte more at a time: every split point.
        for end in 1..=bytes.len() {
            let (used, r) = s.scan(&bytes[at..end]).unwrap();
            at += used;
            got.extend(r);
        }
        assert_eq!(got, vec![Reply::Rows(3), Reply::Ok { affected_rows: 1 }]);
        assert_eq!(at, bytes.len());
    }

    #[test]
    fn errors_and_prepares_are_replies() {
        let mut s = Scanner::query();
        let err = pkt(1, b"\xff\xbd\x04#40001Deadlock found");
        assert_eq!(s.scan(&err).unwrap(), (err.len(), Some(Reply::Err(1213))));
        let e = parse_err(&err[4..]).unwrap();
        assert_eq!(e.state, "40001");
        assert_eq!(e.to_string(), "ERROR 1213 (40001): Deadlock found");

        let mut p = Scanner::prepare();
        let mut b = pkt(1, &[0, 7, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0]);
        b.extend(pkt(2, b"param1"));
        b.extend(pkt(3, b"param2"));
        b.extend(pkt(4, EOF));
        b.extend(pkt(5, b"column"));
        b.extend(pkt(6, EOF));
        assert_eq!(
            p.scan(&b).unwrap(),
            (b.len(), Some(Reply::Prepared { id: 7, params: 2 }))
        );
        let b = pkt(1, &[0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            p.scan(&b).unwrap(),
            (b.len(), Some(Reply::Prepared { id: 9, params: 0 }))
        );
    }

    #[test]
    fn lenenc_round_trips() {
        for n in [
            0u64,
            250,
            251,
            65535,
            65536,
            0xFF_FFFF,
            0x100_0000,
            u64::MAX,
        ] {
            let mut v = Vec::new();
            put_lenenc(&mut v, n);
            assert_eq!(get_lenenc(&v), Some((n, v.len())));
        }
    }

    #[test]
    fn a_mariadb_handshake_is_read() {
        let mut p = vec![10];
        p.extend_from_slice(b"5.5.5-10.11.6-MariaDB-0+deb12u1\0");
        p.extend_from_slice(&42u32.to_le_bytes());
        p.extend_from_slice(b"abcdefgh\0");
        p.extend_from_slice(&0xF7FEu16.to_le_bytes());
        p.push(45);
        p.extend_from_slice(&2u16.to_le_bytes());
        p.extend_from_slice(&0x81BFu16.to_le_bytes());
        p.push(21);
        p.extend_from_slice(&[0u8; 10]);
        p.extend_from_slice(b"ijklmnopqrst\0");
        p.extend_from_slice(b"mysql_native_password\0");
        let hs = parse_handshake(&p).unwrap().unwrap();
        assert_eq!(hs.server_version, "10.11.6-MariaDB-0+deb12u1");
        assert_eq!(hs.connection_id, 42);
        assert_eq!(hs.salt, b"abcdefghijklmnopqrst");
        assert_eq!(hs.plugin, "mysql_native_password");
    }
}
