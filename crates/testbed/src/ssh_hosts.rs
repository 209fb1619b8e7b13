//! Network namespaces standing for other machines, each running Debian's
//! OpenSSH server on its own address (remote-host tests; never a real
//! remote address). One "LAN" namespace holds a bridge; each host
//! namespace and this machine have a veth on it, in a /24 of 10.250.0.0/16
//! no interface here uses. Keys and known_hosts are generated in a temp
//! dir. Dropping it stops every sshd and removes the namespaces (and with
//! them every veth), even when the test failed.
//!
//! A host may have its own Docker daemon (`HostSpec::docker`,
//! [`HostDocker`]): a second `dockerd` in the host's network namespace,
//! with its own bridge and iptables rules there, and sshd's sessions get
//! `DOCKER_HOST` pointing at its socket. The agent's Docker calls on that
//! host then go to that daemon (tare and the docker CLI read
//! `DOCKER_HOST`), and its containers live in the host's network
//! namespace or on its bridge, as on another machine. The daemon, its
//! containers and directories are removed on drop, before the namespaces
//! (which take its bridge and rules with them).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod host_docker;

pub use host_docker::{DockerNets, HostDocker};

/// A host to start: its name, and whether its sessions get a PATH with
/// no tools in it (a host "without the needed tools").
pub struct HostSpec {
    pub name: &'static str,
    pub bare_path: bool,
    /// Its own Docker daemon (see the module's doc).
    pub docker: bool,
}

/// The hosts, their keys and their sshd processes.
pub struct SshHosts {
    pub dir: PathBuf,
    /// This machine's address on the LAN.
    pub local: String,
    /// The subnet prefix (`10.250.N`).
    pub prefix: String,
    /// Each host's name, namespace and address.
    pub hosts: Vec<(String, String, String)>,
    /// The client key the hosts accept, and the known_hosts file naming them.
    pub identity: PathBuf,
    pub known_hosts: PathBuf,
    /// Each host's own Docker daemon, by host name.
    pub dockers: Vec<(String, HostDocker)>,
    lan: String,
    sshd: Vec<Child>,
}

/// The LAN's /24, and the /24s its hosts' Docker daemons take their
/// bridges and pools from (`HostDocker`), all unused here.
fn free_subnet() -> usize {
    let used = String::from_utf8_lossy(
        &Command::new("ip")
            .args(["-4", "-o", "addr"])
            .output()
            .expect("ip")
            .stdout,
    )
    .into_owned();
    (0..250)
        .map(|i| (std::process::id() as usize + i) % 250 + 1)
        .find(|n| {
            ["10.250", "10.251", "10.252"]
                .iter()
                .all(|net| !used.contains(&format!("{net}.{n}.")))
        })
        .expect("a free /24 of 10.250.0.0/16")
}

