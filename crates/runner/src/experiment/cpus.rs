//! `[cpus]`: which CPUs the server and the load generator run on. On a
//! small machine a generator and a server that share cores measure each
//! other, and the scheduler's choice of who runs where moves from trial to
//! trial (docs/experiments.md, "CPUs"). So by default (`auto`) a machine
//! with 2 to 8 CPUs is split in two: the generator on the lower half, the
//! server (and its companion) on the upper half. The resolved split is
//! recorded in `plan.json`; the server's side also shows in the fairness
//! facts (`cpus_allowed`). The processes a placement runs on the server's
//! behalf (containerd-shim, conmon, docker-proxy, fuse-overlayfs) go with
//! the server by default (`helpers = "server"`), so what the deployment
//! costs comes out of the server's CPUs in every trial instead of landing
//! on either side by the scheduler's choice.

use serde::{Deserialize, Serialize};
use tare_engine::cpu::CpuList;
use toml::Spanned;

use super::error::{ExperimentError, Locator};
use super::raw::RawCpus;

/// Most CPUs `auto` still splits: beyond this a generator and a server
/// have cores enough not to meet, and pinning would only take them away.
const AUTO_MAX_CPUS: usize = 8;

/// One side's setting, as the file says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CpuChoice {
    /// Decided by the machine (see the module's documentation).
    Auto,
    /// Not pinned: wherever the scheduler puts it.
    None,
    /// Exactly these CPUs.
    List(CpuList),
}

/// `[cpus] helpers`: where the placement's helper processes run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HelperChoice {
    /// On the server's CPUs (nowhere in particular when it is not pinned).
    Server,
    /// Not pinned: wherever the scheduler puts them.
    None,
    /// Exactly these CPUs.
    List(CpuList),
}

/// `[cpus] server`, `generator` and `helpers`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuPolicy {
    pub server: CpuChoice,
    pub generator: CpuChoice,
    pub helpers: HelperChoice,
}

impl Default for CpuPolicy {
    fn default() -> Self {
        CpuPolicy {
            server: CpuChoice::Auto,
            generator: CpuChoice::Auto,
            helpers: HelperChoice::Server,
        }
    }
}

/// Where each side runs on this machine, as `plan.json` records it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuPlan {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<CpuList>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<CpuList>,
    /// The placement's helper processes (docker-proxy, fuse-overlayfs...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub helpers: Option<CpuList>,
}

impl CpuPolicy {
    /// The split on this machine: the CPUs this process may use.
    pub fn here(&self) -> CpuPlan {
        CpuList::allowed()
            .map(|allowed| self.resolve(&allowed))
            .unwrap_or_default()
    }

    /// The split on a machine whose usable CPUs are `allowed`.
    pub fn resolve(&self, allowed: &CpuList) -> CpuPlan {
        let n = allowed.cpus().len();
        let split = (2..=AUTO_MAX_CPUS)
            .contains(&n)
            .then(|| allowed.split_at(n / 2))
            .flatten();
        let rest = |other: &CpuList| -> Option<CpuList> {
            let left: Vec<String> = allowed
                .cpus()
                .iter()
                .filter(|c| !other.cpus().contains(c))
                .map(usize::to_string)
                .collect();
            left.join(",").parse().ok()
        };
        let side =
            |mine: &CpuChoice, theirs: &CpuChoice, auto: Option<CpuList>| match (mine, theirs) {
                (CpuChoice::List(l), _) => Some(l.clone()),
                (CpuChoice::None, _) => None,
                // Beside an explicit other side: what it leaves.
                (CpuChoice::Auto, CpuChoice::List(other)) => rest(other),
                (CpuChoice::Auto, _) => auto,
            };
        let server = side(
            &self.server,
            &self.generator,
            split.as_ref().map(|s| s.1.clone()),
        );
        CpuPlan {
            generator: side(&self.generator, &self.server, split.map(|s| s.0)),
            helpers: match &self.helpers {
                HelperChoice::Server => server.clone(),
                HelperChoice::None => None,
                HelperChoice::List(l) => Some(l.clone()),
            },
            server,
        }
    }
}

