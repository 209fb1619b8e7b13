//! [`judge`]: whether a load result measured a server at all, from the
//! engine's own signals (docs/experiments.md, "Failed trials"). A server
//! killed or frozen during a trial leaves a result that looks finished:
//! its timeline drops to zero for the rest of the window, its connections
//! fail or all wait. Such a result is a failure with a reason, never a
//! measurement: a ratio or share computed from it would be fiction.

use crate::result::{LoadResult, Unit};

/// Completions per second below which a silent second is not evidence:
/// at ten a second, a whole second with none is chance only once in
/// e^10 (Poisson), so a rate this low is not judged by its timeline.
const SILENCE_RATE: f64 = 10.0;

/// Why a result is not a measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// One line: `no request completed after 1.0 s`.
    pub reason: String,
    /// Seconds into the measured window when the server went silent, when
    /// the timeline says (the whole window's length for `0` completions:
    /// `Some(0.0)`).
    pub at_s: Option<f64>,
}

/// A failure when `r` does not measure a server: nothing completed, or the
/// timeline dropped to zero for the rest of the window (after a rate at
/// which silence is not chance). `None` for a result that measured
/// something. Connection errors alone are not judged: a live server that
/// refuses connections past a limit (nginx's `worker_connections`) while it
/// keeps completing requests is measured with its errors, which is what a
/// tuning run compares (docs/experiments.md, "Failed trials"); a dead one
/// is caught by the timeline and by the deployment's liveness check. A
/// benchmark program's runs (the tool engine) are judged by their tool.
pub fn judge(r: &LoadResult) -> Option<Failure> {
    let unit = r.unit();
    if unit == Unit::Runs || !r.metrics.is_empty() {
        return None;
    }
    let noun = unit.noun();
    if r.requests == 0 {
        return Some(Failure {
            reason: format!("no {noun} completed{}", errors_said(r)),
            at_s: Some(0.0),
        });
    }
    silent_tail(r, noun)
}

/// The timeline's last seconds are all zero after a rate at which a silent
/// second is not chance. A run bounded by a count (redis `-n`, sysbench
/// `--events`) may end before its window: not judged by its timeline.
fn silent_tail(r: &LoadResult, noun: &str) -> Option<Failure> {
    let bounded = r
        .redis
        .as_ref()
        .is_some_and(|d| d.requests_planned.is_some())
        || r.mysql.as_ref().is_some_and(|d| d.events_planned.is_some());
    let t = &r.timeline;
    let last = t.iter().rposition(|&n| n > 0)?;
    if bounded || last + 1 == t.len() {
        return None;
    }
    let before = t[..=last].iter().sum::<u64>() as f64 / (last + 1) as f64;
    if before < SILENCE_RATE {
        return None;
    }
    let at = (last + 1) as f64;
    let stuck = if r.connections > 0 && r.in_flight >= r.connections {
        format!(" (all {} connections waiting)", r.connections)
    } else {
        String::new()
    };
    Some(Failure {
        reason: format!("no {noun} completed after {at:.1} s{stuck}"),
        at_s: Some(at),
    })
}

/// `: connect 12, read 3` (the non-zero error counts), or nothing.
fn errors_said(r: &LoadResult) -> String {
    let said: Vec<String> = r
        .errors
        .nonzero()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    if said.is_empty() {
        String::new()
    } else {
        format!(" (errors: {})", said.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Errors;

    fn result(timeline: Vec<u64>) -> LoadResult {
        LoadResult {
            engine: "http".into(),
            unit: Some(Unit::Requests),
            requests: timeline.iter().sum(),
            connections: 100,
            timeline,
            ..LoadResult::default()
        }
    }

    #[test]
    fn a_killed_server_is_silent_from_the_second_it_died() {
        let f = judge(&result(vec![26690, 0])).unwrap();
        assert_eq!(f.reason, "no request completed after 1.0 s");
        assert_eq!(f.at_s, Some(1.0));
        let mut frozen = result(vec![900, 1200, 0, 0]);
        frozen.in_flight = 100;
        let f = judge(&frozen).unwrap();
        assert_eq!(
            f.reason,
            "no request completed after 2.0 s (all 100 connections waiting)"
        );
    }

    #[test]
    fn a_steady_or_slow_run_is_a_measurement() {
        assert_eq!(judge(&result(vec![26690, 25000])), None);
        assert_eq!(judge(&result(vec![5, 0, 3, 0])), None, "too slow to judge");
        assert_eq!(judge(&result(vec![0, 500, 400])), None, "a late start");
    }

    #[test]
    fn nothing_completed_is_a_failure_and_refusals_alone_are_not() {
        let mut r = result(vec![0, 0]);
        r.errors = Errors {
            connect: 7,
            ..Errors::default()
        };
        let f = judge(&r).unwrap();
        assert_eq!(f.reason, "no request completed (errors: connect 7)");
        // Refused past a limit while requests complete all along: measured,
        // errors and all (a tuning run compares exactly that).
        let mut r = result(vec![40, 40]);
        r.errors.connect = 200;
        assert_eq!(judge(&r), None);
        let mut tool = result(vec![0]);
        tool.unit = Some(Unit::Runs);
        assert_eq!(judge(&tool), None);
    }
}
