//! Ground truth for the profile (docs/profiles.md): nginx in the namespace
//! lab behind a bridge, then behind the bridge and nftables NAT. Only the
//! NAT cell's packets are translated, so the NAT subsystem (packets
//! rewritten: `nf_nat_manip_pkt`, `l4proto_manip_pkt`...) must show in
//! its server's and generator's profile and not in the bridge cell's. The
//! nat table's hooks run in both on a Docker host (its nat table is in the
//! host's namespace, and br_netfilter passes bridged frames through it):
//! they are netfilter's, and not asserted. Softirq work for someone else's
//! packets (another test's published port) can land on our processes, so
//! the bridge cell may hold a trace of NAT, never a real share.
//! Every profiled server's µs per request must be the CPU the CPU table
//! also counted, within sampling noise.
//!
//! Then the same for three causes in Docker containers (seccomp's filter,
//! docker-proxy's relay, the image's overlay), and a refused perf_event_open, which must cost
//! the trial nothing but its profile.

use std::time::Duration;

use tare_deploy::{deploy, DeploySpec, PlacementKind, TargetKind, TargetSpec};
use tare_monitor::{GeneratorRef, Monitor, MonitorRecord, MonitorSpec, ServerRef};

const HZ: u32 = 4999;

fn run_id(tag: &str) -> String {
    format!("mp{}{tag}", std::process::id() % 100_000)
}

/// nginx in `placement`, loaded for 2 s from the lab's client side under
/// the monitor; the deployment is removed on every path (its Drop).
fn cell(placement: &str) -> MonitorRecord {
    let spec = DeploySpec::new(
        run_id(&placement.replace('-', "")),
        TargetSpec::of(TargetKind::named("nginx").unwrap()),
        PlacementKind::named(placement).unwrap(),
    );
    measure(spec, |pid| ServerRef::Pids(vec![pid]))
}

/// Deploys `spec`, loads it for 2 s under the monitor with the server as
/// `server(its pid)`, and returns the finished record.
fn measure(spec: DeploySpec, server: fn(u32) -> ServerRef) -> MonitorRecord {
    let placement = spec.placement.name().to_string();
    let d = deploy(&spec).unwrap_or_else(|e| panic!("{placement}: {e}"));
    let pid = d.facts().server_pid.expect("the server's pid") as u32;
    let mut spec = MonitorSpec::new(server(pid), GeneratorRef::Threads("tare-http-".into()));
    // Ten times the default rate: a few µs of NAT per request must be
    // tens of samples, not a handful.
    spec.profile_hz = HZ;
    let monitor = Monitor::start(spec).unwrap();
    let c = crate::support::deployment_load(&d, Duration::from_secs(2));
    let result = tare_http::run(&c).unwrap();
    assert_eq!(result.errors.total(), 0, "{placement}: {:?}", result.errors);
    let record = monitor.stop().finish(&result);
    d.stop().unwrap();
    record
}

/// The record's profile, or `None` after saying why there is none (the
/// record's own note, which must exist).
fn profiled<'a>(name: &str, r: &'a MonitorRecord) -> Option<&'a tare_monitor::Profile> {
    if r.profile.is_none() {
        let why = r.notes.iter().find(|n| n.starts_with("no profile"));
        eprintln!("{name}: {why:?}: skipped");
        assert!(
            why.is_some(),
            "{name}: no profile and no note: {:?}",
            r.notes
        );
    }
    r.profile.as_ref()
}

/// `subsystem`'s µs per request in `component`'s samples.
fn us_in(r: &MonitorRecord, component: &str, subsystem: &str) -> f64 {
    let p = r.per_request.as_ref().unwrap();
    p.profile_us
        .get(component)
        .and_then(|m| m.get(subsystem))
        .copied()
        .unwrap_or(0.0)
}

