//! A `tare net` result as people read it: netperf's figures (transactions
//! per second and the round trip they imply) with the HDR percentiles
//! netperf does not give; for streams, nuttcp's (Gbit/s, CPU).

use std::fmt::Write;

use tare_record::{LoadResult, NetDetails};

/// The text `tare net` prints for `r`.
pub fn text(r: &LoadResult) -> String {
    let mut s = String::new();
    let Some(net) = r.net.as_ref() else {
        return s;
    };
    let e = &r.errors;
    if net.test == "stream" {
        stream(&mut s, r, net);
    } else {
        transactions(&mut s, r, net);
    }
    if e.total() > 0 {
        let _ = writeln!(
            s,
            "  errors        connect {}, read {}, write {}, timeout {}",
            e.connect, e.read, e.write, e.timeout
        );
    }
    // How the client waited, when it has a choice (rr, crr, udp-rr).
    let io = if net.test == "stream" || net.client_io.is_empty() {
        String::new()
    } else {
        format!(", {} client", net.client_io)
    };
    let _ = writeln!(
        s,
        "  generator CPU {:.3} s ({:.2} us per {}{io})",
        r.generator_cpu_s,
        r.generator_cpu_us_per_request(),
        r.unit().noun()
    );
    s
}

/// A stream's lines, as nuttcp's: each direction's rate, and the CPU
/// each side spent per gigabyte.
fn stream(s: &mut String, r: &LoadResult, net: &NetDetails) {
    let _ = writeln!(
        s,
        "tare net stream to {} ({}): {} connection{}, {} for {:.2} s",
        r.target,
        net.direction,
        r.connections,
        plural(r.connections),
        size(net.request_bytes),
        r.duration_s
    );
    for (label, gbit, bytes) in [
        ("send", net.send_gbit_s, net.bytes_sent),
        ("receive", net.receive_gbit_s, net.bytes_received),
    ] {
        if let Some(g) = gbit {
            let _ = writeln!(
                s,
                "  {label:<10}{g:>9.3} Gbit/s  ({:.3} GB)",
                bytes as f64 / 1e9
            );
        }
    }
    let cpu = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.3} s/GB"));
    let _ = writeln!(
        s,
        "  CPU       client {}, responder {}",
        cpu(net.client_cpu_s_per_gb),
        cpu(net.server_cpu_s_per_gb)
    );
}

/// rr, crr and udp-rr's lines, as netperf's (its test name beside ours):
/// the rate and the round trip it implies, the HDR percentiles, an open
/// loop's schedule, udp-rr's losses.
fn transactions(s: &mut String, r: &LoadResult, net: &NetDetails) {
    let netperf = match net.test.as_str() {
        "rr" => "TCP_RR",
        "crr" => "TCP_CRR",
        _ => "UDP_RR",
    };
    // Connections sharing threads are said to (a thread each is the default).
    let threads = if r.threads < r.connections {
        format!(" on {} thread{}", r.threads, plural(r.threads))
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "tare net {} ({netperf}) to {}: {} connection{}{threads}, request {} B, response {} B, {:.2} s",
        net.test,
        r.target,
        r.connections,
        plural(r.connections),
        net.request_bytes,
        net.response_bytes,
        r.duration_s
    );
    let _ = writeln!(
        s,
        "  transactions  {} ({:.1}/s)",
        r.requests,
        r.throughput()
    );
    if let Some(rt) = net.round_trip_us {
        let _ = writeln!(s, "  round trip    {rt:.1} us per connection (1/rate)");
    }
    let l = &r.latency_us;
    let _ = writeln!(
        s,
        "  latency (us)  mean {:.1}  p50 {:.1}  p90 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}",
        l.mean, l.p50, l.p90, l.p99, l.p999, l.max
    );
    if let Some(c) = &r.connect_us {
        let _ = writeln!(s, "  connect (us)  mean {:.1}  p99 {:.1}", c.mean, c.p99);
    }
    if let Some(sched) = &r.schedule {
        if let Some(rate) = sched.target_rate {
            let _ = writeln!(
                s,
                "  open loop     {rate:.0}/s asked, {:.0}/s sent, {} late, {} unsent",
                sched.achieved_send_rate, sched.late_sends, sched.unsent
            );
        }
    }
    if net.test == "udp-rr" {
        let _ = writeln!(
            s,
            "  lost          {} (no answer within the timeout)",
            net.lost
        );
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn size(b: u64) -> String {
    if b.is_multiple_of(1024) {
        format!("{} KiB writes", b / 1024)
    } else {
        format!("{b} B writes")
    }
}
