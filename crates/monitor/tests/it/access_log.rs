//! The access log's cost shows up as disk writes of the server: a real nginx
//! with `access_log` on writes, with it off writes nothing.

use crate::support;

use support::load;
use tare_monitor::{GeneratorRef, Monitor, MonitorSpec, ServerRef};
use tare_testbed::{Nginx, NginxOptions};

fn trial(access_log: bool) -> (tare_monitor::MonitorRecord, u64, u64) {
    let nginx = Nginx::start(&NginxOptions {
        workers: 1,
        access_log,
        index_html: "x".repeat(612),
    });
    let monitor = Monitor::start(MonitorSpec::new(
        ServerRef::Pids(vec![nginx.pid()]),
        GeneratorRef::SelfProcess,
    ))
    .unwrap();
    let result = load(&nginx.url(), 1, 16, 1.5);
    let record = monitor.stop().finish(&result);
    let log_size = std::fs::metadata(nginx.dir.join("access.log"))
        .map(|m| m.len())
        .unwrap_or(0);
    (record, result.requests, log_size)
}

#[test]
fn access_log_on_writes_to_disk_and_off_writes_nothing() {
    let (on, on_requests, on_log) = trial(true);
    let (off, _, off_log) = trial(false);
    eprintln!(
        "on: {} requests, log {} B, server wrote {:.0} B; off: wrote {:.0} B",
        on_requests, on_log, on.summary.server_write_bytes, off.summary.server_write_bytes
    );
    assert!(on_log > 0 && off_log == 0);
    // Charged when pages are dirtied: at least the log's size over the
    // measured window (half of the file, to allow for the warm-up's share).
    assert!(
        on.summary.server_write_bytes > 0.4 * on_log as f64 * 1.5 / 1.7,
        "{:?}",
        on.summary
    );
    assert!(off.summary.server_write_bytes == 0.0, "{:?}", off.summary);
    // Both trials saw the server work and the machine's CPU accounted for.
    for r in [&on, &off] {
        let p = r.per_request.as_ref().unwrap();
        assert!(
            p.server_us > 0.0 && p.generator_us > 0.0 && p.machine_us > p.server_us,
            "{p:?}"
        );
        assert!(r.summary.tcp_estab_max >= 16, "{:?}", r.summary);
        assert_ne!(
            r.verdict.as_ref().unwrap().bound,
            tare_monitor::Bound::Unknown
        );
    }
}