#[test]
fn nat_shows_in_the_nat_cell_and_not_in_the_bridge_cell() {
    if let Err(e) = tare_deploy::lab::available() {
        eprintln!("lab unavailable ({e}): skipped");
        return;
    }
    let bridge = cell("lab-bridge");
    let nat = cell("lab-nat");
    for (name, r) in [("lab-bridge", &bridge), ("lab-nat", &nat)] {
        // Where perf_event_open is refused the record says why, once.
        let Some(profile) = profiled(name, r) else {
            return;
        };
        let p = r.per_request.as_ref().unwrap();
        eprintln!(
            "{name}: {} samples, {} lost; by subsystem (µs/req): {:?}",
            profile.samples,
            profile.lost,
            p.subsystems_us()
        );
        for (component, by) in &p.profile_us {
            let nf: Vec<String> = ["netfilter", "conntrack", "NAT"]
                .iter()
                .filter_map(|s| by.get(*s).map(|v| format!("{s} {v:.2}")))
                .collect();
            eprintln!("  {component}: {}", nf.join(", "));
        }
        eprintln!("  cpu table: {}", p.short());
        assert!(profile.samples > 100, "{name}: {profile:?}");
        // The server's sampled CPU is the CPU its counters gave, within
        // sampling's noise: 2 s at 4999 Hz is ~10,000 samples a busy CPU.
        let sampled: f64 = p.profile_us.get("server").map_or(0.0, |m| m.values().sum());
        assert!(
            sampled > 0.5 * p.server_us && sampled < 1.5 * p.server_us,
            "{name}: server sampled {sampled:.1} µs/req, counted {:.1}",
            p.server_us
        );
    }
    let (in_nat, in_bridge) = (trial_nat_us(&nat), trial_nat_us(&bridge));
    eprintln!(
        "NAT in the server and generator, µs/req: lab-nat {in_nat:.2}, lab-bridge {in_bridge:.2}"
    );
    assert!(
        in_nat > 0.0,
        "no NAT samples in lab-nat's server or generator"
    );
    assert!(
        in_bridge < 0.25 * in_nat,
        "NAT in lab-bridge {in_bridge:.2} µs/req against {in_nat:.2} in lab-nat"
    );
}

/// NAT's µs per request in the trial's own processes.
fn trial_nat_us(r: &MonitorRecord) -> f64 {
    us_in(r, "server", "NAT") + us_in(r, "generator", "NAT")
}

fn docker_available() -> bool {
    tare_deploy::docker::engine_version().is_ok()
}

/// nginx in a container on the host network (run id `tag`), as `set`
/// makes it.
fn docker_host_cell(tag: &str, set: impl FnOnce(&mut DeploySpec)) -> MonitorRecord {
    let mut spec = DeploySpec::new(
        run_id(tag),
        TargetSpec::of(TargetKind::named("nginx").unwrap()),
        PlacementKind::named("docker-host").unwrap(),
    );
    set(&mut spec);
    measure(spec, ServerRef::CgroupOf)
}

/// nginx in a container on the host network, with Docker's default
/// seccomp profile or without any.
fn seccomp_cell(unconfined: bool) -> MonitorRecord {
    docker_host_cell(if unconfined { "su" } else { "sd" }, |spec| {
        spec.container.seccomp_unconfined = unconfined;
    })
}

/// Ground truth for seccomp: Docker's default profile filters every
/// system call the container's nginx makes (`__seccomp_filter`, the
/// filter's BPF program under it), and `seccomp=unconfined` attaches no
/// filter at all, so the server's samples hold seccomp in the first cell
/// only. The image is built from the host's nginx binary (no registry).
#[test]
fn seccomp_shows_in_the_default_cell_and_not_in_the_unconfined_cell() {
    if !docker_available() {
        eprintln!("Docker not reachable: skipped");
        return;
    }
    let unconfined = seccomp_cell(true);
    let default = seccomp_cell(false);
    for (name, r) in [("default", &default), ("unconfined", &unconfined)] {
        if profiled(name, r).is_none() {
            return;
        }
        eprintln!(
            "{name}: server by subsystem (µs/req): {:?}",
            r.per_request.as_ref().unwrap().profile_us.get("server")
        );
    }
    let (d, u) = (
        us_in(&default, "server", "seccomp"),
        us_in(&unconfined, "server", "seccomp"),
    );
    eprintln!("seccomp in the server, µs/req: default {d:.2}, unconfined {u:.2}");
    assert!(d > 0.0, "no seccomp samples in the default cell's server");
    assert!(
        u < 0.1 * d,
        "seccomp in the unconfined server {u:.2} µs/req against {d:.2} by default"
    );
    let f = &default.profile.as_ref().unwrap().functions_cpu_s;
    eprintln!(
        "default: seccomp functions {:?}",
        f.keys()
            .filter(|k| k.contains("seccomp"))
            .collect::<Vec<_>>()
    );
}

