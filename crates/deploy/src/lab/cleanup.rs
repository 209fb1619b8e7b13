//! Removing what lab networks left behind (a SIGKILLed run, a leaked
//! `LabNet`), found by name alone, and nothing else.
//!
//! A resource is removed when its name is tare's (`naming`) and no live
//! process owns its lab network (`ownership`): `tare cleanup` run beside a
//! measuring `tare run` leaves that run's network alone. Networks this very
//! process created and leaked are removed too.

use super::naming::{self, Owned};
use super::{command, nat, ownership, LabError};

/// Removes every tare lab leftover: namespaces `tare-*`, links
/// `tr<id><role>`, nftables tables `tare_*` and tare's accept rules in
/// Docker's DOCKER-USER chain. Returns what it removed, one line each.
pub fn cleanup_all() -> Result<Vec<String>, LabError> {
    let mut removed = Vec::new();
    let mut failures = Vec::new();
    let mut ids = Vec::new();
    let mut attempt = |what: String, owner: Owned, result: &dyn Fn() -> Result<(), LabError>| {
        let id = match owner {
            Owned::No => return,
            Owned::Lab(id) if ownership::owned_elsewhere(&id) => return,
            Owned::Lab(id) => Some(id),
            Owned::Other => None,
        };
        match result() {
            Ok(()) => {
                removed.push(what);
                ids.extend(id);
            }
            Err(e) if already_gone(&e) => {}
            Err(e) => failures.push(format!("{what}: {e}")),
        }
    };

    // Rules and tables first: they name links that are about to go.
    for (comment, delete) in nat::tare_forward_rules()? {
        let what = format!("iptables rule {}", delete[2..].join(" "));
        attempt(what, naming::table_owner(&comment), &|| {
            nat::run_iptables(&delete)
        });
    }
    for (family, table) in nat::tables()? {
        let what = format!("nft table {family} {table}");
        attempt(what, naming::table_owner(&table), &|| {
            command::run("nft", &["delete", "table", &family, &table]).map(drop)
        });
    }
    // Host-side links: deleting a veth end removes its peer in a namespace.
    for link in links()? {
        let what = format!("link {link}");
        // A veth end may already be gone with its peer, earlier in this loop.
        attempt(what, naming::link_owner(&link), &|| {
            command::run("ip", &["link", "delete", &link]).map(drop)
        });
    }
    for ns in namespaces()? {
        let what = format!("netns {ns}");
        attempt(what, naming::netns_owner(&ns), &|| {
            command::run("ip", &["netns", "delete", &ns]).map(drop)
        });
    }

    for id in ids {
        ownership::release(&id);
    }
    if failures.is_empty() {
        Ok(removed)
    } else {
        Err(LabError::Teardown(failures))
    }
}

/// Link names in the host namespace (`ip -o link` prints `3: name@peer: …`).
fn links() -> Result<Vec<String>, LabError> {
    Ok(command::run("ip", &["-o", "link", "show"])?
        .lines()
        .filter_map(|line| {
            let name = line.split(':').nth(1)?.trim();
            Some(name.split('@').next()?.to_string())
        })
        .collect())
}

/// Named namespaces (`ip netns list` prints `name (id: 3)` or `name`).
fn namespaces() -> Result<Vec<String>, LabError> {
    Ok(command::run("ip", &["netns", "list"])?
        .lines()
        .filter_map(|line| line.split_whitespace().next().map(String::from))
        .collect())
}

/// A resource that vanished between listing and removal was not removed
/// here, and is no failure either: its owner tore it down meanwhile (and
/// only then released its lock), or a veth end went with its peer.
fn already_gone(e: &LabError) -> bool {
    matches!(e, LabError::Command { stderr, .. }
        if stderr.contains("No such file or directory")
            || stderr.contains("Cannot find device")
            || stderr.contains("does a matching rule exist"))
}
