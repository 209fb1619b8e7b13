//! Names of everything a lab network creates, and reading them back.
//!
//! The names are the only record a SIGKILLed run leaves, so `cleanup_all` must
//! be able to find every lab resource from its name alone, and must never
//! mistake anything else for one:
//!
//! - namespaces: `tare-<run_id>-<id>-srv` and `tare-<run_id>-<id>-cli`
//! - links: `tr<id><role>`: interface names are limited to 15 bytes
//!   (IFNAMSIZ 16 with the NUL, include/uapi/linux/if.h), so they carry the
//!   8-hex-digit lab id and a 2-letter role, not the run id.
//! - nftables table: `ip tare_<run_id>_<id>`
//!
//! `<id>` is 8 lowercase hex digits, unique among live lab networks (see
//! `ownership`): it ties a namespace, its links and its table together.

use super::LabError;

/// Longest run id accepted: namespace names become file names under
/// /run/netns and show up in `ip netns list`, so keep them readable.
const MAX_RUN_ID: usize = 64;

/// The roles of links on the host side and inside namespaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LinkRole {
    /// Server veth, host end (plain point-to-point, or the bridge port).
    ServerHost,
    /// Server veth, end inside the server namespace (where netem sits).
    ServerInside,
    /// The lab's own Linux bridge (docker0's counterpart).
    Bridge,
    /// Client veth, host end (bridge port).
    ClientHost,
    /// Client veth, end inside the client namespace.
    ClientInside,
    /// The delay line's tap, inside the server namespace (`delay`).
    DelayTap,
    /// A virtual machine's tap on the bridge (`tap`).
    Tap,
}

impl LinkRole {
    const ALL: [LinkRole; 7] = [
        LinkRole::ServerHost,
        LinkRole::ServerInside,
        LinkRole::Bridge,
        LinkRole::ClientHost,
        LinkRole::ClientInside,
        LinkRole::DelayTap,
        LinkRole::Tap,
    ];

    fn code(self) -> &'static str {
        match self {
            LinkRole::ServerHost => "sh",
            LinkRole::ServerInside => "si",
            LinkRole::Bridge => "br",
            LinkRole::ClientHost => "ch",
            LinkRole::ClientInside => "ci",
            LinkRole::DelayTap => "dl",
            LinkRole::Tap => "tp",
        }
    }
}

/// Every name of one lab network.
#[derive(Clone, Debug)]
pub(crate) struct Names {
    run_id: String,
    id: String,
}

impl Names {
    pub(crate) fn new(run_id: &str, id: &str) -> Result<Names, LabError> {
        validate_run_id(run_id)?;
        debug_assert!(is_lab_id(id));
        Ok(Names {
            run_id: run_id.to_string(),
            id: id.to_string(),
        })
    }

    pub(crate) fn server_netns(&self) -> String {
        format!("tare-{}-{}-srv", self.run_id, self.id)
    }

    pub(crate) fn client_netns(&self) -> String {
        format!("tare-{}-{}-cli", self.run_id, self.id)
    }

    pub(crate) fn link(&self, role: LinkRole) -> String {
        format!("tr{}{}", self.id, role.code())
    }

    pub(crate) fn table(&self) -> String {
        format!("tare_{}_{}", self.run_id, self.id)
    }
}

/// Run ids go into namespace and nftables names; nft identifiers and file
/// names both accept letters, digits, `_` and `-`, so only those are allowed.
pub(crate) fn validate_run_id(run_id: &str) -> Result<(), LabError> {
    let reason = if run_id.is_empty() {
        Some("it is empty".to_string())
    } else if run_id.len() > MAX_RUN_ID {
        Some(format!("it is longer than {MAX_RUN_ID} characters"))
    } else if !run_id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        Some("only letters, digits, '_' and '-' are allowed".to_string())
    } else {
        None
    };
    match reason {
        Some(reason) => Err(LabError::InvalidRunId {
            run_id: run_id.to_string(),
            reason,
        }),
        None => Ok(()),
    }
}

