//! Why a run completed nothing, in one line: what the connections were
//! doing at the deadline and what the errors say.

use tare_record::LoadResult;

/// One line (without `tare: `) saying why `r` completed no request against
/// `target`.
pub fn nothing_completed(r: &LoadResult, target: &str) -> String {
    let e = &r.errors;
    let errors = format!(
        "{} connect, {} read, {} write, {} timeout errors",
        e.connect, e.read, e.write, e.timeout
    );
    let secs = r.duration_s;
    let why = match &r.connect_phase {
        Some(c) if c.established == 0 && c.refused > 0 && c.refused >= c.connecting => format!(
            "every connect failed ({} connections refused at the deadline): is the server listening?",
            c.refused
        ),
        Some(c) if c.connecting > c.established => format!(
            "{} of {} connections established in {secs:.2}s ({} still connecting, {} refused): \
             the server is not accepting them (listen backlog full, or stopped); try fewer connections (-c), \
             a lower --connect-rate or a longer -d",
            c.established, r.connections, c.connecting, c.refused
        ),
        Some(c) if r.in_flight > 0 => format!(
            "{} of {} connections established, {} requests sent and none answered in {secs:.2}s: \
             the server is too slow for this many connections, or stalled; try a longer -d or fewer connections (-c)",
            c.established, r.connections, r.in_flight
        ),
        _ if e.timeout > 0 => format!(
            "no response within --timeout ({} timeouts): the server is too slow or stalled",
            e.timeout
        ),
        _ if e.read + e.write > 0 => {
            "the server closed or broke every connection before a response was complete".into()
        }
        _ if e.connect > 0 => "every connect failed: is the server listening?".into(),
        _ => format!("no request was sent in {secs:.2}s"),
    };
    format!("no request completed against {target}: {why} ({errors})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use tare_record::ConnectReport;

    fn result(c: ConnectReport, in_flight: u64) -> LoadResult {
        LoadResult {
            connections: c.established + c.connecting + c.refused + c.idle,
            duration_s: 3.0,
            in_flight,
            connect_phase: Some(c),
            ..Default::default()
        }
    }

    #[test]
    fn says_what_the_connections_were_doing() {
        let stuck = ConnectReport {
            connecting: 19_000,
            refused: 500,
            ..Default::default()
        };
        let line = nothing_completed(&result(stuck, 0), "127.0.0.1:80");
        assert!(
            line.contains("0 of 19500 connections established"),
            "{line}"
        );
        assert!(
            line.contains("19000 still connecting, 500 refused"),
            "{line}"
        );
        let slow = ConnectReport {
            established: 19_500,
            ..Default::default()
        };
        let line = nothing_completed(&result(slow, 19_500), "x");
        assert!(
            line.contains("19500 requests sent and none answered"),
            "{line}"
        );
        let refused = ConnectReport {
            refused: 10,
            ..Default::default()
        };
        let line = nothing_completed(&result(refused, 0), "x");
        assert!(line.contains("every connect failed"), "{line}");
        assert!(!line.contains('\n'));
    }
}
