//! The bounds an experiment file is held to beyond each key's type
//! (docs/experiments.md, "Limits"), all from `tare_engine::bounds`, so a
//! file and the command line refuse the same values: the file's size, the
//! number of cells (counted before any cell is built, so a huge list is
//! refused at once), names that become file names, and factor levels.
//! The shared `[load]` settings are bounded by `Load::check`.

use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use tare_engine::bounds::{self, MAX_CELLS};
use toml::Spanned;

use super::error::{ExperimentError, Locator};
use super::factor::{parse_bytes, FactorKind};
use super::raw::RawExperiment;

type Result<T> = std::result::Result<T, ExperimentError>;

/// Reads a file tare takes whole, bounded ([`bounds::read_file`]).
pub(crate) fn read_file(path: &Path) -> std::io::Result<String> {
    bounds::read_file(path)
}

/// `[[cells]]` holds at most [`MAX_CELLS`] entries: counted before any of
/// them is checked, so validation never works through a huge list.
pub(super) fn cell_count(loc: &Locator, raw: &RawExperiment) -> Result<()> {
    match &raw.cells {
        Some(list) if list.get_ref().len() > MAX_CELLS => Err(loc.error(
            list.span(),
            "cells",
            format!("{} cells is more than {MAX_CELLS}", list.get_ref().len()),
        )),
        _ => Ok(()),
    }
}

/// Names that become file or directory names: a config variant is written
/// to `configs/NAME` in the run directory; a host names its records. Each
/// is one plain path component (`bounds::path_name`).
pub(super) fn names(loc: &Locator, raw: &RawExperiment) -> Result<()> {
    let configs = raw
        .target
        .get_ref()
        .configs
        .keys()
        .map(|k| ("target.configs", k));
    let hosts = raw.hosts.keys().map(|k| ("hosts", k));
    for (table, name) in configs.chain(hosts) {
        bounds::path_name(name.get_ref()).map_err(|why| {
            loc.error(
                name.span(),
                &format!("{table}.{}", name.get_ref().escape_debug()),
                format!("the name {why}"),
            )
        })?;
    }
    Ok(())
}

/// Factor levels past their bounds: connections, container CPU and memory
/// limits, injected delay (the guest's vCPUs and memory are bounded where
/// they are read, in `factor`).
pub(super) fn levels(
    loc: &Locator,
    raw: &RawExperiment,
    factors: &[(FactorKind, Vec<String>)],
) -> Result<()> {
    for (kind, levels) in factors {
        for level in levels {
            if let Err(why) = level_bound(*kind, level) {
                let (span, key) = factor_at(raw, kind.name());
                return Err(loc.error(span, &key, format!("`{level}` {why}")));
            }
        }
    }
    Ok(())
}

/// One canonical level against its bound.
fn level_bound(kind: FactorKind, level: &str) -> std::result::Result<(), String> {
    match kind {
        FactorKind::Connections => match level.parse::<u64>() {
            Ok(n) if n <= bounds::MAX_CONNECTIONS as u64 => Ok(()),
            _ => Err(format!(
                "is more connections than {}",
                bounds::MAX_CONNECTIONS
            )),
        },
        FactorKind::Cpus if level != "none" => match level.parse::<f64>() {
            Ok(c) if c <= bounds::MAX_CPU_LIMIT => Ok(()),
            _ => Err(format!("is a CPU limit above {}", bounds::MAX_CPU_LIMIT)),
        },
        FactorKind::Memory if level != "none" => match parse_bytes(level) {
            Some(b) if (bounds::MIN_MEMORY..=bounds::MAX_MEMORY).contains(&b) => Ok(()),
            _ => Err(format!(
                "is not a memory limit from {} to {}",
                bounds::show_bytes(bounds::MIN_MEMORY),
                bounds::show_bytes(bounds::MAX_MEMORY)
            )),
        },
        FactorKind::Delay => match humantime::parse_duration(level) {
            Ok(d) => bounds::duration_at_most(d, bounds::MAX_DELAY),
            Err(_) => Ok(()),
        },
        _ => Ok(()),
    }
}

/// Where a factor is written: its key in `[factors]`, or the cell list.
fn factor_at(raw: &RawExperiment, name: &str) -> (Range<usize>, String) {
    match (&raw.factors, &raw.cells) {
        (Some(f), _) => (
            f.get_ref()
                .keys()
                .find(|k| k.get_ref() == name)
                .map_or(f.span(), Spanned::span),
            format!("factors.{name}"),
        ),
        (None, Some(c)) => {
            let span = c
                .get_ref()
                .iter()
                .find_map(|cell| cell.get_ref().keys().find(|k| k.get_ref() == name))
                .map_or(c.span(), Spanned::span);
            (span, format!("cells[].{name}"))
        }
        (None, None) => (0..0, name.to_string()),
    }
}

