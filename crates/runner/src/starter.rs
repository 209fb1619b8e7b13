//! `tare init`: a commented starter experiment for each target kind, the
//! way `cargo init` and `k6 new` write a first file. Each starter is an
//! ordinary experiment file under `starters/` that passes `tare run
//! --check` (tested), so it is a working first run, not a template.

/// Every starter, by the target kind it is for, in `tare doctor`'s order.
const STARTERS: &[(&str, &str)] = &[
    ("tare-serve", include_str!("starters/tare-serve.toml")),
    ("nginx", include_str!("starters/nginx.toml")),
    ("nginx-proxy", include_str!("starters/nginx-proxy.toml")),
    ("postgres", include_str!("starters/postgres.toml")),
    ("redis", include_str!("starters/redis.toml")),
    ("mariadb", include_str!("starters/mariadb.toml")),
    ("net", include_str!("starters/net.toml")),
    ("tool", include_str!("starters/tool.toml")),
    ("command", include_str!("starters/command.toml")),
    ("image", include_str!("starters/image.toml")),
];

/// The starter experiment for `kind` (a target name, or an alias of one).
pub fn starter(kind: &str) -> Result<&'static str, String> {
    let name = kind
        .parse::<tare_deploy::TargetKind>()
        .map(|k| k.name())
        .unwrap_or(kind);
    STARTERS
        .iter()
        .find(|(k, _)| *k == name)
        .map(|(_, text)| *text)
        .ok_or_else(|| format!("no starter for {kind:?} (kinds: {})", kinds().join(", ")))
}

/// The kinds `tare init` knows, the first being the default.
pub fn kinds() -> Vec<&'static str> {
    STARTERS.iter().map(|(k, _)| *k).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{ConfigSource, Experiment};
    use std::path::{Path, PathBuf};

    #[test]
    fn every_target_has_a_starter_and_every_starter_checks() {
        for kind in tare_deploy::TargetKind::all() {
            let text = starter(kind.name()).unwrap_or_else(|e| panic!("{e}"));
            let exp = Experiment::parse(
                text,
                Path::new(&format!("{}.toml", kind.name())),
                &ConfigSource::RelativeTo(PathBuf::from(".")),
            )
            .unwrap_or_else(|e| panic!("starter for {kind}: {e}"));
            assert_eq!(exp.target.kind(), kind, "starter for {kind}");
            assert!(exp.cells.len() > 1, "starter for {kind} varies something");
        }
        assert_eq!(kinds().len(), tare_deploy::TargetKind::all().count());
    }

    #[test]
    fn an_alias_finds_its_target_and_an_unknown_kind_lists_the_known() {
        assert!(starter("mysql").unwrap().contains("kind = \"mariadb\""));
        let err = starter("apache").unwrap_err();
        assert!(err.contains("apache") && err.contains("nginx"), "{err}");
    }
}
