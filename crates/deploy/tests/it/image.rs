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
fn answered(read: impl Fn() -> String, expected: u64) -> u64 {
    let count = || read().matches("response:200").count() as u64;
    support::settled(count, expected, Duration::from_secs(1))
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
    let ctx = context(&httpd(tare_testbed::free_port()));
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
        support::assert_serves_exactly(&d, 200, placement);
        let dir = d.dir().to_path_buf();
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let log = || match placement {
            "docker-host" => support::both_streams("docker", &["logs", &name]),
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
        support::assert_nothing_left(&before, &s.run_id, placement);
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
    let port = tare_testbed::free_port();
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
                &format!("EXPOSE {}", tare_testbed::free_port()),
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
        support::assert_nothing_left(&before, &s.run_id, name);
    }
}

/// `podman logs NAME` (rootful), both streams: httpd logs on stderr.
fn podman_log(name: &str) -> String {
    support::both_streams("podman", &["logs", name])
}

/// What `run` left since `before` but its exported trees (kept while the
/// run's `ExportCache` is held).
fn left_but_exports(before: &[String], run: &str) -> Vec<String> {
    support::left_since(before, run)
        .into_iter()
        .filter(|l| !l.contains("-export-"))
        .collect()
}

/// One deployment of the image in `placement`, loaded with exactly 200
/// requests and stopped; its facts, and nothing of `run` left behind.
fn deploy_load_stop(
    ctx: &Path,
    test: &str,
    placement: &str,
    log: Option<&dyn Fn(&str) -> String>,
) -> tare_deploy::Facts {
    let before = support::machine_state();
    let mut s = spec(test, ctx, placement);
    s.target.target.ready_within = Some(Duration::from_secs(120));
    let d = deploy(&s).unwrap_or_else(|e| panic!("{placement}: {e}"));
    support::assert_serves_exactly(&d, 200, placement);
    if let Some(log) = log {
        let name = d.dir().file_name().unwrap().to_string_lossy().to_string();
        assert_eq!(
            answered(|| log(&name), 200),
            200,
            "{placement}: {}",
            log(&name)
        );
    }
    let f = d.facts().clone();
    d.stop().unwrap();
    // The run's export stays while its cache is held (checked after).
    assert_eq!(
        left_but_exports(&before, &s.run_id),
        Vec::<String>::new(),
        "{placement}"
    );
    f
}

/// The image in rootful Podman (podman-host) and rootless Podman
/// (podman-rootless-pasta, in tare-rootless's store) runs the files a
/// native cell runs: the same tree and entrypoint hashes, the exported
/// tree kept for the run by an `ExportCache` and removed with it, and the
/// imported image gone from each store with its deployment.
#[test]
fn podman_rootful_and_rootless_run_the_images_files() {
    use tare_testbed::rootless::{self, TestUser, DEFAULT_USER};
    let test = "image_podman";
    if !ready(test) {
        return;
    }
    let _user = TestUser::adopt(DEFAULT_USER);
    let ctx = context(&httpd(tare_testbed::free_port()));
    let run = support::run_id("imgpod");
    let cache = tare_deploy::ExportCache::new(&run);
    let native = deploy_load_stop(ctx.path(), "imgpod", "native", None);
    let tree = native.rootfs_sha256.clone().expect("a tree hash");
    for placement in ["podman-host", "podman-rootless-pasta"] {
        if let Err(why) = PlacementKind::named(placement).unwrap().available() {
            eprintln!("{test}: {placement} skipped: {why}");
            continue;
        }
        let user_before = rootless::things(DEFAULT_USER);
        let log: Option<&dyn Fn(&str) -> String> = match placement {
            "podman-host" => Some(&podman_log),
            _ => None,
        };
        let f = deploy_load_stop(ctx.path(), "imgpod", placement, log);
        eprintln!(
            "{test}: {placement}: image {:?}, root {:?}, tree {}",
            f.image,
            f.root_fs,
            &tree[..12]
        );
        assert_eq!(
            f.rootfs_sha256.as_deref(),
            Some(tree.as_str()),
            "{placement}"
        );
        assert_eq!(f.process.binary_sha256, native.process.binary_sha256);
        assert!(
            f.image
                .as_deref()
                .is_some_and(|i| i.starts_with("localhost/tare/image:")),
            "{f:?}"
        );
        // Podman's storage as the container sees its root (overlay, or
        // the filesystem under it where Podman bind-mounts a layer).
        assert!(f.root_fs.is_some(), "{f:?}");
        // The image imported into the user's store went with the deployment.
        let user_left: Vec<String> = rootless::things(DEFAULT_USER)
            .into_iter()
            .filter(|l| !user_before.contains(l) && l.contains("tare/image"))
            .collect();
        assert_eq!(user_left, Vec::<String>::new(), "{placement}");
    }
    // The run's export is removed with its cache.
    let exports = || -> Vec<String> {
        support::machine_state()
            .into_iter()
            .filter(|l| l.contains(&run) && l.contains("-export-"))
            .collect()
    };
    // Kept for the run (one per image identity), gone with its cache.
    assert!(!exports().is_empty(), "the run's export is kept");
    drop(cache);
    assert_eq!(exports(), Vec::<String>::new());
}

