//! The experiment each phase runs: one `config` level per candidate, written
//! as an ordinary experiment file (so `tare run --resume` and `tare report`
//! work on it like on any other run).

use std::path::PathBuf;

use crate::{TuneError, TuneOptions, TuneTarget};

fn secs(d: std::time::Duration) -> String {
    format!("{}ms", d.as_millis())
}

/// Writes `OUT/NAME.toml` and returns it with the run directory `OUT/NAME`.
pub(crate) fn write(
    opts: &TuneOptions,
    target_kind: TuneTarget,
    name: &str,
    levels: &[(String, String)],
) -> Result<(PathBuf, PathBuf), TuneError> {
    let mut doc = toml::Table::new();
    doc.insert("name".into(), format!("tune-{name}").into());
    doc.insert(
        "description".into(),
        format!("tare tune {}: {}", name, opts.config.display()).into(),
    );
    let mut configs = toml::Table::new();
    for (level, text) in levels {
        let mut t = toml::Table::new();
        t.insert("text".into(), text.clone().into());
        configs.insert(level.clone(), t.into());
    }
    let mut target = toml::Table::new();
    target.insert("kind".into(), target_kind.kind().into());
    target.insert("configs".into(), configs.into());
    doc.insert("target".into(), target.into());

    let mut factors = toml::Table::new();
    factors.insert(
        "placement".into(),
        vec![toml::Value::from(opts.placement.clone())].into(),
    );
    factors.insert(
        "config".into(),
        levels
            .iter()
            .map(|(l, _)| toml::Value::from(l.clone()))
            .collect::<Vec<_>>()
            .into(),
    );
    doc.insert("factors".into(), factors.into());

    let mut load = toml::Table::new();
    load.insert("threads".into(), i64::from(opts.threads).into());
    load.insert("connections".into(), i64::from(opts.connections).into());
    load.insert("duration".into(), secs(opts.duration).into());
    load.insert("warmup".into(), secs(opts.warmup).into());
    doc.insert("load".into(), load.into());

    let mut trials = toml::Table::new();
    trials.insert("count".into(), i64::from(opts.trials).into());
    // nginx (and a proxy's backend) stays up across a cell's trials: the
    // configs differ, not their start-up, and a session measures many cells.
    trials.insert("deployment".into(), "kept".into());
    trials.insert("cooldown".into(), secs(opts.cooldown).into());
    doc.insert("trials".into(), trials.into());

    let text =
        toml::to_string(&doc).map_err(|e| TuneError::Config(format!("experiment file: {e}")))?;
    let path = opts.out.join(format!("{name}.toml"));
    std::fs::write(&path, text).map_err(|source| TuneError::Io {
        context: format!("writing {}", path.display()),
        source,
    })?;
    Ok((path, opts.out.join(name)))
}
