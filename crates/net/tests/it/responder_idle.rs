//! An idle responder sleeps: its acceptors and UDP receivers block
//! without a timeout (they woke every 100 ms to look at a stop flag, 40
//! wake-ups a second on the server's CPU beside every round trip measured,
//! docs/net.md), and stopping it still returns at once, its sockets shut
//! down under the blocked threads. In a process of its own
//! (`tare_testbed::alone`): the threads are found by name in this process,
//! so no other test's responder may run beside it.

use std::sync::mpsc;
use std::time::Duration;

use tare_net::{Responder, ResponderConfig};

/// Voluntary context switches of each of this process's responder
/// acceptor and UDP threads (`net-serve-<i>`, `net-udp-<i>`), by thread id.
fn waits() -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        let comm = comm.trim();
        if !(comm.starts_with("net-serve-") || comm.starts_with("net-udp-")) {
            continue;
        }
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        let switches = status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .map(|v| v.trim().parse::<u64>().unwrap())
            .unwrap();
        out.push((format!("{comm} {:?}", task.file_name()), switches));
    }
    out.sort();
    out
}

/// [`waits`] once `n` responder threads are there, each asleep (state `S`)
/// and none of them switched since the last look 20 ms before: every thread
/// has reached its wait. Fails after 10 s, saying what it saw.
fn settled(n: usize) -> Vec<(String, u64)> {
    let asleep = || {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .flatten()
            .filter(|t| {
                let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
                comm.starts_with("net-serve-") || comm.starts_with("net-udp-")
            })
            .all(|t| {
                let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
                stat.rfind(')')
                    .and_then(|i| stat[i + 1..].split_whitespace().next())
                    == Some("S")
            })
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut last = waits();
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let now = waits();
        if now.len() == n && now == last && asleep() {
            return now;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{n} responder threads not all asleep in 10 s: {now:?}"
        );
        last = now;
    }
}

/// Drops the responder on another thread; it must be gone well within
/// `bound` (a blocked thread that never woke would hang the drop).
fn stops_within(r: Responder, bound: Duration) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        drop(r);
        let _ = tx.send(());
    });
    rx.recv_timeout(bound)
        .expect("the responder stops with its threads blocked in accept and recv");
}

#[test]
fn idle_acceptors_and_udp_receivers_never_wake_and_still_stop() {
    let name = "responder_idle::idle_acceptors_and_udp_receivers_never_wake_and_still_stop";
    if !tare_testbed::alone::in_child(name, &[]) {
        return;
    }
    let r = Responder::start(ResponderConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: 2,
        ..ResponderConfig::default()
    })
    .unwrap();
    // Two acceptors, two UDP threads, each at its wait.
    let before = settled(4);
    // At the old 100 ms poll this was 3-4 wake-ups per thread.
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(waits(), before, "idle responder threads woke up");
    stops_within(r, Duration::from_secs(5));
    assert!(waits().is_empty(), "every responder thread ended");

    let dir = std::env::temp_dir().join(format!("tare-net-idle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("net.sock");
    let r = Responder::start(ResponderConfig {
        unix: Some(path.clone()),
        threads: 3,
        ..ResponderConfig::default()
    })
    .unwrap();
    // Three acceptors, no UDP.
    let before = settled(3);
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(waits(), before, "idle Unix acceptors woke up");
    stops_within(r, Duration::from_secs(5));
    assert!(!path.exists(), "the socket is removed");
    let _ = std::fs::remove_dir_all(&dir);
}
