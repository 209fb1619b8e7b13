//! Rootless Podman placements: nginx in podman-rootless-publish
//! (rootlessport), podman-rootless-slirp (slirp4netns's forwarder) and
//! podman-rootless-pasta, as tare's own user `tare-rootless` (made on first
//! use), loaded with an exact request count; the same binary as the host's
//! from tare's image in that user's store; the server pinned by affinity,
//! its conmon and forwarder with it; each forwarder running as the user
//! while deployed, and nothing of the user's left after stop (containers,
//! volumes, forwarders), tare's images then removed by `tare cleanup`.
//! tare serve, a whole `tare run` and a SIGKILLed one are in
//! crates/cli/tests/it/podman_rootless.rs.

use crate::support;

use tare_deploy::{deploy, DeploySpec, PlacementKind, Storage, TargetKind, TargetSpec, Transport};
use tare_engine::Endpoint;
use tare_testbed::rootless::{self, TestUser, DEFAULT_USER};

fn placement(name: &str) -> PlacementKind {
    PlacementKind::named(name).unwrap()
}

/// True (after checking the one-line message a user gets) when this
/// machine cannot run rootless Podman.
fn skip_without_rootless() -> bool {
    let Some((reason, e)) = support::unavailable("podman-rootless-pasta", "norl") else {
        return false;
    };
    assert!(e.contains("podman-rootless-pasta"), "{e}");
    assert!(!e.contains('\n'), "{e}");
    eprintln!("rootless Podman not available here ({reason}): checked the error only");
    true
}

/// The forwarder a placement's TCP path goes through.
fn forwarder(placement: &str) -> &'static [&'static str] {
    match placement {
        "podman-rootless-publish" => &["rootlessport"],
        "podman-rootless-slirp" => &["slirp4netns"],
        _ => &["pasta", "pasta.avx2", "passt.avx2", "passt"],
    }
}

fn deploy_load_stop(placement_name: &str, transport: Transport, storage: Storage) {
    let short = &placement_name["podman-rootless-".len()..];
    let run = support::run_id(&format!(
        "rl{}{}{}",
        &short[..3],
        &transport.to_string()[..1],
        &storage.to_string()[..1]
    ));
    let before = support::machine_state();
    let user_before = rootless::things(DEFAULT_USER);
    let mut t = TargetSpec::of(TargetKind::named("nginx").unwrap());
    t.target.body_size = 2048;
    let mut spec = DeploySpec::new(&run, t, placement(placement_name));
    spec.transport = transport;
    spec.container.storage = storage;
    spec.server_cpus = Some("1".into());
    spec.helper_cpus = Some("1".into());
    let d = deploy(&spec).unwrap_or_else(|e| panic!("nginx in {placement_name}: {e}"));
    let (uid, ..) = rootless::user(DEFAULT_USER).expect("tare made its rootless user");
    match d.endpoint() {
        Endpoint::Unix(_) => assert_eq!(transport, Transport::Unix),
        Endpoint::Tcp(a) => {
            assert!(a.ip().is_loopback(), "{a}");
            // The path goes through this forwarder, run by the user.
            let running = rootless::processes(uid);
            assert!(
                running
                    .iter()
                    .any(|(_, exe)| forwarder(placement_name).contains(&exe.as_str())),
                "{placement_name}: no {:?} of uid {uid}: {running:?}",
                forwarder(placement_name)
            );
        }
    }
    let r = support::assert_serves_exactly(&d, 1500, placement_name);
    assert_eq!(r.in_flight, 0, "{placement_name}");
    let f = d.facts().clone();
    assert_eq!(f.placement, placement_name);
    assert!(
        f.image.as_deref().unwrap_or("").starts_with("tare/nginx:"),
        "{f:?}"
    );
    let host =
        tare_deploy::target_binary(&TargetSpec::of(TargetKind::named("nginx").unwrap())).unwrap();
    assert_eq!(f.process.binary_path, host.display().to_string());
    assert_eq!(f.storage, storage.to_string());
    // Pinned by affinity, as --cpuset-cpus pins a rootful container (the
    // worker is what the facts describe).
    assert_eq!(f.process.cpus_allowed.as_deref(), Some("1"), "{f:?}");
    // Its helpers go with it: conmon, and over TCP the forwarder that
    // listens on the published port (`[cpus] helpers`).
    let pinned = |names: &[&str]| {
        f.helpers
            .iter()
            .any(|h| names.contains(&h.name.as_str()) && h.cpus_allowed.as_deref() == Some("1"))
    };
    assert!(pinned(&["conmon"]), "{placement_name}: {:?}", f.helpers);
    if transport == Transport::Tcp {
        assert!(
            pinned(forwarder(placement_name)),
            "{placement_name}: {:?}",
            f.helpers
        );
    }
    // In the user's store, with tare's labels and the run id.
    let labelled = rootless::podman_as(
        DEFAULT_USER,
        &["ps", "--filter", &format!("label=tare.run={run}"), "-q"],
    )
    .unwrap_or_default();
    assert!(
        !labelled.trim().is_empty(),
        "no labelled container of {run}"
    );
    d.stop().unwrap();
    support::assert_nothing_left(&before, &run, format!("nginx in {placement_name}"));
    // Podman stops a container's forwarders as it goes; give them a moment.
    // The image stays, a cache for the next deployment (cleanup's, below).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let left = loop {
        let left: Vec<String> = rootless::things(DEFAULT_USER)
            .into_iter()
            .filter(|l| !user_before.contains(l) && !l.starts_with("image "))
            .collect();
        if left.is_empty() || std::time::Instant::now() > deadline {
            break left;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(left, Vec::<String>::new(), "{placement_name}");
}

#[test]
fn nginx_in_every_rootless_placement_and_cleanup_of_the_users_images() {
    let user = TestUser::adopt(DEFAULT_USER);
    if skip_without_rootless() {
        return;
    }
    let _cleanup = tare_testbed::machine::cleanup_lock();
    for p in [
        "podman-rootless-publish",
        "podman-rootless-slirp",
        "podman-rootless-pasta",
    ] {
        deploy_load_stop(p, Transport::Tcp, Storage::Image);
    }
    // Files the container's user must write: a bind-mounted host directory
    // (given to the user's mapped root), a volume in the user's store, a
    // Unix socket directory shared with the host.
    deploy_load_stop("podman-rootless-slirp", Transport::Tcp, Storage::HostPath);
    deploy_load_stop("podman-rootless-publish", Transport::Unix, Storage::Volume);
    // Nothing of tare's runs any more: cleanup removes tare's images from
    // the user's store (a cache for the next run, but the user's disk).
    let images = |u: &str| -> Vec<String> {
        rootless::things(u)
            .into_iter()
            .filter(|l| l.starts_with("image localhost/tare/"))
            .collect()
    };
    assert!(!images(&user.name).is_empty(), "no tare image was imported");
    let report = tare_deploy::cleanup().unwrap();
    assert!(
        report
            .removed
            .iter()
            .any(|r| r.contains(DEFAULT_USER) && r.contains("image localhost/tare/nginx")),
        "{report:?}"
    );
    assert_eq!(images(&user.name), Vec::<String>::new(), "{report:?}");
}
