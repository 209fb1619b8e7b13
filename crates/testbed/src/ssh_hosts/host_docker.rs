//! A namespace host's own Docker daemon: a second `dockerd` in the host's
//! network namespace with its own data root, exec root (and so its own
//! managed containerd), socket, pidfile and cgroup parent, and its own
//! bridge and iptables rules. Bridges, routes and iptables/nftables rules
//! belong to a network namespace, so the daemon's `docker0`, its NAT and
//! filter chains and its published ports' DNAT exist in the host's
//! namespace only, and nothing of this machine's own Docker networking is
//! touched (crates/cli/tests/it/remote_docker.rs checks this machine's
//! ruleset and links while it runs). The bridge's subnet and the address
//! pool are private /27s of 10.251.0.0/16 and 10.252.0.0/16 that no
//! interface of this machine uses, so neither clashes with this machine's
//! docker0 nor the testbed's LAN. The userland proxy stays as Docker sets
//! it by default (on): a published port's docker-proxy listens in the
//! namespace, and connections from another host take the DNAT rule in
//! PREROUTING, as seed 000's Docker was reached from outside
//! (docs/studies.md).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The private subnets of one host's daemon.
pub struct DockerNets {
    /// `--bip`: the bridge's address and prefix (`10.251.N.K/27`).
    pub bip: String,
    /// `--default-address-pool`'s base (`10.252.N.K/27`), for networks
    /// the daemon would make beyond its bridge.
    pub pool: String,
}

impl DockerNets {
    /// The text that starts every address of the bridge's /27 as rulesets
    /// print it (`10.251.N.`), for a search through a ruleset.
    pub fn bridge_prefix(&self) -> &str {
        let end = self.bip.rfind('.').map_or(0, |i| i + 1);
        &self.bip[..end]
    }

    /// The same for the address pool (`10.252.N.`).
    pub fn pool_prefix(&self) -> &str {
        let end = self.pool.rfind('.').map_or(0, |i| i + 1);
        &self.pool[..end]
    }
}

/// A host's own Docker daemon.
pub struct HostDocker {
    /// `unix://…` socket of the daemon.
    pub socket: PathBuf,
    /// The network namespace it runs in (its host's).
    pub ns: String,
    /// Its bridge's subnet and address pool.
    pub nets: DockerNets,
    root: PathBuf,
    cgroup_parent: String,
    daemon: Child,
}

impl HostDocker {
    /// `docker -H <this daemon>` with `args`: its output, or why not.
    pub fn docker(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new("docker")
            .arg("-H")
            .arg(format!("unix://{}", self.socket.display()))
            .args(args)
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// The daemon's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.root.join("dockerd.log")).unwrap_or_default()
    }

    /// Starts a daemon in network namespace `ns` with everything under
    /// `root`. `nsenter --net` rather than `ip netns exec`: the latter
    /// remounts /sys in a new mount namespace, which hides the cgroup
    /// hierarchies dockerd needs ("Devices cgroup isn't mounted").
    pub(super) fn start(ns: &str, root: &Path, nets: DockerNets) -> Result<HostDocker, String> {
        // The same storage driver as this machine's daemon: the one this
        // kernel and filesystem are known to take.
        let driver = Command::new("docker")
            .args(["info", "--format", "{{.Driver}}"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .filter(|d| !d.is_empty())
            .ok_or("this machine's Docker daemon does not answer")?;
        std::fs::create_dir_all(root.join("data")).map_err(|e| e.to_string())?;
        std::fs::create_dir_all(root.join("exec")).map_err(|e| e.to_string())?;
        // Its own (empty) configuration, not /etc/docker/daemon.json.
        std::fs::write(root.join("daemon.json"), "{}").map_err(|e| e.to_string())?;
        let socket = root.join("docker.sock");
        let cgroup_parent = format!("/tare-test-{ns}");
        let r = |p: &str| root.join(p).display().to_string();
        let daemon = Command::new("nsenter")
            .arg(format!("--net=/var/run/netns/{ns}"))
            .arg("dockerd")
            .args(["--config-file", &r("daemon.json")])
            .args(["--data-root", &r("data"), "--exec-root", &r("exec")])
            .args(["-H", &format!("unix://{}", socket.display())])
            .args(["--pidfile", &r("docker.pid")])
            .args(["--bip", &nets.bip])
            .args([
                "--default-address-pool",
                &format!("base={},size=28", nets.pool),
            ])
            .args(["--storage-driver", &driver])
            .args(["--cgroup-parent", &cgroup_parent])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(
                std::fs::File::create(root.join("dockerd.log"))
                    .map(Stdio::from)
                    .unwrap_or(Stdio::null()),
            )
            .spawn()
            .map_err(|e| format!("dockerd: {e}"))?;
        let mut d = HostDocker {
            socket,
            ns: ns.to_string(),
            nets,
            root: root.to_path_buf(),
            cgroup_parent,
            daemon,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while d
            .docker(&["version", "--format", "{{.Server.Version}}"])
            .is_err()
        {
            if Instant::now() > deadline || !matches!(d.daemon.try_wait(), Ok(None)) {
                let log = d.log();
                let last = log.lines().last().unwrap_or("").to_string();
                d.stop();
                return Err(format!("the host's dockerd did not answer in 60 s: {last}"));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(d)
    }

    /// Removes its containers, stops it (SIGTERM, then SIGKILL after 20
    /// s), unmounts what it left mounted, removes its directories and
    /// cgroups. Its bridge and rules go with the namespace, deleted after.
    pub(super) fn stop(&mut self) {
        if let Ok(ids) = self.docker(&["ps", "-aq"]) {
            for id in ids.split_whitespace() {
                let _ = self.docker(&["rm", "-f", id]);
            }
        }
        // SAFETY: kill(2) of the daemon this testbed started.
        unsafe { libc::kill(self.daemon.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(20);
        while matches!(self.daemon.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
        let mut under: Vec<&str> = mounts
            .lines()
            .filter_map(|l| l.split(' ').nth(1))
            .filter(|m| Path::new(m).starts_with(&self.root))
            .collect();
        under.sort_by_key(|m| std::cmp::Reverse(m.len()));
        for m in under {
            let _ = Command::new("umount").args(["-l", m]).status();
        }
        let _ = std::fs::remove_dir_all(&self.root);
        // Its cgroup parent, in every hierarchy (v1) or the one (v2).
        if let Ok(hier) = std::fs::read_dir("/sys/fs/cgroup") {
            for h in hier.flatten() {
                let _ =
                    std::fs::remove_dir(h.path().join(self.cgroup_parent.trim_start_matches('/')));
            }
        }
        let _ = std::fs::remove_dir(
            Path::new("/sys/fs/cgroup").join(self.cgroup_parent.trim_start_matches('/')),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::DockerNets;

    #[test]
    fn a_ruleset_is_searched_for_the_subnets_third_octet_and_dot() {
        let n = DockerNets {
            bip: "10.251.7.33/27".into(),
            pool: "10.252.7.32/27".into(),
        };
        assert_eq!(n.bridge_prefix(), "10.251.7.");
        assert_eq!(n.pool_prefix(), "10.252.7.");
    }
}
