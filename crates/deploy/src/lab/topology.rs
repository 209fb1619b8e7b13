//! Building the four lab topologies step by step, remembering every step so
//! that a failure halfway, `teardown` and `Drop` all undo exactly what was
//! made, newest first.

use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant};

use super::addressing::Block;
use super::command;
use super::delay::{self, DelayLine, DelayMechanism};
use super::naming::{LinkRole, Names};
use super::{nat, LabError, LabKind};

/// One thing a lab network made, and how to remove it.
#[derive(Debug)]
pub(crate) enum Made {
    Netns(String),
    /// A host-side link; deleting one end of a veth deletes its peer.
    Link(String),
    Table(String),
    /// iptables arguments that delete the forward accept rule.
    ForwardRule(Vec<String>),
    DelayLine(DelayLine),
}

impl Made {
    pub(crate) fn undo(self) -> Result<(), LabError> {
        match self {
            Made::DelayLine(mut line) => line.stop(),
            Made::Netns(name) => ip(&["netns", "delete", &name]),
            Made::Link(name) => ip(&["link", "delete", &name]),
            Made::Table(name) => nat::delete_table(&name),
            Made::ForwardRule(args) => nat::run_iptables(&args),
        }
    }

    pub(crate) fn describe(&self) -> String {
        match self {
            Made::Netns(name) => format!("netns {name}"),
            Made::Link(name) => format!("link {name}"),
            Made::Table(name) => format!("nft table ip {name}"),
            Made::ForwardRule(args) => format!("iptables rule {}", args[2..].join(" ")),
            Made::DelayLine(line) => line.describe(),
        }
    }
}