/// The image in a guest (vm-bridge, under KVM or TCG, whichever works
/// here): booted with the image's exported files, its entrypoint run
/// chrooted into them, the same tree hash as a native cell's; from the
/// initramfs and from the guest's virtio disk (`storage = "volume"`).
#[test]
fn vm_bridge_boots_with_the_images_files() {
    let test = "image_vm";
    if !ready(test) {
        return;
    }
    let vm = PlacementKind::named("vm-bridge").unwrap();
    if let Err(why) = vm.available() {
        eprintln!("{test}: skipped, no guests here: {why}");
        return;
    }
    let ctx = context(&httpd(tare_testbed::free_port()));
    let run = support::run_id("imgvm");
    let _cache = tare_deploy::ExportCache::new(&run);
    let native = deploy_load_stop(ctx.path(), "imgvm", "native", None);
    let tree = native.rootfs_sha256.clone().expect("a tree hash");
    for storage in [tare_deploy::Storage::Image, tare_deploy::Storage::Volume] {
        let before = support::machine_state();
        let mut s = spec("imgvm", ctx.path(), "vm-bridge");
        s.target.target.ready_within = Some(Duration::from_secs(120));
        s.container.storage = storage;
        let d = deploy(&s).unwrap_or_else(|e| panic!("vm-bridge, {storage}: {e}"));
        support::assert_serves_exactly(&d, 200, storage);
        let f = d.facts().clone();
        let guest = f.guest.clone().expect("guest facts");
        eprintln!(
            "{test}: {storage}: accel {} ({}), root {:?}, tree {}",
            guest.accel,
            guest.accel_reason,
            f.root_fs,
            &tree[..12]
        );
        assert!(["kvm", "tcg"].contains(&guest.accel.as_str()), "{guest:?}");
        assert_eq!(f.rootfs_sha256.as_deref(), Some(tree.as_str()), "{storage}");
        assert_eq!(f.process.binary_sha256, native.process.binary_sha256);
        let root_fs = f.root_fs.clone().unwrap_or_default();
        match storage {
            tare_deploy::Storage::Volume => assert_eq!(root_fs, "ext4", "{f:?}"),
            _ => assert!(
                ["rootfs", "tmpfs", "ramfs"].contains(&root_fs.as_str()),
                "{f:?}"
            ),
        }
        assert_eq!(f.cgroup, None, "a guest names no host cgroup");
        d.stop().unwrap();
        assert_eq!(
            left_but_exports(&before, &s.run_id),
            Vec::<String>::new(),
            "{storage}"
        );
    }
}

/// A guest whose entrypoint exits at once: one line naming the placement
/// and the cause, with the entrypoint's last words, and nothing left.
#[test]
fn vm_guest_whose_entrypoint_exits_is_one_line() {
    let test = "image_vm_exits";
    if !ready(test) {
        return;
    }
    if let Err(why) = PlacementKind::named("vm-bridge").unwrap().available() {
        eprintln!("{test}: skipped, no guests here: {why}");
        return;
    }
    let ctx = context(
        "FROM scratch\nCOPY busybox /bin/busybox\nEXPOSE 8080\n\
         ENTRYPOINT [\"/bin/busybox\", \"sh\", \"-c\", \"echo no config here >&2; exit 3\"]\n",
    );
    let before = support::machine_state();
    let mut s = spec("imgvmexit", ctx.path(), "vm-bridge");
    s.target.target.ready_within = Some(Duration::from_secs(120));
    let e = deploy(&s)
        .expect_err("an entrypoint that exits")
        .to_string();
    eprintln!("{test}: {e}");
    assert!(e.contains("vm-bridge"), "{e}");
    assert!(e.contains("no config here"), "{e}");
    assert!(!e.contains('\n'), "{e}");
    support::assert_nothing_left(&before, &s.run_id, "");
}
