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
