//! Each parser on real output captured from Debian 12's packages on this
//! project's machine (tests/data): fio 3.33 `--output-format=json`, hpcc
//! 1.5.0's hpccoutf.txt, sysbench 1.0.20's cpu and memory reports.

use tare_record::Better;
use tare_tool::ToolKind;

fn data(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

#[test]
fn fio_json_gives_iops_bandwidth_and_completion_latency_per_direction() {
    let p = ToolKind::Fio.parse(&data("fio-randread.json")).unwrap();
    assert_eq!(p.version, "fio-3.33");
    let v = |n: &str| p.metric(n).unwrap_or_else(|| panic!("{n}")).value;
    assert_eq!(v("read_iops"), 39228.043912);
    assert_eq!(v("read_mb_s"), 160.678067);
    assert_eq!(v("read_clat_p50_us"), 207.872);
    assert_eq!(v("read_clat_p99_us"), 5013.504);
    assert_eq!(v("read_clat_p999_us"), 11075.584);
    assert_eq!(p.metric("read_clat_p99_us").unwrap().better, Better::Lower);
    assert!(
        p.metric("write_iops").is_none(),
        "no write I/O, no write metrics"
    );
    assert_eq!(p.operations, 78613);
    let lat = p.latency.unwrap();
    assert!((lat.mean - 403.174542226).abs() < 1e-6 && lat.p50 == 207.872 && lat.max == 14357.805);

    let w = ToolKind::Fio.parse(&data("fio-randwrite.json")).unwrap();
    assert_eq!(w.metric("write_iops").unwrap().value, 33205.897051);
    assert!(w.metric("read_iops").is_none());
    let s = ToolKind::Fio.parse(&data("fio-seqread.json")).unwrap();
    assert!((s.metric("read_mb_s").unwrap().value - 1203.42).abs() < 0.01);
    assert_eq!(s.metric("read_iops").unwrap().value, 1147.670961);
}

#[test]
fn hpcc_summary_gives_hpl_stream_and_randomaccess() {
    let p = ToolKind::Hpcc.parse(&data("hpccoutf.txt")).unwrap();
    assert_eq!(p.version, "hpcc 1.5.0");
    let v = |n: &str| p.metric(n).unwrap_or_else(|| panic!("{n}")).value;
    assert!((v("hpl_gflops") - 6.39478).abs() < 1e-9);
    assert_eq!(v("stream_triad_gb_s"), 90.6491);
    assert_eq!(v("randomaccess_gups"), 1.26781);
    assert_eq!(v("mpi_randomaccess_gups"), 0.0816178);
    assert_eq!(p.metric("hpl_seconds").unwrap().better, Better::Lower);
    assert!(p.latency.is_none());
}

#[test]
fn sysbench_reports_give_rates_and_event_latency() {
    let c = ToolKind::Sysbench.parse(&data("sysbench-cpu.txt")).unwrap();
    assert_eq!(c.version, "sysbench 1.0.20");
    assert_eq!(c.metric("events_per_s").unwrap().value, 2013.41);
    assert_eq!(c.metric("latency_p95_us").unwrap().value, 280.0);
    assert_eq!(c.operations, 4035);
    assert_eq!(c.latency.unwrap().mean, 500.0);
    let m = ToolKind::Sysbench
        .parse(&data("sysbench-memory.txt"))
        .unwrap();
    assert_eq!(m.metric("mib_per_s").unwrap().value, 12361.66);
    assert!(m.metric("events_per_s").is_none());
}

/// Each parser refuses the others' output instead of reading nonsense.
#[test]
fn a_parser_given_another_tools_output_refuses_it() {
    assert!(ToolKind::Fio.parse(&data("hpccoutf.txt")).is_err());
    assert!(ToolKind::Hpcc.parse(&data("fio-randread.json")).is_err());
    assert!(ToolKind::Sysbench
        .parse(&data("fio-randread.json"))
        .is_err());
}
