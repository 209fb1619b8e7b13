//! The nftables rules of [`LabKind::Nat`] and [`LabKind::Client`], and the hole a lab bridge
//! needs in a forward chain whose policy is drop (Docker sets one).
//!
//! `LabKind::Nat` reproduces Docker's published port with `--userland-proxy=false`
//! reached from the host on loopback (libnetwork's iptables rules: a nat
//! OUTPUT DNAT, `route_localnet=1` on the bridge, and a MASQUERADE of
//! loopback sources leaving through the bridge). The only difference: the
//! front is 127.213.x.y, a loopback address of this lab alone, with every TCP
//! port forwarded unchanged, so a lab net takes no port on 127.0.0.1.
//!
//! `LabKind::Client` reproduces a LAN client reaching a published port: a
//! PREROUTING DNAT of the host's address on the client's subnet, then routed
//! (forwarded) to the server, with no masquerade, so the server sees the
//! client's own address, as a container sees a LAN client's.

use std::net::Ipv4Addr;

use super::command;
use super::LabError;

/// nft priorities of Docker's and iptables-nft's nat chains (nft(8): "dstnat"
/// is -100, "srcnat" 100), spelled as numbers for older nft versions.
const DSTNAT: i32 = -100;
const SRCNAT: i32 = 100;

/// The `LabKind::Nat` table: loopback front → server, as libnetwork does it.
pub(crate) fn loopback_dnat(
    table: &str,
    front: Ipv4Addr,
    server: Ipv4Addr,
    bridge: &str,
) -> String {
    format!(
        "table ip {table} {{
  chain output {{
    type nat hook output priority {DSTNAT}; policy accept;
    ip daddr {front} meta l4proto {{ tcp, udp }} dnat to {server}
  }}
  chain postrouting {{
    type nat hook postrouting priority {SRCNAT}; policy accept;
    oifname \"{bridge}\" ip saddr 127.0.0.0/8 ct status dnat masquerade
  }}
}}
"
    )
}

/// The `LabKind::Client` table: the host's address on the bridge → server, for
/// packets arriving from the bridge (the LAN side).
pub(crate) fn lan_dnat(table: &str, front: Ipv4Addr, server: Ipv4Addr, bridge: &str) -> String {
    format!(
        "table ip {table} {{
  chain prerouting {{
    type nat hook prerouting priority {DSTNAT}; policy accept;
    iifname \"{bridge}\" ip daddr {front} meta l4proto {{ tcp, udp }} dnat to {server}
  }}
}}
"
    )
}

pub(crate) fn load(ruleset: &str) -> Result<(), LabError> {
    command::run_with_input("nft", &["-f", "-"], Some(ruleset)).map(drop)
}

pub(crate) fn delete_table(table: &str) -> Result<(), LabError> {
    command::run("nft", &["delete", "table", "ip", table]).map(drop)
}

/// Names of nftables tables as `(family, name)`.
pub(crate) fn tables() -> Result<Vec<(String, String)>, LabError> {
    Ok(command::run("nft", &["list", "tables"])?
        .lines()
        .filter_map(|line| {
            let mut w = line.split_whitespace();
            (w.next()? == "table").then_some(())?;
            Some((w.next()?.to_string(), w.next()?.to_string()))
        })
        .collect())
}

/// The chain Docker reserves for its users' rules, evaluated first in its
/// FORWARD chain (docs.docker.com, "Docker and iptables": DOCKER-USER).
const DOCKER_USER: &str = "DOCKER-USER";

/// An accept rule for traffic forwarded bridge → bridge, when some forward
/// chain would drop it. Returns the iptables arguments that delete it again,
/// or `None` if nothing drops forwarded traffic.
///
/// An accept in tare's own nftables table would not help: an accept verdict
/// ends only its own base chain, and the packet still meets the drop policy
/// in Docker's (nft(8), "VERDICT STATEMENT"). So the hole goes where Docker
/// tells users to put theirs, with iptables (the tool that owns that table),
/// commented with tare's table name so `cleanup_all` can find it.
pub(crate) fn open_forward(bridge: &str, comment: &str) -> Result<Option<Vec<String>>, LabError> {
    let chains = command::run("nft", &["-j", "list", "chains"])?;
    let mut blocking = forward_blockers(&chains);
    // iptables' own FORWARD chain is asked through iptables, which sees it
    // whichever backend (nft or legacy) holds it.
    let iptables_drops = command::locate("iptables").is_some()
        && command::run("iptables", &["-w", "-S", "FORWARD"])?
            .lines()
            .any(|l| l.trim() == "-P FORWARD DROP");
    if iptables_drops {
        blocking.retain(|c| c != "ip filter FORWARD");
    }
    if !blocking.is_empty() {
        return Err(LabError::ForwardBlocked {
            chain: blocking.join(", "),
        });
    }
    if !iptables_drops {
        return Ok(None);
    }
    if command::run("iptables", &["-w", "-S", DOCKER_USER]).is_err() {
        return Err(LabError::ForwardBlocked {
            chain: "iptables FORWARD (policy DROP)".into(),
        });
    }
    let spec: Vec<String> = [
        DOCKER_USER,
        "-i",
        bridge,
        "-o",
        bridge,
        "-m",
        "comment",
        "--comment",
        comment,
        "-j",
        "ACCEPT",
    ]
    .map(String::from)
    .to_vec();
    let mut insert = vec!["-w".to_string(), "-I".to_string()];
    insert.extend(spec.iter().cloned());
    run_iptables(&insert)?;
    let mut delete = vec!["-w".to_string(), "-D".to_string()];
    delete.extend(spec);
    Ok(Some(delete))
}

