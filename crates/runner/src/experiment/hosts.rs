//! `[hosts.NAME]`, `[load] hosts` and `[target] host`: where the generators
//! and the target run when not on this machine (docs/remote.md). Each
//! mistake is named with its line and key; whether a host answers is
//! checked later, before any load (`crate::remote`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tare_remote::host::DEFAULT_DIR;
use tare_remote::Host;
use toml::Spanned;

use super::error::{ExperimentError, Locator};
use super::raw::{RawExperiment, RawHost};
use super::ConfigSource;

type Result<T> = std::result::Result<T, ExperimentError>;

/// The remote hosts of an experiment and what runs on them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Hosts {
    /// Every `[hosts.NAME]`, in file order.
    pub all: Vec<Host>,
    /// `[load] hosts`: one generator on each (empty: this machine).
    pub generators: Vec<String>,
    /// `[target] host` (`None`: this machine).
    pub target: Option<String>,
}

impl Hosts {
    /// Whether anything runs elsewhere.
    pub fn any(&self) -> bool {
        !self.generators.is_empty() || self.target.is_some()
    }

    pub fn get(&self, name: &str) -> Option<&Host> {
        self.all.iter().find(|h| h.name == name)
    }

    /// The hosts a run uses (generators, then the target's), each once.
    pub fn used(&self) -> Vec<&Host> {
        let mut out: Vec<&Host> = Vec::new();
        for n in self.generators.iter().chain(&self.target) {
            if let Some(h) = self.get(n) {
                if !out.iter().any(|o| o.name == h.name) {
                    out.push(h);
                }
            }
        }
        out
    }
}

pub(super) fn hosts(loc: &Locator, raw: &RawExperiment, source: &ConfigSource) -> Result<Hosts> {
    let base = match source {
        ConfigSource::RelativeTo(dir) => dir.clone(),
        ConfigSource::RunDir(_) => PathBuf::from("."),
    };
    let all = (raw.hosts.iter())
        .map(|(name, h)| host(loc, name, h, &base))
        .collect::<Result<Vec<Host>>>()?;
    let generators = generators(loc, raw, &all)?;
    let target = raw
        .target
        .get_ref()
        .host
        .as_ref()
        .map(|n| named(loc, &all, n, "target.host"))
        .transpose()?;
    Ok(Hosts {
        all,
        generators,
        target,
    })
}

/// One `[hosts.NAME]`: its name, ssh destination, port, key files (read
/// relative to `base`), directory and load address, each checked.
fn host(loc: &Locator, name: &Spanned<String>, h: &Spanned<RawHost>, base: &Path) -> Result<Host> {
    let key = |k: &str| format!("hosts.{}.{k}", name.get_ref());
    let n = name.get_ref();
    if n.is_empty()
        || !n
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(loc.error(
            name.span(),
            &format!("hosts.{n}"),
            "a host name is letters, digits, - and _",
        ));
    }
    let h = h.get_ref();
    let ssh = h.ssh.get_ref();
    let (user, address) = match ssh.rsplit_once('@') {
        Some((u, a)) => (u.to_string(), a.to_string()),
        None => (String::new(), ssh.clone()),
    };
    let bad = |c: char| c.is_whitespace() || c == '\'' || c == '"' || c == '\0';
    if address.is_empty() || ssh.contains(bad) || address.starts_with('-') {
        return Err(loc.error(h.ssh.span(), &key("ssh"), "must be \"user@address\""));
    }
    let port = match &h.port {
        None => 22,
        Some(p) if (1..=65535).contains(p.get_ref()) => *p.get_ref() as u16,
        Some(p) => return Err(loc.error(p.span(), &key("port"), "must be 1-65535")),
    };
    let file = |v: &Option<Spanned<String>>, k: &str| -> Result<Option<PathBuf>> {
        let Some(v) = v else { return Ok(None) };
        let p = base.join(v.get_ref());
        if !p.is_file() {
            return Err(loc.error(v.span(), &key(k), format!("{} is not a file", p.display())));
        }
        Ok(Some(p))
    };
    let dir = match &h.dir {
        None => PathBuf::from(DEFAULT_DIR),
        Some(d) if Path::new(d.get_ref()).is_absolute() && d.get_ref().len() > 1 => {
            PathBuf::from(d.get_ref())
        }
        Some(d) => return Err(loc.error(d.span(), &key("dir"), "must be an absolute path, not /")),
    };
    let load_address = match &h.address {
        None => None,
        Some(a) => match a.get_ref().parse::<std::net::IpAddr>() {
            Ok(ip) => Some(ip.to_string()),
            Err(_) => return Err(loc.error(a.span(), &key("address"), "must be an IP address")),
        },
    };
    Ok(Host {
        name: n.clone(),
        user,
        address,
        port,
        identity: file(&h.identity, "identity")?,
        known_hosts: file(&h.known_hosts, "known_hosts")?,
        check_host_key: h.check_host_key.as_ref().is_none_or(|c| *c.get_ref()),
        dir,
        load_address,
    })
}

/// Host `n`, named at `key`, when the file has a `[hosts.NAME]` for it.
fn named(loc: &Locator, all: &[Host], n: &Spanned<String>, key: &str) -> Result<String> {
    if all.iter().any(|h| h.name == *n.get_ref()) {
        return Ok(n.get_ref().clone());
    }
    let known: Vec<&str> = all.iter().map(|h| h.name.as_str()).collect();
    Err(loc.error(
        n.span(),
        key,
        format!(
            "no [hosts.{}] in this file (hosts: {})",
            n.get_ref(),
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        ),
    ))
}

/// `[load] hosts`: one generator on each, each named once (and no
/// find-max search, which runs on one generator).
fn generators(loc: &Locator, raw: &RawExperiment, all: &[Host]) -> Result<Vec<String>> {
    let mut generators = Vec::new();
    let load = raw.load.as_ref();
    if let Some(list) = load.and_then(|l| l.hosts.as_ref()) {
        if list.get_ref().is_empty() {
            return Err(loc.error(
                list.span(),
                "load.hosts",
                "name at least one host (or leave it out: this machine)",
            ));
        }
        for n in list.get_ref() {
            let name = named(loc, all, n, "load.hosts")?;
            if generators.contains(&name) {
                return Err(loc.error(n.span(), "load.hosts", format!("{name} is named twice")));
            }
            generators.push(name);
        }
        if let Some(slo) = load.and_then(|l| l.slo.as_ref()) {
            return Err(loc.error(
                slo.span(),
                "load.slo",
                "the find-max search runs on one generator; leave load.hosts out to use it",
            ));
        }
    }
    Ok(generators)
}
