//! Lab placements end to end, as root: build each network, run a real TCP
//! echo server inside the server namespace, exchange bytes from the host (or
//! from the client namespace), measure round trips with and without netem,
//! tear down, and check the host's namespaces, links, nftables tables and
//! DOCKER-USER rules are exactly as before.
//!
//! Tests here share one lock: `cleanup_all` and the before/after snapshots
//! must not see another test's network. Things other processes may create
//! meanwhile are set aside by `Snapshot::diff`: Docker's `veth*`/`br-*`
//! links, and lab resources whose id is not one of this test's.

use std::collections::BTreeSet;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{mpsc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tare_deploy::lab::{self, DelayMechanism, LabError, LabKind, LabNet};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    let guard = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if let Err(reason) = lab::available() {
        panic!("lab tests need what lab placements need: {reason}");
    }
    guard
}

fn run_id(tag: &str) -> String {
    format!("t{}-{tag}", std::process::id())
}

fn sh(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().expect(program);
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What the host has, as `ip netns list`, `ip link`, `nft list tables` and
/// `iptables -S DOCKER-USER` show it.
#[derive(Debug, Clone, PartialEq)]
struct Snapshot(BTreeSet<String>);

fn snapshot() -> Snapshot {
    let mut all = BTreeSet::new();
    for line in sh("ip", &["netns", "list"]).lines() {
        all.insert(format!(
            "netns {}",
            line.split_whitespace().next().unwrap_or("")
        ));
    }
    for line in sh("ip", &["-o", "link", "show"]).lines() {
        let name = line.split(':').nth(1).unwrap_or("").trim();
        all.insert(format!("link {}", name.split('@').next().unwrap_or("")));
    }
    for line in sh("nft", &["list", "tables"]).lines() {
        all.insert(line.trim().to_string());
    }
    let docker_user = Command::new("iptables")
        .args(["-w", "-S", "DOCKER-USER"])
        .output();
    if let Ok(out) = docker_user {
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            all.insert(format!("iptables {line}"));
        }
    }
    Snapshot(all)
}

impl Snapshot {
    /// Entries in one snapshot and not the other, minus what other processes
    /// may have made meanwhile. Anything carrying one of `ours` always counts.
    fn diff(&self, other: &Snapshot, ours: &[&str]) -> Vec<String> {
        self.0
            .symmetric_difference(&other.0)
            .filter(|e| {
                if ours.iter().any(|id| e.contains(id)) {
                    return true;
                }
                let docker = e.starts_with("link veth") || e.starts_with("link br-");
                let other_lab =
                    e.starts_with("netns tare-") || e.starts_with("link tr") || e.contains("tare_");
                !docker && !other_lab
            })
            .cloned()
            .collect()
    }
}

/// A TCP echo server on a thread inside `netns`, for one connection.
/// Returns its port and a handle giving (bytes echoed, the peer it saw).
fn echo_server(netns: &Path, addr: IpAddr) -> (u16, JoinHandle<io::Result<(u64, SocketAddr)>>) {
    let (tx, rx) = mpsc::channel();
    let netns = netns.to_path_buf();
    let handle = std::thread::spawn(move || {
        let bound = tare_engine::netns::enter(&netns).and_then(|()| TcpListener::bind((addr, 0)));
        let listener = match bound {
            Ok(l) => l,
            Err(e) => {
                let _ = tx.send(None);
                return Err(e);
            }
        };
        let _ = tx.send(Some(listener.local_addr()?.port()));
        listener.set_nonblocking(true)?;
        let deadline = Instant::now() + Duration::from_secs(15);
        let (mut stream, peer) = loop {
            match listener.accept() {
                Ok(accepted) => break accepted,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(2))
                }
                Err(e) => return Err(e),
            }
        };
        stream.set_nonblocking(false)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut buf = [0u8; 4096];
        let mut echoed = 0u64;
        loop {
            let n = stream.read(&mut buf)?;
            if n == 0 {
                return Ok((echoed, peer));
            }
            stream.write_all(&buf[..n])?;
            echoed += n as u64;
        }
    });
    match rx.recv_timeout(Duration::from_secs(5)).ok().flatten() {
        Some(port) => (port, handle),
        None => panic!("echo server failed to start: {:?}", handle.join()),
    }
}

