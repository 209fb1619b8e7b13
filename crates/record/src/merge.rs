//! Merging the records of several generators that loaded one target at the
//! same time (remote hosts, docs/remote.md) into one [`LoadResult`]:
//! counts add, HDR histograms add (so percentiles are true percentiles of
//! the whole load, never averages of per-host ones), and timelines are
//! aligned on a common clock before their seconds add.
//!
//! Each part says how its host's clock relates to the merging host's
//! (`clock_offset_s`, measured before the load); a part that failed is kept
//! in `generators` with its error and adds nothing to the counts.

use serde::{Deserialize, Serialize};

use crate::latency::{CodecError, Latency};
use crate::result::{Errors, LoadResult, RateSummary};

/// The most two generators' starts may be apart: they are told to start
/// together, so a larger gap is a wrong clock or a wrong record, and
/// aligning on it would only grow the timeline.
const MAX_START_GAP_S: f64 = 60.0;

/// One generator's share of a merged load, as `LoadResult::generators`
/// records it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GeneratorPart {
    /// The host it ran on (`[hosts.NAME]`).
    pub host: String,
    /// Its host's clock minus this host's, in seconds, measured before the
    /// load (the midpoint of the fastest of several round trips).
    pub clock_offset_s: f64,
    /// The round trip of that fastest exchange: the offset is known to
    /// within half of it.
    pub clock_rtt_s: f64,
    /// Its measured period's start on this host's clock (Unix seconds).
    pub started_unix_s: f64,
    pub connections: u64,
    pub threads: u64,
    pub requests: u64,
    pub errors: Errors,
    pub generator_cpu_s: f64,
    /// The CPUs its threads could use on its host (`LoadResult::
    /// generator_cpus`); 0 in older records.
    #[serde(default, skip_serializing_if = "crate::result::is_zero")]
    pub generator_cpus: u32,
    /// Why its part is missing (the host dropped, the engine failed);
    /// its counts are then zero and the merge holds the others'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One generator's result, or why there is none.
#[derive(Clone, Debug)]
pub struct Part {
    pub host: String,
    pub clock_offset_s: f64,
    pub clock_rtt_s: f64,
    pub result: Result<LoadResult, String>,
}

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("no generator returned a result: {0}")]
    Nothing(String),
    #[error("generators ran different engines ({0} and {1})")]
    Engines(String, String),
    #[error("generator on {host}: {cause}")]
    Histogram { host: String, cause: CodecError },
    #[error(
        "generator on {host} started {gap_s:.0} s after another: its clock or its record is wrong"
    )]
    Clock { host: String, gap_s: f64 },
}

/// Merges the parts: see the module's documentation. Fails only when no
/// part has a result, or the results cannot be one load (different
/// engines, an unreadable histogram).
pub fn merge(parts: &[Part]) -> Result<LoadResult, MergeError> {
    let ok = results(parts)?;
    let first = ok[0].1;
    let start = ok
        .iter()
        .map(|(p, r)| local_start(p, r))
        .fold(f64::INFINITY, f64::min);

    let mut out = LoadResult {
        engine: first.engine.clone(),
        unit: first.unit,
        target: first.target.clone(),
        transport: first.transport.clone(),
        started_unix_s: start,
        keepalive: first.keepalive,
        tare_version: first.tare_version.clone(),
        ..LoadResult::default()
    };
    let mut sums = Sums {
        latency: Latency::new(),
        attempts: 0,
        rate: 0.0,
        thread_rates: Vec::new(),
    };
    for (p, r) in &ok {
        sums.add(&mut out, p, r)?;
        add_timeline(&mut out, p, r, start)?;
    }
    out.attempts = Some(sums.attempts);
    // Each generator's rate over its own measured period, added: the
    // periods overlap to within the starts' spread (`generators`).
    if first.tps.is_some() {
        out.tps = Some(sums.rate);
    } else {
        out.rps = Some(sums.rate);
    }
    out.latency_us = sums.latency.summary();
    out.hdr = sums
        .latency
        .encode()
        .map_err(|cause| MergeError::Histogram {
            host: "merged".into(),
            cause,
        })?;
    out.thread_rate = pooled(&sums.thread_rates);
    // Engine details (pg, redis, net, pacing, wake-ups, the connect phase)
    // describe one generator's run and are not added up: one part keeps
    // its own, several keep none (each host's counts are in `generators`).
    if ok.len() == 1 && parts.len() == 1 {
        let r = ok[0].1;
        out.connect_us = r.connect_us;
        out.first_byte_us = r.first_byte_us;
        out.schedule = r.schedule.clone();
        out.wakeups = r.wakeups.clone();
        out.connect_phase = r.connect_phase.clone();
        out.pg = r.pg.clone();
        out.redis = r.redis.clone();
        out.net = r.net.clone();
    }
    out.generators = parts.iter().map(generator_part).collect();
    Ok(out)
}

