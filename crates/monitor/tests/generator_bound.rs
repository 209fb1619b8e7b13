//! The generator made the bottleneck on purpose: one generator thread pinned
//! to one CPU, many connections, against a server with the other CPU(s) to
//! itself, large responses (the client copies every byte; nginx sends them
//! with sendfile), and a raised priority so that other work on a shared
//! machine cannot take the generator's CPU away. The verdict must say
//! generator-bound and warn the run.

mod support;

use support::{load, pin_current_thread, Nginx, NginxOptions};
use tare_monitor::{run_warning, Bound, GeneratorRef, Monitor, MonitorSpec, ServerRef};

#[test]
fn one_pinned_generator_thread_with_many_connections_is_generator_bound() {
    if support::cpus() < 2 {
        eprintln!("needs 2 CPUs");
        return;
    }
    let nginx = Nginx::start(&NginxOptions {
        workers: 2,
        access_log: false,
        body_size: 64 * 1024,
    });
    // Run the load from a thread pinned to CPU 0: the engine's worker
    // inherits the affinity; nginx keeps every CPU.
    let url = nginx.url();
    let pid = nginx.pid();
    let (record, result) = std::thread::spawn(move || {
        pin_current_thread(0);
        support::raise_priority_of_current_thread(-10);
        let monitor = Monitor::start(MonitorSpec::new(ServerRef::Pids(vec![pid]), GeneratorRef::SelfProcess)).unwrap();
        let result = load(&url, 1, 200, 2.0);
        (monitor.stop().finish(&result), result)
    })
    .join()
    .unwrap();
    let v = record.verdict.clone().unwrap();
    eprintln!(
        "{} req/s; generator {:.2} cores, server {:.2}, idle {:.0}%: {} ({})",
        result.rps.unwrap_or(0.0) as u64,
        result.generator_cpu_s / result.duration_s,
        record.summary.server_cores_mean,
        record.summary.machine_idle_fraction * 100.0,
        v.bound,
        v.reason
    );
    assert_eq!(v.bound, Bound::Generator, "{v:?}");
    assert!(v.evidence.generator_utilization > 0.9);
    assert!(run_warning(&[v]).unwrap().contains("generator-bound"));
}
