//! Docker placements on a remote host (docs/remote.md), with a network namespace
//! on this machine standing for the host and its own Docker daemon
//! standing for that host's Docker Engine (`tare_testbed::ssh_hosts`,
//! `HostSpec::docker`: a second dockerd in the namespace with its own
//! bridge and iptables rules there, reached by the host's ssh sessions
//! through `DOCKER_HOST`). `tare run` puts `tare serve` in `docker-host`,
//! `docker-publish` and `docker-bridge` on that host:
//!
//! - every container is that daemon's, not this machine's; `docker-host`
//!   lives in the host's network, `docker-publish` on the daemon's bridge
//!   with its port published on the host's address;
//! - load from here reaches the published port through the daemon's DNAT
//!   rule in the host's namespace (its conntrack entries: from this
//!   machine to the host's address, answered from the bridge's subnet);
//! - both are monitored there and have their facts;
//! - `docker-bridge` is refused (another host cannot reach a bridge IP);
//! - this machine's own ruleset (`iptables-save`, `nft list ruleset`), its
//!   links and its docker0 never show the daemon's bridge, its subnets or
//!   its DNAT while the run lasts, and are as they were after it;
//! - nothing is left on the host's daemon or in the host's directory, and
//!   the namespace (with the daemon's bridge and rules) is gone after the
//!   testbed drops, which it does even when an assertion fails.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tare_testbed::ssh_hosts::{HostSpec, SshHosts};

const TARE: &str = env!("CARGO_BIN_EXE_tare");

const BODY: &str = r#"
[target]
kind = "tare-serve"
host = "dk"
[factors]
placement = ["docker-host", "docker-publish", "docker-bridge"]
[load]
connections = 4
threads = 1
duration = "1s"
warmup = "200ms"
[trials]
count = 1
"#;

/// What a container was, asked while the run lasted.
struct Seen {
    mode: String,
    ports: String,
    on_this_machine: bool,
}

/// What this machine's own networking shows: ruleset lines and link names.
struct Machine {
    rules: BTreeSet<String>,
    links: BTreeSet<String>,
    docker0: String,
}

impl Machine {
    fn read() -> Machine {
        let out = |cmd: &[&str]| {
            Command::new(cmd[0])
                .args(&cmd[1..])
                .stderr(Stdio::null())
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default()
        };
        // Counters and comments change on their own; the rules do not.
        let rules = out(&["iptables-save"])
            .lines()
            .chain(out(&["nft", "list", "ruleset"]).lines())
            .filter(|l| !l.starts_with('#'))
            .map(|l| match l.find(" [") {
                Some(i) if l.starts_with(':') => l[..i].to_string(),
                _ => l.to_string(),
            })
            .collect();
        let links = out(&["ip", "-o", "link"])
            .lines()
            .filter_map(|l| l.split(": ").nth(1))
            .map(|n| n.split('@').next().unwrap_or(n).to_string())
            .collect();
        let docker0 = out(&["ip", "-4", "-o", "addr", "show", "docker0"]);
        Machine {
            rules,
            links,
            docker0,
        }
    }

    /// Its ruleset lines that mention any of `marks`.
    fn mentioning(&self, marks: &[String]) -> Vec<String> {
        self.rules
            .iter()
            .filter(|l| marks.iter().any(|m| l.contains(m.as_str())))
            .cloned()
            .collect()
    }
}