/// What one client exchange measured.
struct Exchange {
    connect: Duration,
    /// Round trip of each 64-byte message, echoed back and checked.
    rtts: Vec<Duration>,
}

impl Exchange {
    fn min_rtt(&self) -> Duration {
        self.rtts.iter().copied().min().unwrap()
    }
}

const ROUNDS: usize = 10;
const MESSAGE: usize = 64;

/// Connects to `to` (from inside `netns` if given, on a thread of its own so
/// the test thread stays on the host) and exchanges ROUNDS messages.
fn exchange(netns: Option<PathBuf>, to: SocketAddr) -> io::Result<Exchange> {
    std::thread::spawn(move || {
        if let Some(ns) = &netns {
            tare_engine::netns::enter(ns)?;
        }
        let started = Instant::now();
        let mut stream = TcpStream::connect_timeout(&to, Duration::from_secs(5))?;
        let connect = started.elapsed();
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        let mut rtts = Vec::new();
        for round in 0..ROUNDS {
            let message: Vec<u8> = (0..MESSAGE).map(|i| (i * 7 + round) as u8).collect();
            let mut back = vec![0u8; MESSAGE];
            let sent = Instant::now();
            stream.write_all(&message)?;
            stream.read_exact(&mut back)?;
            rtts.push(sent.elapsed());
            assert_eq!(back, message, "echo of round {round}");
        }
        Ok(Exchange { connect, rtts })
    })
    .join()
    .expect("client thread panicked")
}

/// Serves and exchanges over `net`; checks what the server saw.
fn serve_and_exchange(net: &LabNet) -> Exchange {
    let (port, server) = echo_server(net.server_netns(), net.server_addr());
    let to = net.connect_addr(port);
    let client = exchange(net.client_netns().map(Path::to_path_buf), to)
        .unwrap_or_else(|e| panic!("{:?}: exchange with {to}: {e}", net.kind()));
    let (echoed, peer) = server.join().unwrap().expect("echo server");
    assert_eq!(echoed, (ROUNDS * MESSAGE) as u64);
    match net.kind() {
        // Masqueraded like Docker's loopback NAT: the server never sees 127/8.
        LabKind::Nat => assert!(!peer.ip().is_loopback(), "server saw {peer}"),
        // A LAN client is not masqueraded: the server sees the client itself,
        // not the host's address it connected to.
        LabKind::Client => assert_ne!(peer.ip(), to.ip(), "client was masqueraded"),
        LabKind::Veth | LabKind::Bridge => {}
    }
    client
}

fn assert_restored(before: &Snapshot, ours: &[&str]) {
    let after = snapshot();
    let diff = before.diff(&after, ours);
    assert!(diff.is_empty(), "host not restored: {diff:?}");
}

