//! What exists on this machine that a test could leave behind: containers,
//! volumes, images tare built, network namespaces, links and nftables
//! tables, tare's and everyone's, as sorted lines (`container NAME`,
//! `netns NAME`, ...) to compare before and after.

use std::process::Command;

/// What `cmd ARGS` printed on stdout; nothing when it cannot run.
pub fn output(cmd: &str, args: &[&str]) -> String {
    Command::new(cmd)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
        .unwrap_or_default()
}

/// Containers, volumes, network namespaces, links and nftables tables; a
/// tool that is missing contributes nothing.
pub fn resources() -> Vec<String> {
    let mut v = Vec::new();
    for l in output("docker", &["ps", "-a", "--format", "{{.Names}}"]).lines() {
        v.push(format!("container {l}"));
    }
    for l in output("docker", &["volume", "ls", "-q"]).lines() {
        v.push(format!("volume {l}"));
    }
    // Images tare built for a run (a user's Dockerfile), by their owner label.
    let built = [
        "images",
        "--filter",
        "label=tare.owner",
        "--format",
        "{{.Repository}}:{{.Tag}}",
    ];
    for l in output("docker", &built).lines() {
        v.push(format!("image {l}"));
    }
    // Podman's store (no daemon: a missing podman lists nothing).
    for l in output("podman", &["ps", "-a", "--format", "{{.Names}}"]).lines() {
        v.push(format!("podman container {l}"));
    }
    for l in output("podman", &["volume", "ls", "-q"]).lines() {
        v.push(format!("podman volume {l}"));
    }
    // A user's image tare imported for a deployment, by its owner label.
    for l in output("podman", &built).lines() {
        v.push(format!("podman image {l}"));
    }
    for l in output("podman", &["network", "ls", "-q"]).lines() {
        v.push(format!("podman network {l}"));
    }
    for l in output("ip", &["netns", "list"]).lines() {
        v.push(format!(
            "netns {}",
            l.split_whitespace().next().unwrap_or("")
        ));
    }
    for l in output("ip", &["-o", "link", "show"]).lines() {
        if let Some(name) = l.split(':').nth(1) {
            // veth peers of other containers come and go with them; names only.
            v.push(format!(
                "link {}",
                name.trim().split('@').next().unwrap_or("")
            ));
        }
    }
    for l in output("nft", &["list", "tables"]).lines() {
        v.push(format!("nft {l}"));
    }
    v.sort();
    v
}

/// The machine's [`resources`] and running processes (`process ARGS`)
/// that name `run`: what a deployment of that run left, when it should
/// have left nothing.
pub fn naming(run: &str) -> Vec<String> {
    let processes = output("ps", &["-eo", "args"]);
    let mut v: Vec<String> = resources()
        .into_iter()
        .chain(processes.lines().map(|l| format!("process {l}")))
        .filter(|l| l.contains(run))
        .collect();
    v.sort();
    v
}

/// Holds the tests' cleanup lock until dropped. `tare cleanup` removes
/// whatever a dead owner left, and the images in rootless users' stores
/// whoever imported them: a test that asserts what its own cleanup removed
/// (or that a thing it imported is still there to remove) holds this from
/// before it makes that thing to after its cleanup; every other test that
/// runs a cleanup holds it around the call, so none removes another test's
/// evidence in between. A lock file, not a nextest group: the tests that
/// clean up are in the machine, podman and vm groups, which run at once.
pub fn cleanup_lock() -> std::fs::File {
    use std::os::fd::AsRawFd;
    let path = std::env::temp_dir().join("tare-tests-cleanup.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // SAFETY: flock on a descriptor this function owns; the lock goes with
    // the file when the caller drops it.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
    assert_eq!(rc, 0, "locking {}", path.display());
    file
}
