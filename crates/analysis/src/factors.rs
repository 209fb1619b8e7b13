//! Which factors differ between two cells, the one rule the runner (when it
//! checks an experiment's chain) and analysis (when it names each step)
//! share.
//!
//! A cell names only the factors that apply to it: native has no `storage`
//! or `seccomp` (they are container options), so `placement=native` →
//! `placement=docker-host,storage=image` changes one factor, the placement,
//! and the container's storage comes with it. A factor set on one side only
//! counts as a change only when nothing else differs.

use std::collections::{BTreeMap, BTreeSet};

/// The factors that differ from `a` to `b`, by name.
pub fn changed_factors(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<String> {
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let (both, one_side): (Vec<&String>, Vec<&String>) = keys
        .into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .partition(|k| a.contains_key(*k) && b.contains_key(*k));
    let changed = if both.is_empty() { one_side } else { both };
    changed.into_iter().cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(levels: &[(&str, &str)]) -> BTreeMap<String, String> {
        levels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn factors_that_do_not_apply_come_with_the_placement() {
        let native = cell(&[("placement", "native")]);
        let docker = cell(&[("placement", "docker-host"), ("storage", "image")]);
        assert_eq!(changed_factors(&native, &docker), ["placement"]);
        let volume = cell(&[("placement", "docker-host"), ("storage", "volume")]);
        assert_eq!(changed_factors(&docker, &volume), ["storage"]);
        // Only a one-sided factor differs: that is the change.
        let bare = cell(&[("placement", "docker-host")]);
        assert_eq!(changed_factors(&bare, &docker), ["storage"]);
        let both = cell(&[("placement", "native"), ("storage", "volume")]);
        assert_eq!(changed_factors(&docker, &both), ["placement", "storage"]);
        assert!(changed_factors(&docker, &docker).is_empty());
    }
}