#[test]
fn docker_placements_run_on_the_remote_hosts_own_daemon_and_bridge() {
    let here = Command::new("docker")
        .args(["info", "--format", "{{.Driver}}"])
        .output();
    if !here.is_ok_and(|o| o.status.success()) {
        eprintln!("skipping: this machine's Docker daemon does not answer");
        return;
    }
    let before = Machine::read();
    let hosts = SshHosts::start(&[HostSpec {
        name: "dk",
        bare_path: false,
        docker: true,
    }]);
    let dk = &hosts.dockers[0].1;
    let (_, dk_addr) = hosts.host("dk");
    let dk_addr = dk_addr.to_string();
    let dnat_to = format!("{dk_addr}/32");
    // What only the daemon's networking in the namespace mentions.
    let ours = [
        dk.nets.bridge_prefix().to_string(),
        dk.nets.pool_prefix().to_string(),
        dnat_to.clone(),
    ];
    // The namespace holds the daemon's bridge and NAT, as the daemon made
    // them (the search below can find what it looks for).
    let ns_rules = hosts.run_in("dk", &["iptables-save"]).unwrap();
    assert!(
        ns_rules.contains(&format!("-A POSTROUTING -s {}", dk.nets.bridge_prefix())),
        "{ns_rules}\n{}",
        dk.log()
    );
    let ns_links = hosts.run_in("dk", &["ip", "-o", "link"]).unwrap();
    assert!(ns_links.contains(" docker0:"), "{ns_links}");

    let work = hosts.dir.join("work");
    let host_dir = work.join("on-dk");
    std::fs::create_dir_all(&host_dir).unwrap();
    let exp = work.join("docker.toml");
    std::fs::write(&exp, format!("{}{BODY}", hosts.toml("dk", &host_dir))).unwrap();
    let out_dir = work.join("run");
    let mut child = Command::new(TARE)
        .args([
            "run",
            exp.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
            "-q",
        ])
        .current_dir(&work)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // While the run lasts: each container on the host's daemon, the
    // namespace's DNAT and conntrack entries, the veths on its bridge, and
    // what this machine's own networking shows.
    let deadline = Instant::now() + Duration::from_secs(240);
    let mut seen: BTreeMap<String, Seen> = BTreeMap::new();
    let mut dnat = BTreeSet::new();
    let mut natted = BTreeSet::new();
    let mut bridge_veths = BTreeSet::new();
    let mut leaked = BTreeSet::new();
    let mut machine_links = BTreeSet::new();
    while Instant::now() < deadline && child.try_wait().unwrap().is_none() {
        for id in dk
            .docker(&["ps", "-q", "--no-trunc"])
            .unwrap_or_default()
            .split_whitespace()
        {
            if seen.contains_key(id) {
                continue;
            }
            // One inspect for both: a container may go between two.
            let both = dk
                .docker(&[
                    "inspect",
                    "-f",
                    "{{.HostConfig.NetworkMode}}|{{json .NetworkSettings.Ports}}",
                    id,
                ])
                .unwrap_or_default();
            let Some((mode, ports)) = both.trim().split_once('|') else {
                // Gone before it was asked (an image build's step).
                continue;
            };
            let (mode, ports) = (mode.to_string(), ports.to_string());
            let local = Command::new("docker").args(["inspect", id]).output();
            seen.insert(
                id.to_string(),
                Seen {
                    mode,
                    ports,
                    on_this_machine: local.is_ok_and(|o| o.status.success()),
                },
            );
        }
        let nat = hosts
            .run_in("dk", &["iptables-save", "-t", "nat"])
            .unwrap_or_default();
        dnat.extend(
            nat.lines()
                .filter(|l| l.contains("DNAT") && l.contains(&dnat_to))
                .map(String::from),
        );
        natted.extend(conntrack_natted(&hosts, &dk_addr, dk.nets.bridge_prefix()));
        let on_bridge = hosts
            .run_in("dk", &["ip", "-o", "link", "show", "master", "docker0"])
            .unwrap_or_default();
        bridge_veths.extend(
            on_bridge
                .lines()
                .filter_map(|l| l.split(": ").nth(1))
                .map(|n| n.split('@').next().unwrap_or(n).to_string()),
        );
        let m = Machine::read();
        leaked.extend(m.mentioning(&ours));
        machine_links.extend(m.links);
        std::thread::sleep(Duration::from_millis(250));
    }
    let err = crate::support::wait_stderr(&mut child, Duration::from_secs(300));
    // Entries for closed connections stay (TIME_WAIT) after the run.
    natted.extend(conntrack_natted(&hosts, &dk_addr, dk.nets.bridge_prefix()));

    eprintln!(
        "containers {}, DNAT rules {dnat:?}, connections through it {}, veths on the bridge {bridge_veths:?}",
        seen.len(),
        natted.len()
    );
    // The containers: the host's daemon's, none this machine's.
    let modes: BTreeSet<&str> = seen.values().map(|s| s.mode.as_str()).collect();
    assert!(modes.contains("host"), "{modes:?}: {err}");
    assert!(
        modes.contains("default") || modes.contains("bridge"),
        "{modes:?}: {err}"
    );
    for (id, s) in &seen {
        assert!(!s.on_this_machine, "{id} is this machine's daemon's too");
    }
    // Short-lived containers (a version probe) publish nothing; the
    // server's container publishes on the host's address only.
    let published: Vec<&Seen> = seen
        .values()
        .filter(|s| s.ports.contains("HostIp"))
        .collect();
    assert!(
        !published.is_empty() && published.iter().all(|s| s.ports.contains(&dk_addr)),
        "published on the host's address: {:?}",
        published.iter().map(|s| &s.ports).collect::<Vec<_>>()
    );

    // docker-publish reached through the daemon's DNAT in the namespace.
    assert!(
        !dnat.is_empty(),
        "no DNAT to {dnat_to} in the namespace: {err}"
    );
    assert!(
        natted.len() >= 4,
        "connections from {} to {dk_addr} answered from {}0/27 (DNAT): {natted:?}\n{dnat:?}\n{err}",
        hosts.local,
        dk.nets.bridge_prefix()
    );
    // Its container's veth is on the namespace's bridge, not this machine's.
    assert!(
        !bridge_veths.is_empty(),
        "no veth on the daemon's bridge: {err}"
    );
    let on_machine: Vec<&String> = bridge_veths.intersection(&machine_links).collect();
    assert!(on_machine.is_empty(), "{on_machine:?} on this machine");
    // This machine's own networking never showed any of it.
    assert!(leaked.is_empty(), "on this machine's ruleset: {leaked:?}");

    // docker-bridge refused: a bridge IP is the host's alone.
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("plan.json")).unwrap()).unwrap();
    let refused: Vec<&str> = plan["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["factors"]["placement"] == "docker-bridge")
        .filter_map(|c| c["skipped"].as_str())
        .collect();
    assert_eq!(refused.len(), 1, "{plan}");
    assert!(
        refused[0].contains("docker-bridge is not reachable from another host")
            && refused[0].contains("docker-publish"),
        "{}",
        refused[0]
    );

    // One trial each for docker-host and docker-publish, monitored there.
    let recs: Vec<serde_json::Value> = std::fs::read_to_string(out_dir.join("trials.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(recs.len(), 2, "{err}");
    for r in &recs {
        assert!(r["result"]["requests"].as_u64().unwrap_or(0) > 0, "{r}");
        assert_eq!(r["result"]["errors"]["connect"], 0, "{r}");
        assert_eq!(r["monitor"]["host"], "dk", "{r}");
        assert!(
            r["monitor"]["per_request"]["server_us"]
                .as_f64()
                .unwrap_or(0.0)
                > 0.0,
            "the container's CPU, read from its cgroup on the host: {r}"
        );
    }
    // Facts from the host, for both cells.
    let facts = std::fs::read_to_string(out_dir.join("facts.json")).unwrap();
    for p in ["docker-host", "docker-publish"] {
        assert!(facts.contains(p), "{p}: {facts}");
    }

    // Nothing left: no container on the host's daemon, nothing in the
    // host's directory, no DNAT rule for the host's address in the
    // namespace.
    assert_eq!(dk.docker(&["ps", "-aq"]).unwrap().trim(), "", "{err}");
    assert!(left_in(&host_dir).is_empty(), "{:?}", left_in(&host_dir));
    let nat = hosts.run_in("dk", &["iptables-save", "-t", "nat"]).unwrap();
    assert!(!nat.contains(&dnat_to), "{nat}");
    let (dk_ns, _) = hosts.host("dk");
    let dk_ns = dk_ns.to_string();
    // The testbed's own veth to the LAN is `sshr<pid>` (ssh_hosts).
    let lan_veth = format!("sshr{:05}", std::process::id() % 100_000);
    drop(hosts);
    // The namespace (with the daemon's bridge and rules in it) is gone,
    // and this machine's networking is as it was.
    let netns = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&netns.stdout).contains(&dk_ns),
        "namespace {dk_ns} left"
    );
    // A namespace's devices go with it asynchronously (the kernel's
    // cleanup_net): its veths' peers here may take a moment.
    let mut after = Machine::read();
    let deadline = Instant::now() + Duration::from_secs(20);
    while after
        .links
        .iter()
        .any(|l| *l == lan_veth || bridge_veths.contains(l))
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(200));
        after = Machine::read();
    }
    assert_eq!(after.docker0, before.docker0);
    let new_rules: Vec<&String> = after.rules.difference(&before.rules).collect();
    let ours_new: Vec<&&String> = new_rules
        .iter()
        .filter(|l| ours.iter().any(|m| l.contains(m.as_str())))
        .collect();
    assert!(ours_new.is_empty(), "{ours_new:?}");
    let new_links: Vec<&String> = after.links.difference(&before.links).collect();
    let ours_links: Vec<&&String> = new_links
        .iter()
        .filter(|l| bridge_veths.contains(**l) || ***l == lan_veth)
        .collect();
    assert!(ours_links.is_empty(), "{ours_links:?}");
}

/// The namespace's conntrack entries of connections from this machine to
/// the host's address whose replies come from the daemon's bridge: load
/// that took the DNAT rule. One string per connection (its source port).
fn conntrack_natted(hosts: &SshHosts, addr: &str, bridge_prefix: &str) -> Vec<String> {
    let table = hosts
        .run_in("dk", &["cat", "/proc/net/nf_conntrack"])
        .unwrap_or_default();
    table
        .lines()
        .filter(|l| {
            l.contains(&format!("src={} dst={addr} ", hosts.local))
                && l.contains(&format!(" src={bridge_prefix}"))
        })
        .filter_map(|l| {
            l.split_whitespace()
                .find(|w| w.starts_with("sport="))
                .map(String::from)
        })
        .collect()
}

fn left_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path().display().to_string())
                .collect()
        })
        .unwrap_or_default()
}