/// nginx in a container on Docker's bridge, reached at its own address
/// (`docker-bridge`) or at a published port on loopback, through
/// docker-proxy (`docker-publish`).
fn proxy_cell(placement: &str) -> MonitorRecord {
    let spec = DeploySpec::new(
        run_id(&placement.replace("docker-", "d")),
        TargetSpec::of(TargetKind::named("nginx").unwrap()),
        PlacementKind::named(placement).unwrap(),
    );
    measure(spec, ServerRef::CgroupOf)
}

/// Ground truth for the published port: on loopback, each request of
/// `docker-publish` passes through docker-proxy, a user-space relay (its
/// own process, watched by name), and `docker-bridge` reaches the
/// container directly. docker-proxy's user space is in the publish cell
/// only, with its extra TCP hops (TCP/IP in its kernel samples).
#[test]
fn docker_proxy_user_space_shows_in_the_publish_cell_and_not_in_the_bridge_cell() {
    if !docker_available() {
        eprintln!("Docker not reachable: skipped");
        return;
    }
    let others_before = tare_monitor::process::named("docker-proxy");
    // The bridge cell first: a publish cell's docker-proxy outlives its
    // container for a moment (docker.rs).
    let bridge = proxy_cell("docker-bridge");
    let publish = proxy_cell("docker-publish");
    let others_after = tare_monitor::process::named("docker-proxy");
    for (name, r) in [("docker-bridge", &bridge), ("docker-publish", &publish)] {
        if profiled(name, r).is_none() {
            return;
        }
        eprintln!(
            "{name}: docker-proxy by subsystem (µs/req): {:?}",
            r.per_request
                .as_ref()
                .unwrap()
                .profile_us
                .get("docker-proxy")
        );
    }
    let user = |r: &MonitorRecord| us_in(r, "docker-proxy", "user space");
    let tcp = |r: &MonitorRecord| us_in(r, "docker-proxy", "TCP/IP");
    let (p, b) = (user(&publish), user(&bridge));
    eprintln!(
        "docker-proxy user space, µs/req: publish {p:.2}, bridge {b:.2}; its TCP/IP: publish {:.2}, bridge {:.2}",
        tcp(&publish),
        tcp(&bridge)
    );
    assert!(
        p > 0.0,
        "no docker-proxy user-space samples in docker-publish"
    );
    assert!(
        tcp(&publish) > 0.0,
        "no TCP/IP in docker-proxy in docker-publish"
    );
    let proxy_fn = publish
        .profile
        .as_ref()
        .unwrap()
        .functions_cpu_s
        .get("[docker-proxy]")
        .copied()
        .unwrap_or(0.0);
    assert!(
        proxy_fn > 0.0,
        "[docker-proxy] is not among the top functions"
    );
    if others_before.is_empty() && others_after.is_empty() {
        // Nobody else's published port exists: no docker-proxy runs at all.
        assert_eq!(b, 0.0);
    } else {
        // Someone else's containers are up: theirs may carry some traffic.
        assert!(
            b < 0.1 * p,
            "docker-proxy in docker-bridge {b:.2} against {p:.2}"
        );
    }
}

/// Set in the child of the test below: the child is the measurement.
const REFUSED_CHILD: &str = "TARE_TEST_PROFILE_REFUSED_CHILD";
/// The child's record, one line on its stdout.
const RECORD_LINE: &str = "monitor record: ";

