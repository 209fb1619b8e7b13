//! `engine = "net"` (the default for the `net` target): `[load.net]` and
//! runs of `tare_net`, the IBM study's network rows (docs/net.md).
//!
//! ```toml
//! [load.net]
//! test = "rr"            # rr (TCP_RR), crr (TCP_CRR), udp-rr (UDP_RR), stream
//! request = 100          # bytes (stream: bytes per write; default 128k)
//! response = 200         # bytes (stream: bytes per read)
//! direction = "send"     # stream: send, receive or both
//! ```

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tare_engine::load::Load;
use tare_net::config::{DEFAULT_SIZES, DEFAULT_STREAM_SIZE};
use tare_net::{Direction, Net, NetConfig, Test};
use tare_record::LoadResult;
use toml::Spanned;

use super::{experiment_defaults, measure, table_of, ExperimentEngine, Kind, Offer, Spans, Table};
use crate::executor::ExecError;
use crate::experiment::error::{ExperimentError, Locator};

pub(super) struct NetEngine;

/// `[load.net]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNet {
    test: Option<Spanned<String>>,
    request: Option<Spanned<i64>>,
    response: Option<Spanned<i64>>,
    direction: Option<Spanned<String>>,
}

/// `[load.net]`, checked.
#[derive(Clone, Debug, PartialEq, Serialize)]
struct NetTable {
    test: String,
    request: usize,
    response: usize,
    direction: String,
}

impl NetTable {
    fn config(&self, endpoint: tare_engine::Endpoint, load: &Load) -> NetConfig {
        let test: Test = self.test.parse().expect("checked when read");
        let mut c = NetConfig::new(endpoint, test);
        c.load = load.clone();
        c.request = self.request;
        c.response = self.response;
        c.direction = self.direction.parse().expect("checked when read");
        c
    }
}

impl ExperimentEngine for NetEngine {
    fn kind(&self) -> Kind {
        Kind::of::<Net>()
    }

    /// One connection, one transaction in flight: netperf's default and the
    /// IBM study's setting (round-trip latency, not capacity).
    fn defaults(&self) -> Load {
        Load {
            threads: 1,
            connections: 1,
            timeout: Duration::from_secs(1),
            ..experiment_defaults()
        }
    }

    fn table(
        &self,
        loc: &Locator<'_>,
        _load: &mut Load,
        _spans: &mut Spans,
    ) -> Result<Arc<dyn Table>, ExperimentError> {
        let raw: RawNet = table_of(loc, self.name())?.unwrap_or_default();
        let test = match &raw.test {
            None => Test::Rr,
            Some(t) => t
                .get_ref()
                .parse::<Test>()
                .map_err(|e| loc.error(t.span(), "load.net.test", e))?,
        };
        let direction = match &raw.direction {
            None => Direction::Send,
            Some(d) if test != Test::Stream => {
                return Err(loc.error(
                    d.span(),
                    "load.net.direction",
                    "is for test = \"stream\" only",
                ))
            }
            Some(d) => d
                .get_ref()
                .parse::<Direction>()
                .map_err(|e| loc.error(d.span(), "load.net.direction", e))?,
        };
        let (req0, resp0) = if test == Test::Stream {
            (DEFAULT_STREAM_SIZE, DEFAULT_STREAM_SIZE)
        } else {
            DEFAULT_SIZES
        };
        let mut table = NetTable {
            test: test.name().into(),
            request: req0,
            response: resp0,
            direction: direction.name().into(),
        };
        // Each size checked as `tare net` checks it (one place: NetConfig).
        for (key, raw, slot) in [
            ("load.net.request", &raw.request, &mut table.request),
            ("load.net.response", &raw.response, &mut table.response),
        ] {
            if let Some(v) = raw {
                *slot = usize::try_from(*v.get_ref()).unwrap_or(0);
                let mut probe =
                    NetConfig::new(tare_engine::Endpoint::Tcp(([127, 0, 0, 1], 1).into()), test);
                probe.request = if key.ends_with("request") {
                    *slot
                } else {
                    req0
                };
                probe.response = if key.ends_with("response") {
                    *slot
                } else {
                    resp0
                };
                if let Err(e) = probe.validate() {
                    return Err(loc.error(v.span(), key, e.to_string()));
                }
            }
        }
        Ok(Arc::new(table))
    }
}

impl Table for NetTable {
    fn run(
        &self,
        load: &Load,
        offer: &Offer<'_>,
        stop: &Arc<AtomicBool>,
    ) -> Result<LoadResult, ExecError> {
        let mut cfg = self.config(offer.endpoint.clone(), load);
        cfg.progress = false;
        measure::<Net>(&cfg, stop)
    }
}

#[cfg(test)]
mod tests {
    fn parse(table: &str) -> Result<crate::experiment::Experiment, String> {
        super::super::parse_with_table("net", "net", table)
    }

    #[test]
    fn sizes_tests_and_directions_are_checked_with_line_and_key() {
        assert!(parse("test = \"udp-rr\"\nrequest = 100\nresponse = 200\n").is_ok());
        assert!(parse("test = \"stream\"\ndirection = \"both\"\n").is_ok());
        for (table, key) in [
            ("test = \"tcp_rr\"\n", "load.net.test"),
            ("request = 0\n", "load.net.request"),
            ("response = 2000000\n", "load.net.response"),
            ("test = \"udp-rr\"\nrequest = 8\n", "load.net.request"),
            ("direction = \"both\"\n", "load.net.direction"),
            (
                "test = \"stream\"\ndirection = \"up\"\n",
                "load.net.direction",
            ),
            ("size = 1\n", "size"),
        ] {
            let e = parse(table).unwrap_err();
            assert!(e.contains(key), "{table}: {e}");
        }
    }
}
