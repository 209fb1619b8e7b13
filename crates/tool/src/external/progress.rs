//! A tool's progress lines as a timeline: pgbench's `-P 1` and sysbench's
//! `--report-interval=1` each print one line a second with the rate over
//! that second; only how a line is read differs.

/// Transactions in each second, from the lines `point` reads as (seconds
/// since the start, transactions per second); lines it does not read are
/// passed over. Empty when the intervals are not one second each (the tool
/// was asked for another interval), or past a million seconds.
pub(crate) fn per_second(text: &str, point: impl Fn(&str) -> Option<(f64, f64)>) -> Vec<u64> {
    let mut out = Vec::new();
    let mut last = 0.0;
    for (at, tps) in text.lines().filter_map(|l| point(l.trim())) {
        if (at - last - 1.0).abs() > 0.01 || out.len() >= 1_000_000 {
            return Vec::new();
        }
        last = at;
        out.push(tps.round() as u64);
    }
    out
}