/// Where perf_event_open is refused, the trial is measured all the same
/// and says why in one note (docs/profiles.md, "When there is no
/// profile"). The refusal is the kernel's own: the test runs itself again
/// as `nobody` without capabilities, where `kernel.perf_event_paranoid`
/// ≥ 1 (Debian's default is 2) forbids whole-machine events; the system
/// setting is not touched (other tests on the machine profile meanwhile).
#[test]
fn a_refused_perf_event_open_is_one_note_and_the_rest_is_measured() {
    if std::env::var_os(REFUSED_CHILD).is_some() {
        return refused_child();
    }
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(2);
    // SAFETY: geteuid has no preconditions.
    if paranoid < 1 || unsafe { libc::geteuid() } != 0 {
        eprintln!(
            "needs root to drop to nobody, and perf_event_paranoid ≥ 1 (is {paranoid}): skipped"
        );
        return;
    }
    use std::os::unix::process::CommandExt;
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "profile::a_refused_perf_event_open_is_one_note_and_the_rest_is_measured",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(REFUSED_CHILD, "1")
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let json = stdout
        .lines()
        // The harness prints `test NAME ... ` before it on the same line.
        .find_map(|l| l.split_once(RECORD_LINE).map(|(_, json)| json))
        .unwrap_or_else(|| panic!("no record in the child's output: {stdout}"));
    let r = MonitorRecord::from_json(&serde_json::from_str(json).unwrap()).unwrap();
    assert!(r.profile.is_none(), "{:?}", r.profile);
    let why: Vec<&String> = r
        .notes
        .iter()
        .filter(|n| n.starts_with("no profile"))
        .collect();
    eprintln!("{why:?}");
    assert_eq!(why.len(), 1, "{:?}", r.notes);
    assert!(
        why[0].starts_with("no profile: perf_event_open: Permission denied")
            && why[0].contains(&format!("kernel.perf_event_paranoid = {paranoid}"))
            && !why[0].contains('\n'),
        "{}",
        why[0]
    );
    // Everything else was measured.
    let p = r.per_request.as_ref().expect("CPU per request");
    assert!(p.server_us > 0.0 && p.generator_us > 0.0, "{p:?}");
    assert!(p.profile_us.is_empty(), "{p:?}");
    assert!(r.verdict.is_some(), "{r:?}");
}

/// The child: `tare serve` loaded for a second under the monitor, in this
/// process, as an unprivileged user.
fn refused_child() {
    let server = tare_serve::Server::start(tare_serve::ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
        ..Default::default()
    })
    .unwrap();
    let url = format!("http://{}/", server.local_addr().unwrap());
    let spec = MonitorSpec::new(
        ServerRef::Threads("tare-serve".into()),
        GeneratorRef::Threads("tare-http".into()),
    );
    assert_eq!(spec.profile_hz, tare_monitor::profile::DEFAULT_HZ);
    let monitor = Monitor::start(spec).unwrap();
    let result = crate::support::load(&url, 1, 4, 1.0);
    let record = monitor.stop().finish(&result);
    println!("{RECORD_LINE}{}", record.to_json());
}

/// nginx in a container on the host network, its content in the image or
/// on a bind-mounted host directory.
fn storage_cell(storage: tare_deploy::Storage) -> MonitorRecord {
    let tag = if storage == tare_deploy::Storage::Image {
        "si"
    } else {
        "sh"
    };
    docker_host_cell(tag, |spec| spec.container.storage = storage)
}

/// Ground truth for storage: nginx reading its content from the image
/// goes through the overlay filesystem (overlayfs in the kernel, or FUSE
/// to the fuse-overlayfs process where Docker's storage driver is
/// fuse-overlayfs, as on this project's machine); from a bind-mounted
/// host directory it reaches the host's filesystem directly. The server's
/// FUSE and overlayfs samples are in the image cell only.
#[test]
fn the_overlay_shows_in_the_image_cell_and_not_in_the_host_path_cell() {
    if !docker_available() {
        eprintln!("Docker not reachable: skipped");
        return;
    }
    let host = storage_cell(tare_deploy::Storage::HostPath);
    let image = storage_cell(tare_deploy::Storage::Image);
    for (name, r) in [("image", &image), ("host-path", &host)] {
        if profiled(name, r).is_none() {
            return;
        }
    }
    let overlay = |r: &MonitorRecord| us_in(r, "server", "FUSE") + us_in(r, "server", "overlayfs");
    let (i, h) = (overlay(&image), overlay(&host));
    eprintln!("FUSE + overlayfs in the server, µs/req: image {i:.2}, host-path {h:.2}");
    assert!(
        i > 0.0,
        "no FUSE or overlayfs samples in the image cell's server"
    );
    // The host-path container's own files (its binary, libraries, config)
    // are still on the overlay: a trace remains (0.37 against 10.5 µs the
    // first time), never a real share.
    assert!(
        h < 0.2 * i,
        "FUSE + overlayfs in the host-path server {h:.2} µs/req against {i:.2} from the image"
    );
}
