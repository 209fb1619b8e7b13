//! Between the engine and the agent: one JSON line each way per
//! connection. The engine asks `ping` (what job do you run?) or `run` (run
//! it with these sizes); the agent answers with its job and, for `run`,
//! the [`Outcome`]. A line longer than [`MAX_LINE`] is refused.

use serde::{Deserialize, Serialize};

use crate::exec::Outcome;
use crate::job::{Job, Sizes};

/// The longest request line the agent reads (a run request is ~200 bytes).
pub(crate) const MAX_LINE: usize = 64 << 10;

/// What the engine asks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// Is the agent up, and which job does it run?
    Ping,
    /// Run the job once with these sizes, ending it after `limit_s`.
    Run { sizes: Sizes, limit_s: f64 },
}

/// What the agent answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    pub job: Job,
    /// For `run`: what the run did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// A request the agent could not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Request {
    /// One request line (without its newline).
    pub fn decode(line: &[u8]) -> Result<Request, String> {
        if line.len() > MAX_LINE {
            return Err(format!("request longer than {MAX_LINE} bytes"));
        }
        let r: Request = serde_json::from_slice(line).map_err(|e| format!("bad request: {e}"))?;
        if let Request::Run { limit_s, .. } = &r {
            if !(limit_s.is_finite() && *limit_s > 0.0 && *limit_s <= 86_400.0) {
                return Err("bad request: limit_s must be within (0, 86400]".into());
            }
        }
        Ok(r)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec(self).unwrap_or_default();
        v.push(b'\n');
        v
    }
}

impl Reply {
    pub fn decode(line: &[u8]) -> Result<Reply, String> {
        serde_json::from_slice(line)
            .map_err(|e| format!("the tool agent's reply does not parse: {e}"))
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec(self).unwrap_or_default();
        v.push(b'\n');
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn requests_round_trip_and_bad_ones_are_refused() {
        let r = Request::Run {
            sizes: Sizes {
                duration: Duration::from_secs(3),
                ..Sizes::default()
            },
            limit_s: 60.0,
        };
        let line = r.encode();
        assert_eq!(Request::decode(&line[..line.len() - 1]).unwrap(), r);
        assert_eq!(Request::decode(br#"{"op":"ping"}"#).unwrap(), Request::Ping);
        for bad in [&b"{}"[..], b"{\"op\":\"exec\"}", b"\xff"] {
            assert!(Request::decode(bad).is_err());
        }
        let nan = br#"{"op":"run","sizes":{"duration":{"secs":1,"nanos":0},"file_bytes":1,"hpl_n":1,"threads":1},"limit_s":-1}"#;
        assert!(Request::decode(nan).is_err());
    }
}
