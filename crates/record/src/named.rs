//! A request mix's breakdown by name (`LoadResult::by_name`, docs/http.md):
//! each named request's counts and latency histogram, added exactly when
//! threads, trials or generators merge.

use serde::{Deserialize, Serialize};

use crate::latency::{CodecError, Latency, LatencySummary};
use crate::result::Errors;

/// One named request of a mix: its counts and latency (`LoadResult::by_name`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NamedResult {
    /// The request's name (a requests file's `name`; a URL file's path
    /// and query).
    pub name: String,
    /// `METHOD PATH` as sent.
    pub request: String,
    /// Its weight in the mix (a URL file: the lines naming it).
    pub weight: u64,
    /// Completed responses (status >= 400 included, as in `requests`).
    pub requests: u64,
    /// Written but unanswered when the deadline struck.
    pub in_flight: u64,
    /// Its errors (never `connect`: see `LoadResult::by_name`).
    pub errors: Errors,
    pub latency_us: LatencySummary,
    /// base64 HdrHistogram V2+DEFLATE of its latency, in nanoseconds
    /// (histograms add, so runs and generators merge exactly).
    pub hdr: String,
}

/// Adds `from`'s named results to `into`'s, name by name (a name `into`
/// lacks is appended): counts add, histograms add.
pub fn add_named(into: &mut Vec<NamedResult>, from: &[NamedResult]) -> Result<(), CodecError> {
    for n in from {
        let Some(at) = into.iter_mut().find(|m| m.name == n.name) else {
            into.push(n.clone());
            continue;
        };
        at.requests = at.requests.saturating_add(n.requests);
        at.in_flight = at.in_flight.saturating_add(n.in_flight);
        at.errors.add(&n.errors);
        let mut h = Latency::decode(&at.hdr)?;
        h.merge(&Latency::decode(&n.hdr)?);
        at.latency_us = h.summary();
        at.hdr = h.encode()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str, latencies_us: &[u64]) -> NamedResult {
        let mut h = Latency::new();
        for us in latencies_us {
            h.record_ns(us * 1000);
        }
        NamedResult {
            name: name.into(),
            request: format!("GET /{name}"),
            weight: 1,
            requests: latencies_us.len() as u64,
            in_flight: 1,
            errors: Errors {
                status: 1,
                ..Errors::default()
            },
            latency_us: h.summary(),
            hdr: h.encode().unwrap(),
        }
    }

    #[test]
    fn names_add_by_name_and_histograms_merge() {
        let mut all = vec![named("a", &[100, 200])];
        add_named(&mut all, &[named("b", &[50]), named("a", &[300])]).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!((all[0].requests, all[0].in_flight), (3, 2));
        assert_eq!(all[0].errors.status, 2);
        assert_eq!(Latency::decode(&all[0].hdr).unwrap().count(), 3);
        assert!(all[0].latency_us.max >= 299.0, "{:?}", all[0].latency_us);
        assert_eq!(all[1].name, "b");
    }
}
