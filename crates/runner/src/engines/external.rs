//! `engine = "external"`: the load people already have. `[load.external]`
//! names a load tool (wrk, ab, h2load, pgbench, redis-benchmark, sysbench,
//! locust, jmeter), its arguments with placeholders
//! filled per cell, and its script files; `tare_tool::external` runs it
//! against each cell's address and reads its output into the same record
//! every engine writes (docs/external.md).
//!
//! ```toml
//! [load]
//! engine = "external"
//! duration = "3s"          # the tool's {duration}; tare kills it after duration + grace
//! connections = 50         # {connections} (a cell's `connections` level wins)
//! threads = 2              # {threads}
//! [load.external]
//! tool = "wrk"             # wrk, ab, h2load, pgbench, redis-benchmark, sysbench, locust or jmeter
//! args = ["-t{threads}", "-c{connections}", "-d{duration}s", "-s", "post.lua", "--latency", "{url}"]
//! scripts = ["lua/post.lua"]   # copied into the run directory, hashed, written beside the tool
//! binary = "/usr/bin/wrk"  # default: the tool on PATH
//! grace = "5s"             # how long past its duration the tool may run (jmeter: 20s)
//! ```
//!
//! The tool paces itself: `rate`, `slo`, `ramp` and `coalesce` are refused.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tare_engine::bounds;
use tare_engine::load::{Load, LoadKey};
use tare_engine::Endpoint;
use tare_record::LoadResult;
use tare_tool::external::args::{Template, Values};
use tare_tool::external::{External, ExternalConfig, LoadTool};
use toml::Spanned;

use super::{experiment_defaults, no_nul, table_of, ExperimentEngine, Kind, Offer, Spans, Table};
use crate::executor::ExecError;
use crate::experiment::error::{ExperimentError, Locator};
use crate::experiment::InputFile;

pub(super) struct ExternalEngine;

/// `[load.external]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExternal {
    tool: Option<Spanned<String>>,
    args: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    scripts: Vec<Spanned<String>>,
    binary: Option<Spanned<String>>,
    grace: Option<Spanned<String>>,
}

/// `[load.external]`, checked.
#[derive(Clone, Debug, Serialize)]
struct ExternalTable {
    tool: LoadTool,
    /// As written (placeholders kept); the default list when none was.
    #[serde(serialize_with = "as_written")]
    args: Vec<Template>,
    /// Each script's name beside the tool, and its copy in the run directory.
    #[serde(serialize_with = "names_of")]
    scripts: Vec<(String, InputFile)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    binary: Option<std::path::PathBuf>,
    grace_s: f64,
}

fn as_written<S: serde::Serializer>(args: &[Template], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(args.iter().map(ToString::to_string))
}

