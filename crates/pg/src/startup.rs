//! Connection start-up as a state machine fed one backend message at a time,
//! so the same code serves the non-blocking engine loop (where a `-C` run
//! opens thousands of connections) and the blocking [`crate::session`].
//!
//! Authentication: trust, cleartext password, MD5 and SCRAM-SHA-256 (without
//! channel binding, as tare speaks no TLS). Reference: PostgreSQL
//! documentation, 55.2.1 "Start-up" and 55.3 "SASL Authentication".

use bytes::BytesMut;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256, SCRAM_SHA_256};
use postgres_protocol::message::frontend;

use crate::conninfo::ConnParams;
use crate::error::PgError;
use crate::protocol::{tag, ServerError};

/// Where the start-up stands after a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Progress {
    /// Keep reading (after sending whatever was appended to `out`).
    Continue,
    /// `ReadyForQuery`: the connection is usable.
    Ready,
}

#[derive(Default)]
pub(crate) struct Handshake {
    scram: Option<ScramSha256>,
}

impl Handshake {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Appends the StartupMessage (protocol 3.0). Fails on a NUL inside a
    /// value ([`ConnParams::check`] refuses those before any run; this is
    /// the same refusal for a caller that skipped it).
    pub(crate) fn startup(params: &ConnParams, out: &mut Vec<u8>) -> Result<(), PgError> {
        params.check()?;
        let mut b = BytesMut::new();
        let mut kv = vec![
            ("user", params.user.as_str()),
            ("database", params.database.as_str()),
            ("application_name", params.application_name.as_str()),
            ("client_encoding", "UTF8"),
        ];
        if let Some(o) = &params.options {
            kv.push(("options", o.as_str()));
        }
        frontend::startup_message(kv.iter().copied(), &mut b)
            .map_err(|e| PgError::Config(format!("start-up message: {e}")))?;
        out.extend_from_slice(&b);
        Ok(())
    }

    /// Consumes one backend message; replies (if any) are appended to `out`.
    pub(crate) fn on_message(
        &mut self,
        params: &ConnParams,
        msg_tag: u8,
        body: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<Progress, PgError> {
        match msg_tag {
            tag::READY => Ok(Progress::Ready),
            tag::ERROR => Err(PgError::Refused {
                target: params.display_server(),
                error: Box::new(ServerError::parse(body)),
            }),
            tag::AUTHENTICATION => {
                self.authenticate(params, body, out)?;
                Ok(Progress::Continue)
            }
            // ParameterStatus, BackendKeyData, NoticeResponse,
            // NegotiateProtocolVersion: nothing to answer.
            _ => Ok(Progress::Continue),
        }
    }

    fn authenticate(
        &mut self,
        params: &ConnParams,
        body: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), PgError> {
        if body.len() < 4 {
            return Err(PgError::Protocol("truncated authentication request".into()));
        }
        let code = i32::from_be_bytes([body[0], body[1], body[2], body[3]]);
        let data = &body[4..];
        let mut b = BytesMut::new();
        let password = || {
            params.password.as_deref().ok_or_else(|| {
                PgError::Config(format!(
                    "connection to server at {} failed: fe_sendauth: no password supplied (user \"{}\"; give PGPASSWORD or a password file)",
                    params.display_server(),
                    params.user
                ))
            })
        };
        let encode = |e: std::io::Error| {
            PgError::Protocol(format!("encoding an authentication message: {e}"))
        };
        match code {
            0 => return Ok(()),
            3 => frontend::password_message(password()?.as_bytes(), &mut b).map_err(encode)?,
            5 => {
                let salt: [u8; 4] = data
                    .get(..4)
                    .and_then(|s| s.try_into().ok())
                    .ok_or_else(|| PgError::Protocol("MD5 request without salt".into()))?;
                let hash = md5_hash(params.user.as_bytes(), password()?.as_bytes(), salt);
                frontend::password_message(hash.as_bytes(), &mut b).map_err(encode)?;
            }
            10 => {
                let offered = data
                    .split(|c| *c == 0)
                    .any(|m| m == SCRAM_SHA_256.as_bytes());
                if !offered {
                    return Err(PgError::Unsupported(format!(
                        "server offers SASL mechanisms {:?}; tare speaks SCRAM-SHA-256 only",
                        String::from_utf8_lossy(data)
                    )));
                }
                let scram = ScramSha256::new(password()?.as_bytes(), ChannelBinding::unsupported());
                frontend::sasl_initial_response(SCRAM_SHA_256, scram.message(), &mut b)
                    .map_err(encode)?;
                self.scram = Some(scram);
            }
            11 => {
                let scram = self
                    .scram
                    .as_mut()
                    .ok_or_else(|| PgError::Protocol("SASL continue before SASL start".into()))?;
                scram
                    .update(data)
                    .map_err(|e| PgError::Protocol(format!("SCRAM exchange: {e}")))?;
                frontend::sasl_response(scram.message(), &mut b).map_err(encode)?;
            }
            12 => {
                let scram = self
                    .scram
                    .as_mut()
                    .ok_or_else(|| PgError::Protocol("SASL final before SASL start".into()))?;
                // Verifies the server's signature: the server knew the password too.
                scram
                    .finish(data)
                    .map_err(|e| PgError::Protocol(format!("SCRAM server signature: {e}")))?;
            }
            2 | 6 | 7 | 8 | 9 => {
                return Err(PgError::Unsupported(format!(
                "authentication method {code} (Kerberos/SCM/GSSAPI/SSPI) is not supported by tare"
            )))
            }
            other => {
                return Err(PgError::Protocol(format!(
                    "unknown authentication request {other}"
                )))
            }
        }
        out.extend_from_slice(&b);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: `[load.pg] user = "a\u0000"` in an experiment file
    /// panicked here (`expect`); it is an error naming the user now.
    #[test]
    fn startup_with_a_nul_in_the_user_is_an_error_not_a_panic() {
        let mut p = crate::PgConfig::new(
            tare_engine::Endpoint::Tcp("127.0.0.1:5432".parse().unwrap()),
            "a\0",
            "db",
        )
        .conn;
        let mut out = Vec::new();
        let e = Handshake::startup(&p, &mut out).unwrap_err().to_string();
        assert!(e.contains("user name") && e.contains("NUL"), "{e}");
        assert!(out.is_empty());
        p.user = "a".into();
        Handshake::startup(&p, &mut out).unwrap();
        assert!(!out.is_empty());
    }
}