/// The parts with a result, when there is one and they all ran the same
/// engine.
fn results(parts: &[Part]) -> Result<Vec<(&Part, &LoadResult)>, MergeError> {
    let ok: Vec<(&Part, &LoadResult)> = parts
        .iter()
        .filter_map(|p| p.result.as_ref().ok().map(|r| (p, r)))
        .collect();
    let Some((_, first)) = ok.first() else {
        let why: Vec<String> = parts
            .iter()
            .filter_map(|p| p.result.as_ref().err().map(|e| format!("{}: {e}", p.host)))
            .collect();
        return Err(MergeError::Nothing(why.join("; ")));
    };
    if let Some((_, other)) = ok.iter().find(|(_, r)| r.engine != first.engine) {
        return Err(MergeError::Engines(
            first.engine.clone(),
            other.engine.clone(),
        ));
    }
    Ok(ok)
}

/// A part's start on this host's clock: the host's clock minus its offset.
fn local_start(p: &Part, r: &LoadResult) -> f64 {
    r.started_unix_s - p.clock_offset_s
}

/// What the parts add up to beyond `LoadResult`'s own fields: the merged
/// histogram, the attempts, the rates, each part's per-thread rate.
struct Sums {
    latency: Latency,
    attempts: u64,
    rate: f64,
    thread_rates: Vec<(u64, RateSummary)>,
}

impl Sums {
    /// Adds part `p`'s counts, histograms and rates.
    fn add(&mut self, out: &mut LoadResult, p: &Part, r: &LoadResult) -> Result<(), MergeError> {
        // Saturating: a record from another host is input, not a promise.
        out.duration_s = out.duration_s.max(r.duration_s);
        add(&mut out.connections, r.connections);
        add(&mut out.threads, r.threads);
        add(&mut out.requests, r.requests);
        add(&mut out.in_flight, r.in_flight);
        let e = &r.errors;
        for (sum, n) in [
            (&mut out.errors.connect, e.connect),
            (&mut out.errors.read, e.read),
            (&mut out.errors.write, e.write),
            (&mut out.errors.timeout, e.timeout),
            (&mut out.errors.status, e.status),
        ] {
            add(sum, n);
        }
        add(&mut out.bytes_read, r.bytes_read);
        add(&mut self.attempts, attempts_of(r));
        self.rate += r.throughput();
        out.generator_cpu_s += r.generator_cpu_s;
        out.generator_cpu_user_s += r.generator_cpu_user_s;
        out.generator_cpu_system_s += r.generator_cpu_system_s;
        out.generator_cpus = out.generator_cpus.saturating_add(r.generator_cpus);
        for (code, n) in &r.status_codes {
            add(out.status_codes.entry(code.clone()).or_default(), *n);
        }
        let h = Latency::decode(&r.hdr).map_err(|cause| MergeError::Histogram {
            host: p.host.clone(),
            cause,
        })?;
        self.latency.merge(&h);
        crate::named::add_named(&mut out.by_name, &r.by_name).map_err(|cause| {
            MergeError::Histogram {
                host: p.host.clone(),
                cause,
            }
        })?;
        self.thread_rates.push((r.threads, r.thread_rate));
        Ok(())
    }
}

/// Adds part `p`'s timeline to the merged one, shifted by whole seconds
/// after the earliest start: the timelines' bins are seconds, so a start
/// within half a second of another shares its bins.
fn add_timeline(
    out: &mut LoadResult,
    p: &Part,
    r: &LoadResult,
    start: f64,
) -> Result<(), MergeError> {
    let gap = local_start(p, r) - start;
    if !(0.0..=MAX_START_GAP_S).contains(&gap) {
        return Err(MergeError::Clock {
            host: p.host.clone(),
            gap_s: gap,
        });
    }
    let shift = gap.round() as usize;
    if out.timeline.len() < shift + r.timeline.len() {
        out.timeline.resize(shift + r.timeline.len(), 0);
    }
    for (i, n) in r.timeline.iter().enumerate() {
        add(&mut out.timeline[shift + i], *n);
    }
    Ok(())
}

/// Part `p` as `LoadResult::generators` records it.
fn generator_part(p: &Part) -> GeneratorPart {
    match &p.result {
        Ok(r) => GeneratorPart {
            host: p.host.clone(),
            clock_offset_s: p.clock_offset_s,
            clock_rtt_s: p.clock_rtt_s,
            started_unix_s: local_start(p, r),
            connections: r.connections,
            threads: r.threads,
            requests: r.requests,
            errors: r.errors,
            generator_cpu_s: r.generator_cpu_s,
            generator_cpus: r.generator_cpus,
            error: None,
        },
        Err(e) => GeneratorPart {
            host: p.host.clone(),
            clock_offset_s: p.clock_offset_s,
            clock_rtt_s: p.clock_rtt_s,
            error: Some(e.clone()),
            ..GeneratorPart::default()
        },
    }
}

/// `LoadResult::attempts`, saturating.
fn attempts_of(r: &LoadResult) -> u64 {
    r.attempts.unwrap_or_else(|| {
        let e = &r.errors;
        let errors = [e.connect, e.read, e.write, e.timeout, e.status]
            .into_iter()
            .fold(0u64, u64::saturating_add);
        let all = r.requests.saturating_add(errors);
        match r.unit() {
            crate::result::Unit::Requests => all.saturating_sub(e.status),
            _ => all,
        }
    })
}