fn names_of<S: serde::Serializer>(f: &[(String, InputFile)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(f.iter().map(|(_, i)| &i.written))
}

impl ExperimentEngine for ExternalEngine {
    fn kind(&self) -> Kind {
        Kind {
            name: tare_tool::external::run::NAME,
            unit: tare_record::Unit::Requests,
        }
    }

    fn defaults(&self) -> Load {
        experiment_defaults()
    }

    fn loads_any_target(&self) -> bool {
        true
    }

    fn table(
        &self,
        loc: &Locator<'_>,
        load: &mut Load,
        spans: &mut Spans,
    ) -> Result<Arc<dyn Table>, ExperimentError> {
        let raw: RawExternal = table_of(loc, self.name())?.unwrap_or_default();
        refuse_pacing(loc, load, spans)?;
        let names: Vec<&str> = LoadTool::ALL.iter().map(|t| t.name()).collect();
        let tool = match &raw.tool {
            None => {
                return Err(loc.error(
                    0..0,
                    "load.external.tool",
                    format!(
                        "is required with engine = \"external\" ({})",
                        names.join(", ")
                    ),
                ))
            }
            Some(t) => LoadTool::from_name(t.get_ref()).ok_or_else(|| {
                loc.error(
                    t.span(),
                    "load.external.tool",
                    format!(
                        "`{}` is not a tool tare reads ({})",
                        t.get_ref(),
                        names.join(", ")
                    ),
                )
            })?,
        };
        let args = match &raw.args {
            None => tool
                .default_args()
                .iter()
                .map(|a| Template::parse(a).expect("built-in arguments parse"))
                .collect(),
            Some(list) => {
                let mut out = Vec::new();
                for a in list.get_ref() {
                    no_nul(loc, a, "load.external.args")?;
                    out.push(
                        Template::parse(a.get_ref())
                            .map_err(|e| loc.error(a.span(), "load.external.args", e))?,
                    );
                }
                if out.is_empty() {
                    return Err(loc.error(list.span(), "load.external.args", "is empty"));
                }
                let written: Vec<String> = out.iter().map(ToString::to_string).collect();
                tool.check_args(&written)
                    .map_err(|e| loc.error(list.span(), "load.external.args", e))?;
                out
            }
        };
        let scripts = scripts(loc, &raw.scripts)?;
        let binary = raw
            .binary
            .as_ref()
            .map(|b| std::path::PathBuf::from(b.get_ref()));
        let grace = match &raw.grace {
            None => tool.default_grace(),
            Some(g) => humantime::parse_duration(g.get_ref())
                .ok()
                .filter(|d| *d <= bounds::MAX_EXTERNAL_GRACE)
                .ok_or_else(|| {
                    loc.error(
                        g.span(),
                        "load.external.grace",
                        format!(
                            "must be a duration up to {} (e.g. 5s)",
                            bounds::show(bounds::MAX_EXTERNAL_GRACE)
                        ),
                    )
                })?,
        };
        Ok(Arc::new(ExternalTable {
            tool,
            args,
            scripts,
            binary,
            grace_s: grace.as_secs_f64(),
        }))
    }
}

/// The tool paces itself: an open loop, a search or a ramp of tare's
/// would be silently ignored, so each is refused at its line.
fn refuse_pacing(loc: &Locator<'_>, load: &Load, spans: &Spans) -> Result<(), ExperimentError> {
    let set = [
        (LoadKey::Rate, load.rate.is_some()),
        (LoadKey::Slo, load.slo.is_some()),
        (LoadKey::Ramp, !load.ramp.is_zero()),
    ];
    for (key, on) in set {
        if on {
            let (span, name) = spans.of(key);
            return Err(loc.error(
                span,
                &name,
                "does not apply to engine = \"external\": the tool paces itself (pass its own flags in args)",
            ));
        }
    }
    Ok(())
}

/// Each script read now (a missing one fails at once), copied into the run
/// directory as `inputs/load.external.<name>`, written beside the tool as
/// `<name>`, its file name: two scripts may not share one.
fn scripts(
    loc: &Locator<'_>,
    written: &[Spanned<String>],
) -> Result<Vec<(String, InputFile)>, ExperimentError> {
    let mut out: Vec<(String, InputFile)> = Vec::new();
    for w in written {
        no_nul(loc, w, "load.external.scripts")?;
        let at = |m: String| loc.error(w.span(), "load.external.scripts", m);
        let name = std::path::Path::new(w.get_ref())
            .file_name()
            .and_then(|n| n.to_str())
            .filter(|n| !n.starts_with('.'))
            .ok_or_else(|| at(format!("`{}` names no file", w.get_ref())))?
            .to_string();
        if out.iter().any(|(n, _)| *n == name) {
            return Err(at(format!("two scripts are called `{name}`")));
        }
        let copy = format!("inputs/load.external.{name}");
        let path = loc.input_path(w.get_ref(), &copy);
        let text =
            std::fs::read_to_string(&path).map_err(|e| at(format!("{}: {e}", path.display())))?;
        out.push((
            name,
            InputFile {
                name: copy,
                written: w.get_ref().clone(),
                text,
            },
        ));
    }
    Ok(out)
}

impl Table for ExternalTable {
    /// The tool's file name (`binary`'s when given: a wrk2 build runs as
    /// `wrk2`; JMeter's is `java`), as the kernel names the process it starts.
    fn generator_process(&self) -> Option<String> {
        // JMeter runs as `java`, whatever script or launcher starts it.
        if self.tool.process_name() != self.tool.name() {
            return Some(self.tool.process_name().to_string());
        }
        let own = self
            .binary
            .as_ref()
            .and_then(|b| b.file_name())
            .and_then(|n| n.to_str());
        Some(own.unwrap_or(self.tool.process_name()).to_string())
    }

    fn inputs(&self) -> Vec<InputFile> {
        self.scripts.iter().map(|(_, i)| i.clone()).collect()
    }

    fn run(
        &self,
        load: &Load,
        offer: &Offer<'_>,
        stop: &Arc<AtomicBool>,
    ) -> Result<LoadResult, ExecError> {
        let (values, target) = match offer.endpoint {
            Endpoint::Tcp(a) => (
                Values {
                    url: offer.url.clone(),
                    host: Some(a.ip().to_string()),
                    port: Some(a.port()),
                    ..Values::default()
                },
                offer.url.clone(),
            ),
            Endpoint::Unix(p) => (
                Values {
                    url: offer.url.clone(),
                    socket: Some(p.display().to_string()),
                    ..Values::default()
                },
                format!("{} via unix:{}", offer.url, p.display()),
            ),
        };
        let config = ExternalConfig {
            load: load.clone(),
            tool: self.tool,
            binary: self.binary.clone(),
            args: self.args.clone(),
            scripts: self
                .scripts
                .iter()
                .map(|(n, i)| (n.clone(), i.text.clone()))
                .collect(),
            grace: Duration::from_secs_f64(self.grace_s),
            values,
            target,
            transport: offer.endpoint.transport().into(),
        };
        External::run(&config, stop).map_err(ExecError::new)
    }
}

#[cfg(test)]
mod tests {
    use crate::experiment::{ConfigSource, Experiment};

    fn parse(load: &str, table: &str) -> Result<Experiment, String> {
        let text = format!(
            "[target]\nkind = \"nginx\"\n[load]\nengine = \"external\"\nduration = \"2s\"\n{load}[load.external]\n{table}"
        );
        Experiment::parse(
            &text,
            std::path::Path::new("exp.toml"),
            &ConfigSource::RelativeTo(".".into()),
        )
        .map_err(|e| e.to_string())
    }

    #[test]
    fn tools_args_scripts_and_grace_are_checked_with_line_and_key() {
        parse("", "tool = \"wrk\"\n").unwrap();
        parse(
            "",
            "tool = \"h2load\"\nargs = [\"-c{connections}\", \"{url}\"]\ngrace = \"2s\"\n",
        )
        .unwrap();
        for (load, table, want) in [
            ("", "tool = \"gatling\"\n", "load.external.tool"),
            (
                "",
                "tool = \"jmeter\"\nargs = [\"-n\", \"-l\", \"out.jtl\"]\n",
                "tare has JMeter write its results file",
            ),
            ("", "args = [\"{url}\"]\n", "load.external.tool"),
            (
                "",
                "tool = \"ab\"\nargs = [\"{hots}\"]\n",
                "`{hots}` is not a placeholder",
            ),
            ("", "tool = \"ab\"\nargs = []\n", "is empty"),
            (
                "",
                "tool = \"wrk\"\nscripts = [\"nope/x.lua\"]\n",
                "load.external.scripts",
            ),
            (
                "",
                "tool = \"wrk\"\ngrace = \"forever\"\n",
                "load.external.grace",
            ),
            ("", "tool = \"wrk\"\nfile = 1\n", "file"),
            (
                "rate = 100.0\n",
                "tool = \"wrk\"\n",
                "exp.toml:6:8: `load.rate`: does not apply",
            ),
        ] {
            let e = parse(load, table).unwrap_err();
            assert!(e.contains(want), "{table}: {e}");
        }
    }
}
