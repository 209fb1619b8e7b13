//! `kind = "image"`: a user's own image, built from a Dockerfile `FROM
//! scratch` holding the host's busybox-static (nothing can be pulled),
//! whose httpd logs every request it answers. Run as a container in
//! docker-host and as a chrooted process from its exported root filesystem
//! in native and lab-nat: the same file-tree hash in every placement's
//! facts, the server's own log counting exactly the requests tare made,
//! and the mistakes (no entrypoint, a port that never answers, a
//! Dockerfile that fails, an entrypoint the chroot cannot run), each one
//! line naming the cause, nothing left behind.
//!
//! Each test skips, saying why, only where busybox or Docker is missing.

use std::path::Path;
use std::time::Duration;

use tare_deploy::{deploy, DeploySpec, OciSource, PlacementKind, Target, TargetSpec};

use crate::support;

const BUSYBOX: &str = "/bin/busybox";

fn ready(test: &str) -> bool {
    if !Path::new(BUSYBOX).exists() {
        eprintln!("{test}: skipped: no busybox-static here (scripts/setup.sh installs it)");
        return false;
    }
    if !support::docker_available() {
        eprintln!("{test}: skipped: no Docker engine here");
        return false;
    }
    true
}

/// A Dockerfile context: busybox and a page, with `dockerfile`'s text.
fn context(dockerfile: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(BUSYBOX, dir.path().join("busybox")).unwrap();
    std::fs::create_dir(dir.path().join("www")).unwrap();
    std::fs::write(dir.path().join("www/index.html"), "hello from the image\n").unwrap();
    std::fs::write(dir.path().join("Dockerfile"), dockerfile).unwrap();
    dir
}

