//! `engine = "tool"` (the default for the `tool` target): `[load.tool]`
//! and runs of `tare_tool` through the agent the deployment started inside
//! its placement (docs/tools.md). The job itself is the target's config
//! variant (`config = ["fio-randread", "hpcc"]`); this table sizes it.
//!
//! ```toml
//! [load]
//! duration = "10s"       # fio's and sysbench's run time; hpcc runs to completion
//! threads = 1            # sysbench threads, fio jobs
//! [load.tool]
//! size = "256m"          # fio's test file
//! hpl_n = 2000           # hpcc's HPL order N (STREAM and RandomAccess follow it)
//! limit = "10m"          # a run still going after this long is a failed trial
//! primary = "read_clat_p99_us"   # compare cells on this metric instead of the job's
//! ```

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use tare_engine::bounds;

use serde::{Deserialize, Serialize};
use tare_engine::load::Load;
use tare_record::LoadResult;
use tare_tool::{Place, Tool, ToolConfig};
use toml::Spanned;

use super::{experiment_defaults, measure, table_of, ExperimentEngine, Kind, Offer, Spans, Table};
use crate::executor::ExecError;
use crate::experiment::error::{ExperimentError, Locator};

pub(super) struct ToolEngine;

/// `[load.tool]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    size: Option<Spanned<String>>,
    hpl_n: Option<Spanned<i64>>,
    limit: Option<Spanned<String>>,
    primary: Option<Spanned<String>>,
}

/// `[load.tool]`, checked.
#[derive(Clone, Debug, PartialEq, Serialize)]
struct ToolTable {
    file_bytes: u64,
    hpl_n: u32,
    limit_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    primary: Option<String>,
}

impl ExperimentEngine for ToolEngine {
    fn kind(&self) -> Kind {
        Kind::of::<Tool>()
    }

    /// One program run per trial, no warm-up (the program's own start is
    /// part of what it measures: fio lays out its file first), 10 s.
    fn defaults(&self) -> Load {
        Load {
            threads: 1,
            connections: 1,
            duration: Some(Duration::from_secs(10)),
            warmup: Duration::ZERO,
            ..experiment_defaults()
        }
    }

    fn table(
        &self,
        loc: &Locator<'_>,
        _load: &mut Load,
        _spans: &mut Spans,
    ) -> Result<Arc<dyn Table>, ExperimentError> {
        let raw: RawTool = table_of(loc, self.name())?.unwrap_or_default();
        let mut t = ToolTable {
            file_bytes: 256 << 20,
            hpl_n: 2000,
            limit_s: 600.0,
            primary: None,
        };
        if let Some(s) = &raw.size {
            let bytes = crate::experiment::factor::parse_bytes(s.get_ref())
                .filter(|b| (bounds::MIN_TOOL_FILE..=bounds::MAX_TOOL_FILE).contains(b))
                .ok_or_else(|| {
                    loc.error(
                        s.span(),
                        "load.tool.size",
                        format!(
                            "must be a size from {} to {} (e.g. 256m, 1g)",
                            bounds::show_bytes(bounds::MIN_TOOL_FILE),
                            bounds::show_bytes(bounds::MAX_TOOL_FILE)
                        ),
                    )
                })?;
            t.file_bytes = bytes;
        }
        if let Some(n) = &raw.hpl_n {
            t.hpl_n = u32::try_from(*n.get_ref())
                .ok()
                .filter(|n| (100..=200_000).contains(n))
                .ok_or_else(|| loc.error(n.span(), "load.tool.hpl_n", "must be 100 to 200000"))?;
        }
        if let Some(l) = &raw.limit {
            let d = humantime::parse_duration(l.get_ref())
                .ok()
                .filter(|d| !d.is_zero() && *d <= bounds::MAX_TOOL_LIMIT)
                .ok_or_else(|| {
                    loc.error(
                        l.span(),
                        "load.tool.limit",
                        format!(
                            "must be a duration up to {} (e.g. 10m)",
                            bounds::show(bounds::MAX_TOOL_LIMIT)
                        ),
                    )
                })?;
            t.limit_s = d.as_secs_f64();
        }
        if let Some(p) = &raw.primary {
            let ok = !p.get_ref().is_empty()
                && p.get_ref()
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !ok {
                return Err(loc.error(
                    p.span(),
                    "load.tool.primary",
                    "must be a metric name (e.g. read_clat_p99_us)",
                ));
            }
            t.primary = Some(p.get_ref().clone());
        }
        Ok(Arc::new(t))
    }
}

impl Table for ToolTable {
    fn run(
        &self,
        load: &Load,
        offer: &Offer<'_>,
        stop: &Arc<AtomicBool>,
    ) -> Result<LoadResult, ExecError> {
        let mut cfg = ToolConfig::new(Place::Agent(offer.endpoint.clone()));
        cfg.load = load.clone();
        cfg.file_bytes = self.file_bytes;
        cfg.hpl_n = self.hpl_n;
        cfg.limit = Duration::from_secs_f64(self.limit_s);
        cfg.primary = self.primary.clone();
        measure::<Tool>(&cfg, stop)
    }
}

#[cfg(test)]
mod tests {
    fn parse(table: &str) -> Result<crate::experiment::Experiment, String> {
        super::super::parse_with_table("tool", "tool", table)
    }

    #[test]
    fn sizes_limits_and_primary_are_checked_with_line_and_key() {
        assert!(
            parse("size = \"64m\"\nhpl_n = 1000\nlimit = \"2m\"\nprimary = \"read_iops\"\n")
                .is_ok()
        );
        for (table, key) in [
            ("size = \"1\"\n", "load.tool.size"),
            ("size = \"lots\"\n", "load.tool.size"),
            ("hpl_n = 5\n", "load.tool.hpl_n"),
            ("limit = \"0s\"\n", "load.tool.limit"),
            ("primary = \"a b\"\n", "load.tool.primary"),
            ("file = 1\n", "file"),
        ] {
            let e = parse(table).unwrap_err();
            assert!(e.contains(key), "{table}: {e}");
        }
    }
}
