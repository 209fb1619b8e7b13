//! `tare pg --coalesce` against a real PostgreSQL: a worker that pauses
//! before it waits still times each transaction by when its reply arrived
//! (the kernel's receive timestamp), so against a server whose latency is a
//! random `pg_sleep` the mean is the same with 1 ms pauses as without; and
//! scripts whose transactions take several round trips are refused.

use crate::pgserver;

use std::sync::Mutex;
use std::time::Duration;

use pgserver::PgServer;
use tare_engine::Coalesce;
use tare_pg::{Length, PgConfig};

/// The latency comparison measures time: not beside the other test.
static SERIAL: Mutex<()> = Mutex::new(());

fn config(server: &PgServer, sql: &str, coalesce: Coalesce) -> PgConfig {
    let mut c = server.timed_config(sql, (16, 2), Duration::from_millis(750));
    c.conn.endpoint = server.tcp_endpoint();
    c.load.coalesce = coalesce;
    c
}

/// The mean with 1 ms pauses is at most 5% above the mean without
/// (measured: within 1% on a quiet machine). Taking each reply's read time
/// instead of its arrival adds +9% here (replies wait out the pause they arrive in). The mean, not the
/// median: pg_sleep waits in whole milliseconds, so latencies fall in modes
/// a millisecond apart and the median jumps between them. Random delays:
/// with a constant one the clients fall into step and replies never arrive
/// during a pause, so the test could not tell.
#[test]
fn pauses_do_not_show_in_latency() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = PgServer::start("");
    let sql = "select pg_sleep(0.002 + random() * 0.002);";
    // Off, on, on, off (0.75 s each): a load that drifts across the test
    // lands on both sides alike; the means are pooled by transactions.
    let pause = Coalesce::Fixed(Duration::from_millis(1));
    let off1 = tare_pg::run(&config(&server, sql, Coalesce::Off)).unwrap();
    let co = tare_pg::run(&config(&server, sql, pause)).unwrap();
    let co2 = tare_pg::run(&config(&server, sql, pause)).unwrap();
    let off = tare_pg::run(&config(&server, sql, Coalesce::Off)).unwrap();
    let pooled = |a: &tare_record::LoadResult, b: &tare_record::LoadResult| {
        let (na, nb) = (a.requests as f64, b.requests as f64);
        (a.latency_us.mean * na + b.latency_us.mean * nb) / (na + nb)
    };
    let (mean_off, mean_co) = (pooled(&off1, &off), pooled(&co, &co2));
    let w = co.wakeups.as_ref().expect("a wakeup report");
    eprintln!("mean off {mean_off:.0} us, 1ms pauses {mean_co:.0} us; {w:?}");
    assert!(w.rx_timestamps && w.pauses > 50, "{w:?}");
    let text = tare_pg::report::text(&co, tare_pg::report::TextOptions::default());
    assert!(
        text.contains("\nwake-ups: coalesce 1000us: ") && text.contains("receive timestamps"),
        "{text}"
    );
    assert_eq!(off1.wakeups.as_ref().map(|w| w.pauses), Some(0));
    assert_eq!(off.wakeups.as_ref().map(|w| w.pauses), Some(0));
    assert_eq!(co.errors.total() + co2.errors.total(), 0);
    // The fault this guards against adds latency (+9%); fewer wake-ups
    // can take a little off on a loaded machine (the server gets the CPU
    // the generator's wake-ups took: -5% at a load average of 9), never much.
    let rel = (mean_co - mean_off) / mean_off;
    assert!((-0.15..0.05).contains(&rel), "mean {mean_co} vs {mean_off}");
}

/// A pause between the round trips of one transaction would count in its
/// latency, so a multi-statement script (the built-in tpcb-like), `\sleep`
/// and `-C` are refused before any load; over a Unix socket (no receive
/// timestamps) the run goes on without pausing.
#[test]
fn only_one_round_trip_transactions_coalesce() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let server = PgServer::start("");
    let pause = Coalesce::Fixed(Duration::from_micros(100));
    for (sql, reconnect) in [
        ("select 1;\nselect 2;", false),
        ("\\sleep 1 ms\nselect 1;", false),
        ("select 1;", true),
    ] {
        let mut c = config(&server, sql, pause);
        c.connect_per_transaction = reconnect;
        let e = tare_pg::run(&c).unwrap_err().to_string();
        assert!(e.contains("--coalesce"), "{sql}: {e}");
    }
    let mut c = config(&server, "select 1;", pause);
    c.conn.endpoint = server.unix_endpoint();
    c.set_length(Length::Duration(Duration::from_millis(300)));
    let r = tare_pg::run(&c).unwrap();
    let w = r.wakeups.unwrap();
    assert_eq!((w.pauses, w.rx_timestamps), (0, false));
    assert!(r.requests > 0);
}