/// A duration key of `[trials]` against its bound, at its line.
pub(super) fn duration(
    loc: &Locator,
    value: &Option<Spanned<String>>,
    key: &str,
    d: Duration,
    max: Duration,
) -> Result<Duration> {
    bounds::duration_at_most(d, max).map_err(|m| {
        let span = value.as_ref().map_or(0..0, Spanned::span);
        loc.error(span, key, m)
    })?;
    Ok(d)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::{ConfigSource, Experiment};
    use super::*;

    fn parse(text: &str) -> std::result::Result<Experiment, String> {
        Experiment::parse(
            text,
            Path::new("exp.toml"),
            &ConfigSource::RelativeTo(".".into()),
        )
        .map_err(|e| e.to_string())
    }

    const TARGET: &str = "[target]\nkind = \"nginx\"\n";

    /// Each shared setting past its bound, from the file, is refused with
    /// its line and key, as the command line refuses the same value (both
    /// go through `Load::check` and `tare_engine::bounds`).
    #[test]
    fn values_past_their_bounds_are_refused_at_their_line() {
        for (load, key) in [
            ("duration = \"1000000h\"", "load.duration"),
            ("duration = \"25h\"", "load.duration"),
            ("warmup = \"2h\"", "load.warmup"),
            ("timeout = \"2h\"", "load.timeout"),
            ("ramp = \"2h\"", "load.ramp"),
            ("threads = 1025\nconnections = 2000", "load.threads"),
            ("connections = 1000001", "load.connections"),
            ("rate = 1e12", "load.rate"),
        ] {
            let e = parse(&format!("{TARGET}[load]\n{load}\n")).unwrap_err();
            assert!(
                e.starts_with("exp.toml:4:") && e.contains(&format!("`{key}`")),
                "{load}: {e}"
            );
        }
        assert!(parse(&format!("{TARGET}[load]\nduration = \"24h\"\n")).is_ok());
        for (trials, key) in [
            ("count = 1001", "trials.count"),
            ("max = 1001", "trials.max"),
            ("cooldown = \"2h\"", "trials.cooldown"),
            ("precision = \"5%\"\nbudget = \"8days\"", "trials.budget"),
        ] {
            let e = parse(&format!("{TARGET}[trials]\n{trials}\n")).unwrap_err();
            assert!(e.contains(&format!("`{key}`")), "{trials}: {e}");
        }
        for factor in ["connections = [16, 2000000]", "delay = [\"0ms\", \"1h\"]"] {
            let e = parse(&format!(
                "{TARGET}[factors]\nplacement = [\"lab-veth\"]\n{factor}\n"
            ))
            .unwrap_err();
            assert!(e.starts_with("exp.toml:5:"), "{factor}: {e}");
        }
    }

    /// `[load]` is optional, as docs/experiments.md says; a missing
    /// `[target]` names no unrelated key.
    #[test]
    fn load_is_optional_and_a_missing_table_names_no_other_key() {
        let e = parse(TARGET).unwrap();
        assert_eq!(e.load.engine.name(), "http");
        let e = parse("description = \"x\"\n[load]\nduration = \"2s\"\n").unwrap_err();
        assert!(e.contains("missing field `target`"), "{e}");
        assert!(!e.contains("`description`"), "{e}");
    }

    /// Regression: a config variant named `../../../../tmp/x` was written
    /// outside the run directory.
    #[test]
    fn names_that_become_file_names_are_one_plain_component() {
        for name in ["\"../../../../tmp/x\"", "\"a/b\"", "\"..\"", "\"a\\u0000\""] {
            let e = parse(&format!(
                "{TARGET}[target.configs.{name}]\ntext = \"events {{}}\"\n"
            ))
            .unwrap_err();
            assert!(e.starts_with("exp.toml:3:"), "{name}: {e}");
        }
        let long = "h".repeat(bounds::MAX_NAME + 1);
        let e = parse(&format!("{TARGET}[hosts.{long}]\nssh = \"u@10.0.0.1\"\n")).unwrap_err();
        assert!(e.contains("longer than"), "{e}");
    }

    /// Regression: 220k `[[cells]]` took over a minute to validate (each
    /// cell compared with every one before it, the 512-cell limit checked
    /// last). The count is checked first now. The bound is generous (the
    /// machine may be loaded): quadratic work on this list takes minutes.
    #[test]
    fn a_huge_cell_list_is_refused_quickly() {
        let mut text = TARGET.to_string();
        for i in 0..220_000 {
            text.push_str(&format!("[[cells]]\nconnections = {}\n", i + 1));
        }
        assert!(text.len() > 6_000_000);
        let t0 = std::time::Instant::now();
        let e = parse(&text).unwrap_err();
        assert!(e.contains("220000 cells is more than 512"), "{e}");
        let took = t0.elapsed();
        assert!(took < Duration::from_secs(60), "took {took:?}");
    }

    #[test]
    fn levels_past_their_bounds_are_refused() {
        assert!(level_bound(FactorKind::Connections, "1000000").is_ok());
        assert!(level_bound(FactorKind::Connections, "1000001").is_err());
        assert!(level_bound(FactorKind::Cpus, "2000").is_err());
        assert!(level_bound(FactorKind::Cpus, "none").is_ok());
        assert!(level_bound(FactorKind::Memory, "2048g").is_err());
        assert!(level_bound(FactorKind::Memory, "1k").is_err());
        assert!(level_bound(FactorKind::Memory, "512m").is_ok());
        assert!(level_bound(FactorKind::Delay, "11s").is_err());
        assert!(level_bound(FactorKind::Delay, "2ms").is_ok());
    }

    #[test]
    fn files_past_the_bound_are_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.toml");
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(bounds::MAX_FILE + 1).unwrap();
        let e = read_file(&p).unwrap_err();
        assert!(e.to_string().contains("larger than 16m"), "{e}");
        std::fs::write(&p, "x = 1\n").unwrap();
        assert_eq!(read_file(&p).unwrap(), "x = 1\n");
        use std::os::unix::ffi::OsStrExt;
        let bad = dir.path().join(std::ffi::OsStr::from_bytes(b"e\xff.toml"));
        std::fs::write(&bad, "x = 1\n").unwrap();
        assert!(read_file(&bad).unwrap_err().to_string().contains("UTF-8"));
    }
}