/// httpd on `port`, as an unprivileged user, logging each answer.
fn httpd(port: u16) -> String {
    format!(
        "FROM scratch\nCOPY busybox /bin/busybox\nCOPY www /www\nUSER 65534:65534\nEXPOSE {port}\n\
         ENTRYPOINT [\"/bin/busybox\", \"httpd\", \"-f\", \"-vv\", \"-p\", \"{port}\", \"-h\", \"/www\"]\n"
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn spec(test: &str, dir: &Path, placement: &str) -> DeploySpec {
    let mut t = Target::user_image(OciSource::Build(dir.to_path_buf()));
    t.ready_within = Some(Duration::from_secs(20));
    DeploySpec::new(
        support::run_id(test),
        TargetSpec::new(t),
        PlacementKind::named(placement).unwrap(),
    )
}

/// The answers httpd logged (`response:200`), polled until it holds
/// `expected` or stops growing (a second), at most ten seconds.
fn answered(read: impl Fn() -> String, expected: usize) -> usize {
    let count = || read().matches("response:200").count();
    let start = std::time::Instant::now();
    let (mut last, mut since) = (count(), std::time::Instant::now());
    while last != expected && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
        let now = count();
        if now != last {
            (last, since) = (now, std::time::Instant::now());
        } else if since.elapsed() > Duration::from_secs(1) {
            break;
        }
    }
    last
}

fn container_log(name: &str) -> String {
    let out = std::process::Command::new("docker")
        .args(["logs", name])
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The image's files in every placement: identical tree and binary hashes
/// in the facts, the root filesystem each runs on named, and httpd's own
/// log holding exactly the requests tare made.
#[test]
fn a_scratch_image_runs_in_docker_and_from_its_files_natively_and_in_lab() {
    let test = "image_everywhere";
    if !ready(test) {
        return;
    }
    let ctx = context(&httpd(free_port()));
    let mut seen = Vec::new();
    for placement in ["native", "docker-host", "lab-nat"] {
        let p = PlacementKind::named(placement).unwrap();
        if let Err(why) = p.available() {
            eprintln!("{test}: {placement} skipped: {why}");
            continue;
        }
        let before = support::machine_state();
        let s = spec(&format!("img{}", &placement[..3]), ctx.path(), placement);
        let d = deploy(&s).unwrap_or_else(|e| panic!("{placement}: {e}"));
        // The probe was a connection, not a request: the log holds ours alone.
        let r = support::load_exactly(&d, 200);
        assert_eq!(r.errors.total(), 0, "{placement}: {:?}", r.errors);
        assert_eq!(r.requests, 200, "{placement}");
        let dir = d.dir().to_path_buf();
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let log = || match placement {
            "docker-host" => container_log(&name),
            _ => std::fs::read_to_string(dir.join("log/server.out")).unwrap_or_default(),
        };
        assert_eq!(answered(log, 200), 200, "{placement}: {}", log());
        let f = d.facts().clone();
        assert_eq!(f.target, "image");
        let tree = f.rootfs_sha256.clone().expect("a tree hash");
        assert_eq!(tree.len(), 64);
        let root_fs = f.root_fs.clone().expect("the root filesystem type");
        eprintln!("{test}: {placement}: root {root_fs}, tree {}", &tree[..12]);
        seen.push((placement, tree, f.process.binary_sha256.clone(), root_fs));
        d.stop().unwrap();
        assert_eq!(
            support::left_behind(&before, &support::machine_state(), &s.run_id),
            Vec::<String>::new(),
            "{placement}"
        );
    }
    for (p, tree, bin, _) in &seen {
        assert_eq!((tree, bin), (&seen[0].1, &seen[0].2), "{p}");
        assert!(bin.is_some(), "{p}");
    }
    // A container's root is the storage driver's overlay; a chroot's is the
    // filesystem the tree was exported to, the same natively and in lab.
    let fs = |name: &str| seen.iter().find(|s| s.0 == name).map(|s| s.3.clone());
    if let (Some(native), Some(docker)) = (fs("native"), fs("docker-host")) {
        assert!(docker.contains("overlay"), "{docker}");
        assert_ne!(native, docker);
        assert_eq!(fs("lab-nat").unwrap_or(native.clone()), native);
    }
}

/// Each mistake is one line naming its cause, and leaves nothing.
#[test]
fn an_image_that_cannot_run_is_one_line_and_leaves_nothing() {
    let test = "image_mistakes";
    if !ready(test) {
        return;
    }
    let port = free_port();
    let cases = [
        (
            "noentry",
            "FROM scratch\nCOPY busybox /bin/busybox\nEXPOSE 8080\n".to_string(),
            "docker-host",
            "no entrypoint or cmd",
        ),
        (
            "badfile",
            "FROM scratch\nCOPY no-such-file /x\nCMD [\"/x\"]\n".to_string(),
            "native",
            "docker build failed",
        ),
        (
            // Listens on another port than the one it exposes.
            "silent",
            httpd(port).replace(
                &format!("EXPOSE {port}"),
                &format!("EXPOSE {}", free_port()),
            ),
            "native",
            "did not become healthy",
        ),
        (
            // A shell the image does not hold.
            "nochroot",
            "FROM scratch\nCOPY www /www\nEXPOSE 8080\nCMD [\"/bin/sh\", \"-c\", \"true\"]\n"
                .to_string(),
            "native",
            "in the image's root filesystem (chroot)",
        ),
    ];
    for (name, dockerfile, placement, cause) in cases {
        let ctx = context(&dockerfile);
        let before = support::machine_state();
        let mut s = spec(&format!("bad{name}"), ctx.path(), placement);
        s.target.target.ready_within = Some(Duration::from_secs(2));
        let e = deploy(&s).expect_err(name).to_string();
        eprintln!("{test}: {name}: {e}");
        assert!(e.contains(cause), "{name}: {e}");
        assert!(!e.contains('\n'), "{name}: {e}");
        assert_eq!(
            support::left_behind(&before, &support::machine_state(), &s.run_id),
            Vec::<String>::new(),
            "{name}"
        );
    }
}