fn sh(args: &[&str]) {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl SshHosts {
    /// Starts the hosts, each sshd answering before it returns.
    pub fn start(specs: &[HostSpec]) -> SshHosts {
        let id = format!("{:05}", std::process::id() % 100_000);
        let n = free_subnet();
        let prefix = format!("10.250.{n}");
        let dir = std::env::temp_dir().join(format!("sshhosts-{id}-{n}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let lan = format!("sshlan{id}");
        let mut me = SshHosts {
            dir: dir.clone(),
            local: format!("{prefix}.1"),
            prefix: prefix.clone(),
            hosts: Vec::new(),
            identity: dir.join("id"),
            known_hosts: dir.join("known_hosts"),
            dockers: Vec::new(),
            lan: lan.clone(),
            sshd: Vec::new(),
        };
        keygen(&me.identity);
        keygen(&dir.join("hostkey"));
        let host_pub = std::fs::read_to_string(dir.join("hostkey.pub")).unwrap();
        std::fs::copy(dir.join("id.pub"), dir.join("authorized_keys")).unwrap();
        std::fs::create_dir_all("/run/sshd").unwrap();

        me.lan_up(&id);
        let mut known = String::new();
        for (i, spec) in specs.iter().enumerate() {
            let addr = me.add_host(&id, n, i, spec);
            known.push_str(&format!("{addr} {host_pub}"));
        }
        std::fs::write(&me.known_hosts, known).unwrap();
        me.wait_for_sshd();
        me
    }

    /// The LAN namespace with its bridge, and this machine's veth on it
    /// at `local`.
    fn lan_up(&self, id: &str) {
        let lan = &self.lan;
        sh(&["ip", "netns", "add", lan]);
        sh(&["ip", "-n", lan, "link", "add", "br0", "type", "bridge"]);
        sh(&["ip", "-n", lan, "link", "set", "br0", "up"]);
        let root_if = format!("sshr{id}");
        sh(&[
            "ip", "link", "add", &root_if, "type", "veth", "peer", "name", "up0", "netns", lan,
        ]);
        sh(&["ip", "-n", lan, "link", "set", "up0", "master", "br0", "up"]);
        sh(&[
            "ip",
            "addr",
            "add",
            &format!("{}/24", self.local),
            "dev",
            &root_if,
        ]);
        sh(&["ip", "link", "set", &root_if, "up"]);
    }

    /// Host `i`: its namespace on the LAN, its Docker daemon if it asks
    /// for one, its sshd started. Returns its address.
    fn add_host(&mut self, id: &str, n: usize, i: usize, spec: &HostSpec) -> String {
        let ns = format!("sshh{id}-{i}");
        let addr = format!("{}.{}", self.prefix, 10 + i);
        self.host_net(&ns, &addr, i);
        let dir = self.dir.clone();
        let cfg = dir.join(format!("sshd-{i}.conf"));
        let mut text = format!(
            "ListenAddress {addr}\nPort 22\nHostKey {}\nAuthorizedKeysFile {}\nPidFile none\n\
             StrictModes no\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nUsePAM no\nClientAliveInterval 1\nClientAliveCountMax 3\n",
            dir.join("hostkey").display(),
            dir.join("authorized_keys").display(),
        );
        if spec.bare_path {
            text.push_str("SetEnv PATH=/var/empty\n");
        }
        let mut sshd = Command::new("ip");
        sshd.args(["netns", "exec", &ns]);
        if spec.docker {
            // Pushed before any assert: dropping `self` removes it.
            // A /27 each: up to eight Docker hosts per testbed.
            let nets = DockerNets {
                bip: format!("10.251.{n}.{}/27", 32 * (i % 8) + 1),
                pool: format!("10.252.{n}.{}/27", 32 * (i % 8)),
            };
            match HostDocker::start(&ns, &dir.join(format!("docker-{i}")), nets) {
                Ok(d) => {
                    text.push_str(&format!(
                        "SetEnv DOCKER_HOST=unix://{}\n",
                        d.socket.display()
                    ));
                    self.dockers.push((spec.name.to_string(), d));
                }
                Err(e) => {
                    self.hosts.push((spec.name.to_string(), ns, addr));
                    panic!("host {}: {e}", spec.name);
                }
            }
            // Sessions see the cgroup hierarchies (the monitor reads a
            // container's): the namespace's network, this mount namespace.
            sshd = Command::new("nsenter");
            sshd.arg(format!("--net=/var/run/netns/{ns}"));
        }
        std::fs::write(&cfg, text).unwrap();
        let child = sshd
            .args(["/usr/sbin/sshd", "-D", "-e", "-f"])
            .arg(&cfg)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(
                std::fs::File::create(dir.join(format!("sshd-{i}.log")))
                    .map(Stdio::from)
                    .unwrap_or(Stdio::null()),
            )
            .spawn()
            .expect("sshd");
        self.sshd.push(child);
        self.hosts.push((spec.name.to_string(), ns, addr.clone()));
        addr
    }

    /// Namespace `ns` with its veth `p{i}` on the LAN's bridge at `addr`.
    fn host_net(&self, ns: &str, addr: &str, i: usize) {
        let lan = &self.lan;
        sh(&["ip", "netns", "add", ns]);
        let port = format!("p{i}");
        sh(&[
            "ip", "-n", lan, "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns",
            ns,
        ]);
        sh(&["ip", "-n", lan, "link", "set", &port, "master", "br0", "up"]);
        sh(&[
            "ip",
            "-n",
            ns,
            "addr",
            "add",
            &format!("{addr}/24"),
            "dev",
            "eth0",
        ]);
        sh(&["ip", "-n", ns, "link", "set", "eth0", "up"]);
        sh(&["ip", "-n", ns, "link", "set", "lo", "up"]);
    }

    /// Waits (10 s at most) until every host's sshd accepts connections.
    fn wait_for_sshd(&self) {
        for (_, _, addr) in &self.hosts {
            let deadline = Instant::now() + Duration::from_secs(10);
            while std::net::TcpStream::connect_timeout(
                &format!("{addr}:22").parse().unwrap(),
                Duration::from_millis(200),
            )
            .is_err()
            {
                assert!(Instant::now() < deadline, "sshd on {addr} did not start");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// The namespace and address of host `name`.
    pub fn host(&self, name: &str) -> (&str, &str) {
        let (_, ns, addr) = self
            .hosts
            .iter()
            .find(|(n, _, _)| n == name)
            .unwrap_or_else(|| panic!("no host {name}"));
        (ns, addr)
    }

    /// `[hosts.NAME]` for an experiment file, with this testbed's keys;
    /// `dir` is the host's own directory (hosts share this filesystem).
    pub fn toml(&self, name: &str, dir: &Path) -> String {
        let (_, addr) = self.host(name);
        format!(
            "[hosts.{name}]\nssh = \"root@{addr}\"\nidentity = \"{}\"\nknown_hosts = \"{}\"\ndir = \"{}\"\n",
            self.identity.display(),
            self.known_hosts.display(),
            dir.display()
        )
    }

    /// Runs `args` in host `name`'s network namespace (this mount
    /// namespace, so /proc/net is the host's): its stdout, or why not.
    pub fn run_in(&self, name: &str, args: &[&str]) -> Result<String, String> {
        let (ns, _) = self.host(name);
        let out = Command::new("nsenter")
            .arg(format!("--net=/var/run/netns/{ns}"))
            .args(args)
            .output()
            .map_err(|e| format!("{args:?}: {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!(
                "{args:?}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    /// Cuts host `name` off the LAN (a machine that drops).
    pub fn drop_host(&self, name: &str) {
        let (ns, _) = self.host(name);
        sh(&["ip", "-n", ns, "link", "set", "eth0", "down"]);
    }

    /// Puts host `name` back on the LAN.
    pub fn raise_host(&self, name: &str) {
        let (ns, _) = self.host(name);
        sh(&["ip", "-n", ns, "link", "set", "eth0", "up"]);
    }
}

fn keygen(path: &Path) {
    sh(&[
        "ssh-keygen",
        "-q",
        "-t",
        "ed25519",
        "-N",
        "",
        "-C",
        "tare-test",
        "-f",
        path.to_str().unwrap(),
    ]);
}

impl Drop for SshHosts {
    fn drop(&mut self) {
        for c in &mut self.sshd {
            let _ = c.kill();
            let _ = c.wait();
        }
        // Each daemon before its namespace: its containers stopped and
        // removed by it, its mounts and directories after it.
        for (_, d) in &mut self.dockers {
            d.stop();
        }
        for (_, ns, _) in &self.hosts {
            // sshd's session processes live in the namespace too.
            let _ = Command::new("ip")
                .args(["netns", "pids", ns])
                .output()
                .map(|o| {
                    for pid in String::from_utf8_lossy(&o.stdout).split_whitespace() {
                        if let Ok(p) = pid.parse::<i32>() {
                            // SAFETY: kill(2) of a process in our own test namespace.
                            unsafe { libc::kill(p, libc::SIGKILL) };
                        }
                    }
                });
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        let _ = Command::new("ip")
            .args(["netns", "del", &self.lan])
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