#[test]
fn every_kind_carries_real_bytes_and_leaves_the_host_as_it_was() {
    let _serial = serial();
    for kind in LabKind::ALL {
        let before = snapshot();
        let net = LabNet::create(kind, &run_id("bytes"), None)
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        let id = net.id().to_string();
        assert!(net.server_netns().exists());
        assert_eq!(net.client_netns().is_some(), kind == LabKind::Client);
        if let Some(ns) = net.client_netns() {
            assert!(ns.exists());
        }
        let during = snapshot();
        assert!(
            !before.diff(&during, &[&id]).is_empty(),
            "{kind:?}: nothing was created"
        );
        // Loopback is up inside the namespace: a server could listen there.
        let lo = sh(
            "ip",
            &[
                "-n",
                net.server_netns().file_name().unwrap().to_str().unwrap(),
                "link",
                "show",
                "lo",
            ],
        );
        assert!(lo.contains("UP"), "{lo}");

        let result = serve_and_exchange(&net);
        eprintln!(
            "{kind:?}: connect {:?}, min rtt {:?}",
            result.connect,
            result.min_rtt()
        );
        if kind == LabKind::Client {
            // The front is reached only through PREROUTING: a connection from
            // the host itself (OUTPUT path) must not reach the server, which
            // accepts one connection and then must get the client's.
            let (port, server) = echo_server(net.server_netns(), net.server_addr());
            let from_host =
                TcpStream::connect_timeout(&net.connect_addr(port), Duration::from_secs(2));
            drop(from_host);
            exchange(
                net.client_netns().map(Path::to_path_buf),
                net.connect_addr(port),
            )
            .expect("client after the host's attempt");
            let (echoed, _) = server.join().unwrap().expect("echo server");
            assert_eq!(
                echoed,
                (ROUNDS * MESSAGE) as u64,
                "the host reached the server"
            );
        }
        net.teardown().unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert_restored(&before, &[&id]);
    }
}

/// netem's delay is the ground truth: one direction only, so each round trip
/// (and the TCP handshake) takes exactly the delay longer.
#[test]
fn netem_adds_its_delay_to_every_round_trip() {
    let _serial = serial();
    let delay = Duration::from_millis(20);
    let expected = lab::delay_available().expect("no way to inject delay on this machine");
    eprintln!("delay injected with {expected:?}");
    for kind in LabKind::ALL {
        let before = snapshot();
        let plain = LabNet::create(kind, &run_id("plain"), None).unwrap();
        let delayed = LabNet::create(kind, &run_id("netem"), Some(delay)).unwrap();
        assert_eq!(delayed.netem(), Some(delay));
        // Where the kernel's configuration says there is no netem, the delay
        // line must be what was used (elsewhere tc has the last word).
        assert!(delayed.delay_mechanism().is_some());
        if expected == DelayMechanism::DelayLine {
            assert_eq!(delayed.delay_mechanism(), Some(expected));
        }
        assert_eq!(plain.delay_mechanism(), None);
        // The first connection also resolves the server's MAC address, and
        // the server's ARP reply is delayed too; the second one is warm.
        let (_, base) = (serve_and_exchange(&plain), serve_and_exchange(&plain));
        let cold = serve_and_exchange(&delayed);
        let slow = serve_and_exchange(&delayed);
        let added = slow.min_rtt().saturating_sub(base.min_rtt());
        let handshake = slow.connect.saturating_sub(base.connect);
        eprintln!(
            "{kind:?} ({:?}): min rtt {:?} -> {:?} (+{added:?}), connect +{handshake:?} (cold: +{:?})",
            delayed.delay_mechanism().unwrap(),
            base.min_rtt(),
            slow.min_rtt(),
            cold.connect.saturating_sub(base.connect),
        );
        let name = format!("{kind:?}");
        // Lower bounds are hard (no packet of the server escapes the delay),
        // so they compare against the delay itself, not against a baseline a
        // busy machine could inflate.
        assert!(slow.min_rtt() >= delay, "{name}: {:?}", slow.min_rtt());
        assert!(slow.connect >= delay, "{name}: connect {:?}", slow.connect);
        // Cold: the server's ARP reply is delayed too, then its SYN-ACK.
        assert!(
            cold.connect >= 2 * delay,
            "{name}: cold connect {:?}",
            cold.connect
        );
        // One direction only: a round trip gains one delay, never two. The
        // minimum of ROUNDS round trips leaves a margin no scheduler hiccup
        // fills on every round.
        assert!(
            added < 2 * delay - Duration::from_millis(1),
            "{name}: +{added:?}"
        );
        assert!(
            handshake < Duration::from_millis(200),
            "{name}: connect +{handshake:?}"
        );
        let ids = [plain.id().to_string(), delayed.id().to_string()];
        plain.teardown().unwrap();
        delayed.teardown().unwrap();
        assert_restored(&before, &[&ids[0], &ids[1]]);
    }
}