/// Reads `[cpus]`, each value `auto`, `none` or a CPU list.
pub(super) fn cpus(
    loc: &Locator<'_>,
    raw: Option<&Spanned<RawCpus>>,
) -> Result<CpuPolicy, ExperimentError> {
    let Some(raw) = raw else {
        return Ok(CpuPolicy::default());
    };
    let choice = |v: &Option<Spanned<String>>, key: &str| -> Result<CpuChoice, ExperimentError> {
        let Some(v) = v else {
            return Ok(CpuChoice::Auto);
        };
        match v.get_ref().trim() {
            "auto" => Ok(CpuChoice::Auto),
            "none" => Ok(CpuChoice::None),
            list => list
                .parse()
                .map(CpuChoice::List)
                .map_err(|e: String| loc.error(v.span(), key, format!("{e}, or auto, or none"))),
        }
    };
    let r = raw.get_ref();
    let helpers = match &r.helpers {
        None => HelperChoice::Server,
        Some(v) => match v.get_ref().trim() {
            "server" => HelperChoice::Server,
            "none" => HelperChoice::None,
            list => list.parse().map(HelperChoice::List).map_err(|e: String| {
                loc.error(v.span(), "cpus.helpers", format!("{e}, or server, or none"))
            })?,
        },
    };
    let policy = CpuPolicy {
        server: choice(&r.server, "cpus.server")?,
        generator: choice(&r.generator, "cpus.generator")?,
        helpers,
    };
    if let (CpuChoice::List(s), CpuChoice::List(g), Some(v)) =
        (&policy.server, &policy.generator, &r.generator)
    {
        if s.cpus().iter().any(|c| g.cpus().contains(c)) {
            return Err(loc.error(
                v.span(),
                "cpus.generator",
                format!("shares CPUs with cpus.server ({s}): the two would measure each other"),
            ));
        }
    }
    Ok(policy)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(s: &str) -> CpuList {
        s.parse().unwrap()
    }

    #[test]
    fn auto_splits_a_small_machine_and_leaves_a_large_one_alone() {
        let two = CpuPolicy::default().resolve(&list("0-1"));
        assert_eq!(two.generator, Some(list("0")));
        assert_eq!(two.server, Some(list("1")));
        let four = CpuPolicy::default().resolve(&list("2-5"));
        assert_eq!(four.generator, Some(list("2-3")));
        assert_eq!(four.server, Some(list("4-5")));
        assert_eq!(CpuPolicy::default().resolve(&list("0")), CpuPlan::default());
        assert_eq!(
            CpuPolicy::default().resolve(&list("0-15")),
            CpuPlan::default()
        );
    }

    fn parse(cpus: &str) -> Result<CpuPolicy, String> {
        let text = format!("[target]\nkind = \"nginx\"\n[load]\n[cpus]\n{cpus}");
        crate::experiment::Experiment::parse(
            &text,
            std::path::Path::new("exp.toml"),
            &crate::experiment::ConfigSource::RelativeTo(".".into()),
        )
        .map(|e| e.cpus)
        .map_err(|e| e.to_string())
    }

    #[test]
    fn the_cpus_table_is_read_and_its_mistakes_located() {
        assert_eq!(
            parse("server = \"1\"\ngenerator = \"none\"\n").unwrap(),
            CpuPolicy {
                server: CpuChoice::List(list("1")),
                generator: CpuChoice::None,
                helpers: HelperChoice::Server,
            }
        );
        assert_eq!(parse("").unwrap(), CpuPolicy::default());
        let e = parse("server = \"one\"\n").unwrap_err();
        assert!(
            e.starts_with("exp.toml:5:10: `cpus.server`: bad CPU list \"one\""),
            "{e}"
        );
        let e = parse("server = \"0-1\"\ngenerator = \"1\"\n").unwrap_err();
        assert!(
            e.contains("`cpus.generator`: shares CPUs with cpus.server"),
            "{e}"
        );
        let e = parse("sever = \"1\"\n").unwrap_err();
        assert!(e.contains("unknown field `sever`"), "{e}");
    }

    #[test]
    fn an_explicit_side_leaves_the_rest_to_auto() {
        let p = CpuPolicy {
            server: CpuChoice::List(list("0")),
            generator: CpuChoice::Auto,
            helpers: HelperChoice::Server,
        };
        let r = p.resolve(&list("0-3"));
        assert_eq!(r.server, Some(list("0")));
        assert_eq!(r.generator, Some(list("1-3")));
        let p = CpuPolicy {
            server: CpuChoice::None,
            generator: CpuChoice::None,
            helpers: HelperChoice::Server,
        };
        assert_eq!(p.resolve(&list("0-1")), CpuPlan::default());
    }

    #[test]
    fn helpers_go_with_the_server_unless_told_otherwise() {
        let two = CpuPolicy::default().resolve(&list("0-1"));
        assert_eq!(two.helpers, Some(list("1")));
        // A server nobody pins leaves its helpers unpinned too.
        assert_eq!(CpuPolicy::default().resolve(&list("0-15")).helpers, None);
        let p = parse("helpers = \"none\"\n").unwrap();
        assert_eq!(p.helpers, HelperChoice::None);
        assert_eq!(p.resolve(&list("0-1")).helpers, None);
        let p = parse("helpers = \"0\"\n").unwrap();
        assert_eq!(p.resolve(&list("0-1")).helpers, Some(list("0")));
        let e = parse("helpers = \"gen\"\n").unwrap_err();
        assert!(e.contains("`cpus.helpers`: bad CPU list \"gen\""), "{e}");
        assert!(e.ends_with("or server, or none"), "{e}");
    }
}
