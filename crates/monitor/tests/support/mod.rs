//! Shared by the integration tests: a bounded in-process load, CPU pinning
//! and priority; the nginx they measure is [`tare_testbed::Nginx`].

#![allow(dead_code)]

use std::time::Duration;

use tare_http::{run, HttpConfig, Target};
use tare_record::LoadResult;

/// Keep-alive load for `secs` from this process.
pub(crate) fn load(url: &str, threads: usize, connections: usize, secs: f64) -> LoadResult {
    let mut c = HttpConfig::new(Target::new(url, None, false).unwrap());
    c.load.threads = threads;
    c.load.connections = connections;
    c.load.duration = Some(Duration::from_secs_f64(secs));
    c.load.warmup = Duration::from_millis(200);
    let r = run(&c).unwrap();
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    assert!(r.requests > 0);
    r
}

/// Keep-alive load of the deployment `d`'s `/index.html` (from its client
/// namespace, when it has one) for `duration`: one thread, 16
/// connections, 200 ms of warm-up.
pub(crate) fn deployment_load(d: &tare_deploy::Deployment, duration: Duration) -> HttpConfig {
    let target = Target {
        url: d.url(),
        authority: "tare".into(),
        path: "/index.html".into(),
        endpoint: d.endpoint().clone(),
    };
    let mut c = HttpConfig::new(target);
    c.load.threads = 1;
    c.load.connections = 16;
    c.load.duration = Some(duration);
    c.load.warmup = Duration::from_millis(200);
    c.load.netns = d.client_netns().map(|p| p.to_path_buf());
    c
}

/// Pins the calling thread (and threads it spawns later) to one CPU.
pub(crate) fn pin_current_thread(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; we pass its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        let rc = libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        assert_eq!(rc, 0, "sched_setaffinity");
    }
}

pub(crate) fn cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Sets the calling thread's nice value (threads it spawns inherit it);
/// negative values need root, as the test suite runs.
pub(crate) fn raise_priority_of_current_thread(nice: i32) {
    // SAFETY: gettid and setpriority on our own thread id.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, nice);
    }
}