/// Removes what a test made by hand, even when it fails.
struct Handmade(Vec<Vec<String>>);

impl Drop for Handmade {
    fn drop(&mut self) {
        for undo in self.0.iter().rev() {
            let _ = Command::new(&undo[0]).args(&undo[1..]).output();
        }
    }
}

fn make(handmade: &mut Handmade, make: &[&str], undo: &[&str]) {
    sh(make[0], &make[1..]);
    handmade
        .0
        .push(undo.iter().map(|s| s.to_string()).collect());
}

#[test]
fn cleanup_all_removes_leaked_networks_and_nothing_else() {
    let _serial = serial();
    let before = snapshot();
    let pid = std::process::id();
    let mut handmade = Handmade(Vec::new());
    // The user's own things, some named to look almost like tare's.
    let user_ns = format!("notare-{pid}");
    let user_table = format!("notare_{pid}");
    let user_link = format!("tr{pid}keep");
    let user_lablike = format!("tr{pid:08x}zz");
    make(
        &mut handmade,
        &["ip", "netns", "add", &user_ns],
        &["ip", "netns", "delete", &user_ns],
    );
    make(
        &mut handmade,
        &["nft", "add", "table", "ip", &user_table],
        &["nft", "delete", "table", "ip", &user_table],
    );
    make(
        &mut handmade,
        &[
            "ip",
            "link",
            "add",
            &user_link,
            "type",
            "veth",
            "peer",
            "name",
            &format!("tr{pid}kpeer"),
        ],
        &["ip", "link", "delete", &user_link],
    );
    make(
        &mut handmade,
        &[
            "ip",
            "link",
            "add",
            &user_lablike,
            "type",
            "veth",
            "peer",
            "name",
            &format!("tr{pid:08x}zy"),
        ],
        &["ip", "link", "delete", &user_lablike],
    );

    // A network whose owner is alive elsewhere (the name is bound by a socket
    // that is not this process's lab registry): cleanup must leave it.
    let live_id = format!("{:08x}", pid.wrapping_mul(2654435761));
    let live_ns = format!("tare-{}-{live_id}-srv", run_id("live"));
    make(
        &mut handmade,
        &["ip", "netns", "add", &live_ns],
        &["ip", "netns", "delete", &live_ns],
    );
    let owner = std::os::unix::net::UnixListener::bind_addr(
        &<std::os::unix::net::SocketAddr as std::os::linux::net::SocketAddrExt>::from_abstract_name(
            format!("tare-lab-{live_id}").as_bytes(),
        )
        .unwrap(),
    )
    .unwrap();

    // A leaked lab network with every kind of resource (Client has them all).
    let leaked = LabNet::create(LabKind::Client, &run_id("leak"), None).unwrap();
    let leaked_id = leaked.id().to_string();
    let leaked_ns = leaked.server_netns().to_path_buf();
    std::mem::forget(leaked);
    let with_leak = snapshot();
    let leaked_things: Vec<String> = before
        .diff(&with_leak, &[&leaked_id])
        .into_iter()
        .filter(|e| e.contains(&leaked_id))
        .collect();
    assert!(leaked_things.len() >= 6, "{leaked_things:?}");

    let removed = lab::cleanup_all().unwrap();
    eprintln!("cleanup_all removed: {removed:?}");
    assert!(!leaked_ns.exists());
    let after = snapshot();
    for thing in &leaked_things {
        assert!(!after.0.contains(thing), "{thing} survived cleanup_all");
    }
    assert!(removed
        .iter()
        .any(|r| r.contains(&leaked_id) && r.starts_with("netns")));
    assert!(removed
        .iter()
        .any(|r| r.contains(&leaked_id) && r.starts_with("nft table")));
    assert!(removed.iter().all(|r| !r.contains(&live_id)), "{removed:?}");
    for survivor in [
        format!("netns {user_ns}"),
        format!("table ip {user_table}"),
        format!("link {user_link}"),
        format!("link {user_lablike}"),
        format!("netns {live_ns}"),
    ] {
        assert!(after.0.contains(&survivor), "{survivor} was removed");
    }

    // Once its owner is gone, the live network is a leftover too.
    drop(owner);
    let removed = lab::cleanup_all().unwrap();
    assert!(removed.contains(&format!("netns {live_ns}")), "{removed:?}");
    handmade.0.retain(|undo| !undo.contains(&live_ns));
    drop(handmade);
    assert_restored(&before, &[&leaked_id, &live_id]);
}

