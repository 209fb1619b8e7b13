//! Entry points of the cargo-fuzz targets (crates/tool/fuzz): thin
//! wrappers taking bytes, so the parsers are fuzzed as the engine calls them.

use std::path::Path;

/// A tool's output, read by each parser: never a panic, and every metric a
/// parser accepts is a finite number with a name and a unit.
pub fn outputs(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for tool in crate::ToolKind::ALL {
        if let Ok(p) = tool.parse(&text) {
            for m in &p.metrics {
                assert!(m.value.is_finite(), "{tool:?} {}: {}", m.name, m.value);
                assert!(!m.name.is_empty() && !m.unit.is_empty());
            }
        }
    }
}

/// What crosses the agent's socket, and a mountinfo text: never a panic.
pub fn wire(data: &[u8]) {
    let _ = crate::wire::Request::decode(data);
    let _ = crate::wire::Reply::decode(data);
    let _ = crate::exec::fs_type_in(&String::from_utf8_lossy(data), Path::new("/a/b"));
}

/// An external load tool's output, read by each parser, and an argument
/// with placeholders: never a panic; a parsed run has a count and finite,
/// non-negative numbers, and its histogram (wrk's `done()`) keeps every
/// count in the record's.
pub fn external(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for tool in crate::external::LoadTool::ALL {
        if let Ok(r) = tool.parse(&text) {
            assert!(r.requests.is_some(), "{tool:?}");
            for v in r.latency_us.values().chain(r.rps.iter()) {
                assert!(v.is_finite() && *v >= 0.0, "{tool:?}: {v}");
            }
            assert!(r.throughput().is_finite());
            // A histogram a parser accepts becomes the record's, every
            // count kept (a count past i64 does not encode: no `hdr`).
            if let (Some(pairs), Some(hdr)) = (&r.histogram, r.hdr()) {
                let total: u64 = pairs.iter().map(|(_, n)| n).sum();
                let back =
                    tare_record::Latency::decode(&hdr).expect("an encoded histogram decodes");
                assert_eq!(back.count(), total, "{tool:?}");
            }
        }
    }
    if let Ok(pairs) = crate::external::h2load::log(&text) {
        let rows = text.lines().filter(|l| !l.trim().is_empty()).count() as u64;
        assert!(pairs.iter().map(|(_, n)| n).sum::<u64>() <= rows);
        assert!(pairs.windows(2).all(|w| w[0].0 < w[1].0));
    }
    let _ = crate::external::pgbench::timeline(&text);
    let _ = crate::external::sysbench::timeline(&text);
    if let Ok(t) = crate::external::args::Template::parse(&text) {
        let _ = t.fill(&crate::external::args::Values::default());
        let again = crate::external::args::Template::parse(&t.to_string());
        assert_eq!(again.as_ref(), Ok(&t), "{text:?}");
    }
}

/// A JMeter results file (JTL), read by its parser: never a panic; a
/// parsed run's histogram holds each completed request once, its
/// timeline adds up to them, and its numbers are finite.
pub fn jtl(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(r) = crate::external::jmeter::parse(&text) else {
        return;
    };
    let n = r.requests.expect("a parsed JTL counts its requests");
    let recorded = r.encoded_hdr.as_deref().map_or(0, |h| {
        tare_record::Latency::decode(h)
            .expect("its histogram decodes")
            .count()
    });
    assert_eq!(recorded, n);
    if let Some(t) = &r.timeline {
        assert_eq!(t.iter().sum::<u64>(), n);
    }
    for v in r
        .latency_us
        .values()
        .chain(r.rps.iter())
        .chain(r.duration_s.iter())
    {
        assert!(v.is_finite() && *v >= 0.0, "{v}");
    }
}
