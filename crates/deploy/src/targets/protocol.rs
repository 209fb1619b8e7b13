//! The protocol a target speaks: which load engine loads it, how its
//! readiness is probed with a real request of it (a listening socket is not
//! enough: nginx binds before its workers run, postgres accepts before
//! recovery ends), and the URL the engine is pointed at. A built-in target
//! and a user's service that speak one protocol are probed and loaded alike.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tare_engine::Endpoint;

use super::{http_url, Server};
use crate::health::{self, Unready};

/// A protocol tare has a load engine for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// HTTP/1.1: `tare http`.
    Http,
    /// PostgreSQL's wire protocol: `tare pg`.
    Pg,
    /// RESP: `tare redis`.
    Redis,
    /// MySQL's protocol: `tare mysql`.
    Mysql,
    /// `tare net`'s request/response framing.
    Net,
    /// The tool agent's job protocol (tare's own agent only).
    Tool,
}

impl Protocol {
    /// Every protocol, in the order errors list them.
    pub const ALL: &'static [Protocol] = &[
        Protocol::Http,
        Protocol::Pg,
        Protocol::Redis,
        Protocol::Mysql,
        Protocol::Net,
        Protocol::Tool,
    ];

    /// The load engine that speaks it (its name in `[load] engine`).
    pub fn engine(self) -> &'static str {
        match self {
            Protocol::Http => "http",
            Protocol::Pg => "pg",
            Protocol::Redis => "redis",
            Protocol::Mysql => "mysql",
            Protocol::Net => "net",
            Protocol::Tool => "tool",
        }
    }

    /// Whether a user's service may speak it: the tool protocol is tare's
    /// own agent's.
    pub fn for_services(self) -> bool {
        self != Protocol::Tool
    }

    /// One readiness check: a real request of the protocol, bounded by
    /// `timeout`.
    pub(crate) fn probe(
        self,
        server: &Server,
        endpoint: &Endpoint,
        timeout: Duration,
    ) -> Result<(), Unready> {
        match self {
            Protocol::Http => health::http_get(endpoint, &server.resource, timeout),
            Protocol::Pg => super::postgres::ready(endpoint, timeout).map_err(Unready::from),
            Protocol::Redis => super::redis::ping(endpoint, timeout).map_err(Unready::from),
            Protocol::Mysql => super::mariadb::select_one(endpoint, timeout).map_err(Unready::from),
            Protocol::Net => super::net::round_trip(endpoint, timeout).map_err(Unready::from),
            Protocol::Tool => super::tool::ping_agent(endpoint, timeout).map_err(Unready::from),
        }
    }

    /// What the engine is pointed at: the served resource's URL (HTTP), a
    /// `postgres://`, `redis://` or `mysql://` URL naming the endpoint (the
    /// user and database tare's own servers have), or the address.
    pub(crate) fn url(self, resource: &str, endpoint: &Endpoint) -> String {
        match (self, endpoint) {
            (Protocol::Http, _) => http_url(resource, endpoint),
            (Protocol::Pg, Endpoint::Tcp(a)) => format!("postgres://postgres@{a}/postgres"),
            (Protocol::Pg, Endpoint::Unix(p)) => {
                let dir = p
                    .parent()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default();
                let port = super::postgres::socket_port(p).unwrap_or(5432);
                format!("postgres://postgres@/postgres?host={dir}&port={port}")
            }
            (Protocol::Redis, Endpoint::Tcp(a)) => format!("redis://{a}/0"),
            (Protocol::Redis, Endpoint::Unix(p)) => format!("unix:{}", p.display()),
            (Protocol::Mysql, Endpoint::Tcp(a)) => format!("mysql://sbtest@{a}/sbtest"),
            (Protocol::Mysql, Endpoint::Unix(p)) => {
                format!("unix:{}?user=sbtest&db=sbtest", p.display())
            }
            (Protocol::Net | Protocol::Tool, _) => endpoint.to_string(),
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.engine())
    }
}

impl FromStr for Protocol {
    type Err = String;

    /// By the engine's name.
    fn from_str(s: &str) -> Result<Protocol, String> {
        Protocol::ALL
            .iter()
            .copied()
            .find(|p| p.engine() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Protocol::ALL
                    .iter()
                    .filter(|p| p.for_services())
                    .map(|p| p.engine())
                    .collect();
                format!("unknown engine `{s}` (one of: {})", names.join(", "))
            })
    }
}
