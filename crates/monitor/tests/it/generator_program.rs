//! A generator that is a program this process starts after the monitor
//! (`GeneratorRef::Child`, the external engine's tool): found among this
//! process's children by its name once it runs, its CPU the generator's,
//! its pid in the record; a child of another name is not the generator.

use std::process::Command;

use tare_monitor::{GeneratorRef, Monitor, MonitorSpec, ServerRef};

#[test]
fn a_program_started_after_the_monitor_is_the_generator() {
    let spec = MonitorSpec::new(
        ServerRef::Threads("no-such-server".into()),
        GeneratorRef::Child("sh".into()),
    );
    let monitor = Monitor::start(spec).unwrap();
    // Another child, of another name, beside it: not the generator.
    let mut other = Command::new("sleep").arg("5").spawn().unwrap();
    // A fixed amount of work (~0.4 s of CPU here), not a fixed wall time:
    // a loaded machine stretches it instead of shrinking the CPU counted;
    // its child (the inner shell) is part of the generator too.
    let mut sh = Command::new("sh")
        .args([
            "-c",
            "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'; sleep 0.3",
        ])
        .spawn()
        .unwrap();
    let pid = sh.id();
    let status = sh.wait().unwrap();
    let record = monitor.stop();
    let _ = other.kill();
    let _ = other.wait();
    assert!(status.success());
    let cpu = record.summary.cpu_s.generator;
    eprintln!("generator {:?}: {cpu:.2} CPU-s", record.generator);
    // `sh, started by this process, and its children: pid 1234, 1240`.
    let pids: Vec<u32> = record
        .generator
        .rsplit_once("pid ")
        .map(|(_, list)| list.split(", ").filter_map(|p| p.parse().ok()).collect())
        .unwrap_or_default();
    assert!(pids.contains(&pid), "{}", record.generator);
    assert!(!pids.contains(&other.id()), "{}", record.generator);
    assert!(
        cpu > 0.1,
        "generator CPU {cpu} s: {:?}",
        record.summary.cpu_s
    );
}