pub(crate) fn is_lab_id(text: &str) -> bool {
    text.len() == 8
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// What kind of tare lab resource a name is, as `cleanup_all` sees it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Owned {
    /// Not tare's: never touched.
    No,
    /// Tare's, made by the lab network with this id (whose owner may be alive).
    Lab(String),
    /// Tare-prefixed but not from a lab network of this version: a leftover.
    Other,
}

/// Namespaces: everything named `tare-*` is tare's.
pub(crate) fn netns_owner(name: &str) -> Owned {
    let Some(rest) = name.strip_prefix("tare-") else {
        return Owned::No;
    };
    let id = rest
        .strip_suffix("-srv")
        .or_else(|| rest.strip_suffix("-cli"))
        .and_then(|r| r.rsplit_once('-'))
        .map(|(_, id)| id);
    match id {
        Some(id) if is_lab_id(id) => Owned::Lab(id.to_string()),
        _ => Owned::Other,
    }
}

/// Links: only the exact `tr<8 hex><role>` shape is tare's; a user's `tr0` or
/// `trunk1` is not.
pub(crate) fn link_owner(name: &str) -> Owned {
    let Some(rest) = name.strip_prefix("tr") else {
        return Owned::No;
    };
    if rest.len() != 10 || !is_lab_id(&rest[..8]) {
        return Owned::No;
    }
    if LinkRole::ALL.iter().any(|r| r.code() == &rest[8..]) {
        Owned::Lab(rest[..8].to_string())
    } else {
        Owned::No
    }
}

/// nftables tables: everything named `tare_*` is tare's.
pub(crate) fn table_owner(name: &str) -> Owned {
    let Some(rest) = name.strip_prefix("tare_") else {
        return Owned::No;
    };
    match rest.rsplit_once('_') {
        Some((_, id)) if is_lab_id(id) => Owned::Lab(id.to_string()),
        _ => Owned::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_the_kernel_limit_and_read_back() {
        let names = Names::new("run-1_x", "0a1b2c3d").unwrap();
        for role in LinkRole::ALL {
            let link = names.link(role);
            assert!(link.len() <= 15, "{link}");
            assert_eq!(link_owner(&link), Owned::Lab("0a1b2c3d".into()));
        }
        assert_eq!(names.server_netns(), "tare-run-1_x-0a1b2c3d-srv");
        assert_eq!(
            netns_owner(&names.server_netns()),
            Owned::Lab("0a1b2c3d".into())
        );
        assert_eq!(
            netns_owner(&names.client_netns()),
            Owned::Lab("0a1b2c3d".into())
        );
        assert_eq!(names.table(), "tare_run-1_x_0a1b2c3d");
        assert_eq!(table_owner(&names.table()), Owned::Lab("0a1b2c3d".into()));
    }

    #[test]
    fn other_peoples_names_are_not_tares() {
        for link in [
            "tr0",
            "trunk1",
            "eth0",
            "docker0",
            "tr0a1b2c3dxx",
            "tr0A1B2C3Dbr",
        ] {
            assert_eq!(link_owner(link), Owned::No, "{link}");
        }
        assert_eq!(netns_owner("mytare-x"), Owned::No);
        assert_eq!(table_owner("nat"), Owned::No);
        assert_eq!(table_owner("taree_x"), Owned::No);
    }

    #[test]
    fn tare_prefixed_leftovers_of_unknown_shape_are_still_tares() {
        assert_eq!(netns_owner("tare-old"), Owned::Other);
        assert_eq!(table_owner("tare_old"), Owned::Other);
    }

    #[test]
    fn bad_run_ids_are_refused() {
        for bad in ["", "a b", "x/y", "é", &"x".repeat(65)] {
            assert!(validate_run_id(bad).is_err(), "{bad:?}");
        }
        assert!(validate_run_id("20261122-0230_ab").is_ok());
    }
}