/// Removes everything in `made`, newest first, trying every step.
pub(crate) fn undo_all(made: &mut Vec<Made>) -> Result<(), LabError> {
    let mut failures = Vec::new();
    while let Some(step) = made.pop() {
        let what = step.describe();
        if let Err(e) = step.undo() {
            failures.push(format!("{what}: {e}"));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(LabError::Teardown(failures))
    }
}

/// Where the generator and the server end up.
pub(crate) struct Layout {
    pub(crate) server: Ipv4Addr,
    /// The address the generator connects to.
    pub(crate) front: Ipv4Addr,
    pub(crate) client_netns: Option<String>,
    pub(crate) delay: Option<DelayMechanism>,
}

/// Builds `kind` into `made`. On error, `made` holds what must be undone.
pub(crate) fn build(
    kind: LabKind,
    names: &Names,
    block: Block,
    netem: Option<Duration>,
    made: &mut Vec<Made>,
) -> Result<Layout, LabError> {
    let srv_ns = names.server_netns();
    let host_end = names.link(LinkRole::ServerHost);
    let inside = names.link(LinkRole::ServerInside);
    let (gateway, server) = (block.host(1), block.host(2));

    netns(&srv_ns, made)?;
    ip(&[
        "link", "add", &host_end, "type", "veth", "peer", "name", &inside, "netns", &srv_ns,
    ])?;
    made.push(Made::Link(host_end.clone()));

    let bridge = names.link(LinkRole::Bridge);
    let prefix = if kind == LabKind::Veth {
        // Point to point: a /30 holds exactly the two ends.
        ip(&["addr", "add", &format!("{gateway}/30"), "dev", &host_end])?;
        30
    } else {
        add_bridge(&bridge, gateway, 28, made)?;
        ip(&["link", "set", &host_end, "master", &bridge])?;
        28
    };
    ip(&["link", "set", &host_end, "up"])?;
    inside_up(&srv_ns, &inside, server, prefix, gateway)?;

    let mut layout = Layout {
        server,
        front: server,
        client_netns: None,
        delay: None,
    };
    if let Some(delay) = netem {
        let tap = names.link(LinkRole::DelayTap);
        let (mechanism, line) = delay::inject(&srv_ns, &inside, &tap, delay)?;
        made.extend(line.map(Made::DelayLine));
        layout.delay = Some(mechanism);
    }

    match kind {
        LabKind::Veth | LabKind::Bridge => {}
        LabKind::Nat => {
            // Loopback sources may only leave through a device with
            // route_localnet (ip-sysctl.rst); the setting dies with the bridge.
            set_conf(&bridge, "route_localnet")?;
            let front = block.loopback_front();
            load_table(
                names,
                &nat::loopback_dnat(&names.table(), front, server, &bridge),
                made,
            )?;
            layout.front = front;
        }
        LabKind::Client => {
            let (front, cli_ns) = client_side(names, block, server, &bridge, made)?;
            layout.front = front;
            layout.client_netns = Some(cli_ns);
        }
    }
    wait_up(&host_end)?;
    Ok(layout)
}

/// The client's side of `lab-client`: its own namespace on a second
/// subnet of the bridge, reaching the server through the host's DNAT
/// (`server` at the bridge's address on that subnet). Returns that
/// address (the load's front) and the client's namespace.
fn client_side(
    names: &Names,
    block: Block,
    server: Ipv4Addr,
    bridge: &str,
    made: &mut Vec<Made>,
) -> Result<(Ipv4Addr, String), LabError> {
    let (lan_gw, client) = (block.host(17), block.host(18));
    let cli_ns = names.client_netns();
    let cli_host = names.link(LinkRole::ClientHost);
    let cli_inside = names.link(LinkRole::ClientInside);
    netns(&cli_ns, made)?;
    ip(&[
        "link",
        "add",
        &cli_host,
        "type",
        "veth",
        "peer",
        "name",
        &cli_inside,
        "netns",
        &cli_ns,
    ])?;
    made.push(Made::Link(cli_host.clone()));
    ip(&["addr", "add", &format!("{lan_gw}/28"), "dev", bridge])?;
    ip(&["link", "set", &cli_host, "master", bridge])?;
    ip(&["link", "set", &cli_host, "up"])?;
    inside_up(&cli_ns, &cli_inside, client, 28, lan_gw)?;
    // Per-device forwarding, so the host forwards between the two
    // subnets even where net.ipv4.ip_forward is 0; it dies with the bridge.
    set_conf(bridge, "forwarding")?;
    load_table(
        names,
        &nat::lan_dnat(&names.table(), lan_gw, server, bridge),
        made,
    )?;
    if let Some(delete) = nat::open_forward(bridge, &names.table())? {
        made.push(Made::ForwardRule(delete));
    }
    wait_up(&cli_host)?;
    Ok((lan_gw, cli_ns))
}

/// Adds the bridge `bridge` (no spanning tree, no forwarding delay: a
/// port forwards at once) with the host's address `gateway/prefix` on it,
/// up, noted in `made` for teardown.
pub(super) fn add_bridge(
    bridge: &str,
    gateway: Ipv4Addr,
    prefix: u8,
    made: &mut Vec<Made>,
) -> Result<(), LabError> {
    ip(&[
        "link",
        "add",
        bridge,
        "type",
        "bridge",
        "stp_state",
        "0",
        "forward_delay",
        "0",
    ])?;
    made.push(Made::Link(bridge.to_string()));
    ip(&["addr", "add", &format!("{gateway}/{prefix}"), "dev", bridge])?;
    ip(&["link", "set", bridge, "up"])
}

pub(super) fn ip(args: &[&str]) -> Result<(), LabError> {
    command::run("ip", args).map(drop)
}

fn netns(name: &str, made: &mut Vec<Made>) -> Result<(), LabError> {
    ip(&["netns", "add", name])?;
    made.push(Made::Netns(name.to_string()));
    ip(&["-n", name, "link", "set", "lo", "up"])
}

/// Address, link up and default route of a namespace's end of a veth.
fn inside_up(
    ns: &str,
    link: &str,
    addr: Ipv4Addr,
    prefix: u8,
    gateway: Ipv4Addr,
) -> Result<(), LabError> {
    ip(&[
        "-n",
        ns,
        "addr",
        "add",
        &format!("{addr}/{prefix}"),
        "dev",
        link,
    ])?;
    ip(&["-n", ns, "link", "set", link, "up"])?;
    ip(&[
        "-n",
        ns,
        "route",
        "add",
        "default",
        "via",
        &gateway.to_string(),
    ])
}

fn load_table(names: &Names, ruleset: &str, made: &mut Vec<Made>) -> Result<(), LabError> {
    nat::load(ruleset)?;
    made.push(Made::Table(names.table()));
    Ok(())
}

/// Sets a per-device IPv4 setting of a host-side link to 1.
pub(super) fn set_conf(link: &str, key: &str) -> Result<(), LabError> {
    let path = Path::new("/proc/sys/net/ipv4/conf").join(link).join(key);
    std::fs::write(&path, "1").map_err(|source| LabError::Io {
        what: format!("writing 1 to {}", path.display()),
        source,
    })
}

/// The kernel reports carrier asynchronously (linkwatch batches events for up
/// to a second, net/core/link_watch.c), so wait until the host end is up
/// before handing the network out.
fn wait_up(link: &str) -> Result<(), LabError> {
    let path = Path::new("/sys/class/net").join(link).join("operstate");
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let state = std::fs::read_to_string(&path).unwrap_or_default();
        if state.trim() == "up" {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(LabError::Io {
                what: format!("{link} is still {:?} after 3 s", state.trim()),
                source: std::io::Error::from(std::io::ErrorKind::TimedOut),
            });
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
