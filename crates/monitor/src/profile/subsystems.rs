//! Kernel function names to subsystems (TCP/IP, netfilter, conntrack, NAT,
//! bridge, veth, seccomp, overlayfs, FUSE...): the map is data,
//! `subsystems.txt` beside this file, read once; its header says the
//! format and docs/profiles.md what each subsystem means.

use std::sync::OnceLock;

const MAP: &str = include_str!("subsystems.txt");

/// A sample's stack that maps to nothing named.
pub(crate) const OTHER_KERNEL: &str = "other kernel";
/// A CPU with nothing to run: not busy time.
pub(crate) const IDLE: &str = "idle";
/// A sample taken in user space.
pub const USER: &str = "user space";
/// A sample taken in a guest (a VM's vCPU), which the host cannot see into.
pub(crate) const GUEST: &str = "guest";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// A name, or a prefix (without its `*`).
    pub pattern: String,
    pub prefix: bool,
    pub subsystem: String,
    /// Only when the sample was taken in the function itself.
    pub leaf_only: bool,
    pub example: String,
}

impl Entry {
    fn matches(&self, name: &str) -> bool {
        if self.prefix {
            name.starts_with(&self.pattern)
        } else {
            name == self.pattern
        }
    }
}

/// Parses the map's text; an error names the line.
pub fn parse(text: &str) -> Result<Vec<Entry>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split('|').map(str::trim).collect();
        let [pattern, subsystem, place, example] = cols.as_slice() else {
            return Err(format!("line {}: expected 4 columns: {line}", i + 1));
        };
        let leaf_only = match *place {
            "leaf" => true,
            "any" => false,
            other => return Err(format!("line {}: where {other:?}: any or leaf", i + 1)),
        };
        let (pattern, prefix) = match pattern.strip_suffix('*') {
            Some(p) => (p, true),
            None => (*pattern, false),
        };
        if pattern.is_empty() || subsystem.is_empty() || example.is_empty() {
            return Err(format!("line {}: an empty column: {line}", i + 1));
        }
        out.push(Entry {
            pattern: pattern.to_string(),
            prefix,
            subsystem: subsystem.to_string(),
            leaf_only,
            example: example.to_string(),
        });
    }
    Ok(out)
}

/// The map.
pub fn entries() -> &'static [Entry] {
    static E: OnceLock<Vec<Entry>> = OnceLock::new();
    E.get_or_init(|| parse(MAP).unwrap_or_default())
}

/// The entry for a function: the longest pattern that matches (an exact
/// name beats a prefix of the same length).
pub(crate) fn entry_of(name: &str) -> Option<&'static Entry> {
    entries()
        .iter()
        .filter(|e| e.matches(name))
        .max_by_key(|e| (e.pattern.len(), !e.prefix))
}

/// The subsystem of a kernel stack, leaf first: the first frame that maps
/// to a subsystem names it. Entry code and idle loops (`leaf` entries)
/// count only as the leaf: reached higher up, the work below them mapped
/// to nothing, and it is [`OTHER_KERNEL`]. The profile's namer stops at
/// the same frame; the tests hold the two to one answer.
#[cfg(test)]
pub(crate) fn of_stack<'a>(frames: impl IntoIterator<Item = &'a str>) -> &'static str {
    for (i, f) in frames.into_iter().enumerate() {
        if let Some(e) = entry_of(f) {
            if e.leaf_only && i > 0 {
                return OTHER_KERNEL;
            }
            return e.subsystem.as_str();
        }
    }
    OTHER_KERNEL
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_map_parses() {
        let e = parse(MAP).expect("subsystems.txt parses");
        assert!(e.len() > 50, "{} entries", e.len());
        assert_eq!(entries().len(), e.len());
    }

    /// A test per entry: each names its example's subsystem, and is the
    /// entry that matches it (no longer pattern of another subsystem hides it).
    #[test]
    fn every_entry_maps_its_example() {
        let mut failures = Vec::new();
        for e in entries() {
            if !e.matches(&e.example) {
                failures.push(format!(
                    "{}: its example {} does not match it",
                    e.pattern, e.example
                ));
                continue;
            }
            let got = entry_of(&e.example).map(|g| g.subsystem.as_str());
            if got != Some(e.subsystem.as_str()) {
                failures.push(format!(
                    "{} ({}): its example {} maps to {got:?}",
                    e.pattern, e.subsystem, e.example
                ));
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
    }

    #[test]
    fn patterns_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for e in entries() {
            assert!(
                seen.insert((e.pattern.clone(), e.prefix)),
                "{} twice",
                e.pattern
            );
        }
    }

    #[test]
    fn the_longest_pattern_wins() {
        assert_eq!(of_stack(["nf_conntrack_in"]), "conntrack");
        assert_eq!(of_stack(["nf_nat_ipv4_manip_pkt"]), "NAT");
        // The nat table's hook, translating nothing, is netfilter's.
        assert_eq!(of_stack(["nf_nat_inet_fn"]), "netfilter");
        assert_eq!(of_stack(["nf_nat_manip_pkt", "nf_nat_inet_fn"]), "NAT");
        assert_eq!(of_stack(["nf_hook_slow"]), "netfilter");
        assert_eq!(of_stack(["br_nf_pre_routing"]), "netfilter");
        assert_eq!(of_stack(["br_handle_frame"]), "bridge");
    }

    #[test]
    fn a_stack_is_billed_to_its_first_named_frame() {
        // A lock taken by conntrack is conntrack's.
        assert_eq!(
            of_stack([
                "_raw_spin_lock",
                "nf_conntrack_in",
                "nf_hook_slow",
                "ip_rcv"
            ]),
            "conntrack"
        );
        // Nothing named below the system-call entry: other kernel work.
        assert_eq!(
            of_stack(["memcpy_orig", "mystery_fn", "do_syscall_64"]),
            OTHER_KERNEL
        );
        // In the entry code itself.
        assert_eq!(of_stack(["do_syscall_64"]), "syscall entry");
        assert_eq!(of_stack(["pv_native_safe_halt", "default_idle"]), IDLE);
        assert_eq!(of_stack(Vec::<&str>::new()), OTHER_KERNEL);
    }

    #[test]
    fn bad_lines_are_errors() {
        assert!(parse("tcp_* | TCP/IP | any")
            .unwrap_err()
            .contains("line 1"));
        assert!(parse("tcp_* | TCP/IP | some | tcp_x")
            .unwrap_err()
            .contains("any or leaf"));
        assert!(parse("* | TCP/IP | any | x").is_err());
    }
}
