//! Where a group ran (`Summary::cpus_seen`), seen on a real thread: a busy
//! thread of this process pinned to one CPU, measured as "the server". A
//! pinned thread can run nowhere else, so whatever CPU time the monitor saw
//! it use must be on that CPU, however busy the machine is.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tare_engine::cpu::CpuList;
use tare_monitor::{GeneratorRef, Monitor, MonitorSpec, ServerRef};

#[test]
fn a_pinned_busy_thread_is_seen_on_its_cpu() {
    let allowed = CpuList::allowed().unwrap();
    let cpu = *allowed.cpus().last().unwrap();
    let one: CpuList = cpu.to_string().parse().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let (pinned_tx, pinned_rx) = std::sync::mpsc::channel();
    let busy = {
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("where-busy".into())
            .spawn(move || {
                one.pin_current_thread().unwrap();
                pinned_tx.send(()).unwrap();
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                }
            })
            .unwrap()
    };
    pinned_rx.recv().unwrap();
    let spec = MonitorSpec::new(
        ServerRef::Threads("where-busy".into()),
        GeneratorRef::SelfProcess,
    );
    let monitor = Monitor::start(spec).unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    let record = monitor.stop();
    stop.store(true, Ordering::Relaxed);
    busy.join().unwrap();
    let s = &record.summary;
    eprintln!(
        "pinned to CPU {cpu}: server {:.2} CPU-s, seen {:?}",
        s.cpu_s.server, s.cpus_seen
    );
    // Every tick the server's level counts was charged to a CPU: seen
    // exactly when it used CPU, and only on its own CPU.
    let server = s.cpus_seen.get("server");
    assert_eq!(server.is_some(), s.cpu_s.server > 0.0, "{s:?}");
    if let Some(server) = server {
        assert_eq!(server.keys().copied().collect::<Vec<_>>(), [cpu as u32]);
        assert!((server[&(cpu as u32)] - 1.0).abs() < 1e-12);
    }
}