fn add(sum: &mut u64, n: u64) {
    *sum = sum.saturating_add(n);
}

/// Per-thread rate samples of several generators as one set: means weighted
/// by threads, the pooled standard deviation (within plus between), the
/// highest maximum; the share within one deviation weighted as the means.
fn pooled(parts: &[(u64, RateSummary)]) -> RateSummary {
    let n: f64 = parts.iter().map(|(t, _)| *t as f64).sum();
    if n == 0.0 {
        return RateSummary::default();
    }
    let mean = parts.iter().map(|(t, r)| *t as f64 * r.mean).sum::<f64>() / n;
    let var = parts
        .iter()
        .map(|(t, r)| *t as f64 * (r.stdev * r.stdev + (r.mean - mean).powi(2)))
        .sum::<f64>()
        / n;
    RateSummary {
        mean,
        stdev: var.sqrt(),
        max: parts.iter().map(|(_, r)| r.max).fold(0.0, f64::max),
        within_stdev_pct: parts
            .iter()
            .map(|(t, r)| *t as f64 * r.within_stdev_pct)
            .sum::<f64>()
            / n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(host: &str, offset: f64, start: f64, latencies_us: &[u64], timeline: &[u64]) -> Part {
        let mut h = Latency::new();
        for us in latencies_us {
            h.record_ns(us * 1000);
        }
        let n = latencies_us.len() as u64;
        let mut status = std::collections::BTreeMap::new();
        status.insert("200".to_string(), n);
        Part {
            host: host.into(),
            clock_offset_s: offset,
            clock_rtt_s: 0.001,
            result: Ok(LoadResult {
                engine: "http".into(),
                started_unix_s: start,
                duration_s: 2.0,
                connections: 4,
                threads: 1,
                requests: n,
                rps: Some(n as f64 / 2.0),
                hdr: h.encode().unwrap(),
                latency_us: h.summary(),
                timeline: timeline.to_vec(),
                generator_cpu_s: 0.5,
                generator_cpus: 2,
                status_codes: status,
                errors: Errors {
                    connect: 1,
                    ..Errors::default()
                },
                ..LoadResult::default()
            }),
        }
    }

    #[test]
    fn counts_and_histograms_add_exactly_and_timelines_align_on_one_clock() {
        // b's clock is 10 s ahead; its start on ours is 1000.9 s, a second
        // after a's (1000.0 s): its timeline starts one bin later.
        let a = part("a", 0.0, 1000.0, &[100, 200, 300], &[2, 1]);
        let b = part("b", 10.0, 1010.9, &[1000, 2000], &[1, 1]);
        let m = merge(&[a, b]).unwrap();
        assert_eq!(m.requests, 5);
        assert_eq!(m.connections, 8);
        assert_eq!(m.errors.connect, 2);
        assert_eq!(m.attempts, Some(7));
        assert_eq!(m.status_codes["200"], 5);
        assert_eq!(m.rps, Some(2.5));
        assert_eq!(m.started_unix_s, 1000.0);
        assert_eq!(m.timeline, vec![2, 2, 1]);
        let h = Latency::decode(&m.hdr).unwrap();
        assert_eq!(h.count(), 5);
        assert!(
            (m.latency_us.max - 2000.0).abs() < 2.0,
            "{:?}",
            m.latency_us
        );
        assert!((m.latency_us.p50 - 300.0).abs() < 1.0, "{:?}", m.latency_us);
        assert_eq!(m.generators.len(), 2);
        assert!((m.generators[1].started_unix_s - 1000.9).abs() < 1e-9);
        assert_eq!(m.generator_cpu_s, 1.0);
        // Each host's CPUs stay its own; the record's are their sum.
        assert_eq!(m.generators[0].generator_cpus, 2);
        assert_eq!(m.generator_cpus, 4);
    }

    #[test]
    fn a_failed_part_is_recorded_and_the_others_kept() {
        let a = part("a", 0.0, 1000.0, &[100, 200], &[2]);
        let b = Part {
            host: "b".into(),
            clock_offset_s: 0.0,
            clock_rtt_s: 0.0,
            result: Err("the connection to b closed".into()),
        };
        let m = merge(&[a, b.clone()]).unwrap();
        assert_eq!(m.requests, 2);
        assert_eq!(
            m.generators[1].error.as_deref(),
            Some(b.result.unwrap_err().as_str())
        );
        assert_eq!(m.generators[1].requests, 0);
        let none = merge(&[Part {
            host: "c".into(),
            clock_offset_s: 0.0,
            clock_rtt_s: 0.0,
            result: Err("gone".into()),
        }])
        .unwrap_err();
        assert_eq!(none.to_string(), "no generator returned a result: c: gone");
    }

    #[test]
    fn different_engines_do_not_merge() {
        let a = part("a", 0.0, 1.0, &[1], &[1]);
        let mut b = part("b", 0.0, 1.0, &[1], &[1]);
        if let Ok(r) = &mut b.result {
            r.engine = "pg".into();
        }
        assert!(matches!(merge(&[a, b]), Err(MergeError::Engines(..))));
    }
}