#[test]
fn bad_run_ids_fail_before_anything_is_made() {
    let _serial = serial();
    let before = snapshot();
    for bad in ["", "has space", "a/b"] {
        let err = LabNet::create(LabKind::Nat, bad, None).unwrap_err();
        assert!(matches!(err, LabError::InvalidRunId { .. }), "{err}");
    }
    assert_restored(&before, &[]);
}

#[test]
fn parallel_networks_get_distinct_subnets() {
    let _serial = serial();
    let before = snapshot();
    let nets: Vec<LabNet> = (0..3)
        .map(|i| LabNet::create(LabKind::Bridge, &run_id(&format!("par{i}")), None).unwrap())
        .collect();
    let addrs: BTreeSet<IpAddr> = nets.iter().map(LabNet::server_addr).collect();
    assert_eq!(addrs.len(), 3, "{addrs:?}");
    // Each carries traffic while the others exist.
    for net in &nets {
        serve_and_exchange(net);
    }
    let ids: Vec<String> = nets.iter().map(|n| n.id().to_string()).collect();
    drop(nets); // Drop tears down, like teardown()
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    assert_restored(&before, &ids);
}

/// Not a test on its own: the lab network owner that
/// `a_killed_owners_network_is_left_alone_until_it_dies` runs in a child
/// process and kills with SIGKILL.
#[test]
#[ignore = "run by a_killed_owners_network_is_left_alone_until_it_dies"]
fn child_owning_a_lab_net() {
    if std::env::var_os("TARE_LAB_CHILD").is_none() {
        return;
    }
    let net = LabNet::create(
        LabKind::Client,
        &run_id("child"),
        Some(Duration::from_millis(5)),
    )
    .unwrap();
    println!("READY {}", net.id());
    std::io::stdout().flush().unwrap();
    std::thread::sleep(Duration::from_secs(30));
}

#[test]
fn a_killed_owners_network_is_left_alone_until_it_dies() {
    use std::io::BufRead;
    let _serial = serial();
    let before = snapshot();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "lab::child_owning_a_lab_net",
            "--ignored",
            "--nocapture",
        ])
        .env("TARE_LAB_CHILD", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    struct Reap(std::process::Child);
    impl Drop for Reap {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let stdout = child.stdout.take().unwrap();
    let mut child = Reap(child);
    let id = std::io::BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("READY ").map(String::from))
        .expect("child made no lab network");
    let with_child = snapshot();
    let theirs: Vec<String> = before
        .diff(&with_child, &[&id])
        .into_iter()
        .filter(|e| e.contains(&id))
        .collect();
    assert!(theirs.len() >= 6, "{theirs:?}");

    // Alive: `tare cleanup` elsewhere must not pull the network from under it.
    let removed = lab::cleanup_all().unwrap();
    assert!(removed.iter().all(|r| !r.contains(&id)), "{removed:?}");
    assert!(theirs.iter().all(|t| snapshot().0.contains(t)));

    // SIGKILL: no Drop ran, the names are all that is left.
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    let removed = lab::cleanup_all().unwrap();
    eprintln!("after SIGKILL, cleanup_all removed: {removed:?}");
    assert!(removed.iter().any(|r| r.contains(&id)), "{removed:?}");
    assert_restored(&before, &[&id]);
}