pub(crate) fn run_iptables(args: &[String]) -> Result<(), LabError> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    command::run("iptables", &args).map(drop)
}

/// Tare's rules in DOCKER-USER, as `(comment, iptables arguments deleting it)`.
pub(crate) fn tare_forward_rules() -> Result<Vec<(String, Vec<String>)>, LabError> {
    if command::locate("iptables").is_none() {
        return Ok(Vec::new());
    }
    let listing = match command::run("iptables", &["-w", "-S", DOCKER_USER]) {
        Ok(text) => text,
        // No DOCKER-USER chain (no Docker): nothing of ours can be there.
        Err(LabError::Command { .. }) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    Ok(listing.lines().filter_map(deletion_of).collect())
}

/// `-A DOCKER-USER … --comment tare_x … -j ACCEPT` → the same with `-D`.
fn deletion_of(line: &str) -> Option<(String, Vec<String>)> {
    let words: Vec<String> = line
        .split_whitespace()
        .map(|w| w.trim_matches('"').to_string())
        .collect();
    (words.first()? == "-A").then_some(())?;
    let at = words.iter().position(|w| w == "--comment")?;
    let comment = words.get(at + 1)?.clone();
    comment.starts_with("tare_").then_some(())?;
    let mut delete = vec!["-w".to_string(), "-D".to_string()];
    delete.extend(words.into_iter().skip(1));
    Some((comment, delete))
}

/// Forward-hook chains (ip and inet) whose policy is drop, as
/// "nftables chain FAMILY TABLE NAME".
fn forward_blockers(json: &str) -> Vec<String> {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(json) else {
        return Vec::new();
    };
    let items = value["nftables"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .filter_map(|item| item.get("chain"))
        .filter_map(|chain| {
            let field = |k: &str| chain[k].as_str().unwrap_or("").to_string();
            let family = field("family");
            let drops = (family == "ip" || family == "inet")
                && field("hook") == "forward"
                && field("policy") == "drop";
            drops.then(|| format!("{family} {} {}", field("table"), field("name")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forward_chains_with_drop_policy_are_found() {
        let json = r#"{"nftables": [{"metainfo": {"version": "1.0.6"}},
          {"chain": {"family": "ip", "table": "nat", "name": "PREROUTING", "handle": 1, "type": "nat", "hook": "prerouting", "prio": -100, "policy": "accept"}},
          {"chain": {"family": "ip", "table": "filter", "name": "FORWARD", "handle": 2, "type": "filter", "hook": "forward", "prio": 0, "policy": "drop"}},
          {"chain": {"family": "ip", "table": "filter", "name": "DOCKER-USER", "handle": 3}}]}"#;
        assert_eq!(
            forward_blockers(json),
            vec!["ip filter FORWARD".to_string()]
        );
        assert!(forward_blockers(r#"{"nftables": []}"#).is_empty());
    }

    #[test]
    fn only_tare_commented_rules_are_deleted() {
        let ours = "-A DOCKER-USER -i tr0a1b2c3dbr -o tr0a1b2c3dbr -m comment --comment tare_r_0a1b2c3d -j ACCEPT";
        let (comment, args) = deletion_of(ours).unwrap();
        assert_eq!(comment, "tare_r_0a1b2c3d");
        assert_eq!(args[..4], ["-w", "-D", "DOCKER-USER", "-i"]);
        assert_eq!(args.last().unwrap(), "ACCEPT");
        assert!(deletion_of("-A DOCKER-USER -j RETURN").is_none());
        assert!(deletion_of("-A DOCKER-USER -m comment --comment \"mine\" -j DROP").is_none());
        assert!(deletion_of("-N DOCKER-USER").is_none());
    }

    #[test]
    fn rulesets_name_the_lab_devices_and_addresses() {
        let text = loopback_dnat(
            "tare_r_0a1b2c3d",
            Ipv4Addr::new(127, 213, 0, 1),
            Ipv4Addr::new(10, 213, 0, 2),
            "tr0a1b2c3dbr",
        );
        assert!(text.contains("table ip tare_r_0a1b2c3d"));
        assert!(text.contains("ip daddr 127.213.0.1 meta l4proto { tcp, udp } dnat to 10.213.0.2"));
        assert!(text.contains("oifname \"tr0a1b2c3dbr\" ip saddr 127.0.0.0/8"));
        let lan = lan_dnat(
            "t",
            Ipv4Addr::new(10, 213, 0, 17),
            Ipv4Addr::new(10, 213, 0, 2),
            "b",
        );
        assert!(lan.contains("hook prerouting"));
        assert!(lan.contains("iifname \"b\" ip daddr 10.213.0.17"));
    }
}
