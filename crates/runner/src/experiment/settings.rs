//! `[load]` and `[trials]`: ranges, units and defaults, each mistake named
//! with its line and key (the rest of the file is checked in `validate`;
//! an engine's own table `[load.<engine>]` in its file under
//! `crate::engines`).

use std::str::FromStr;
use std::time::Duration;

use indexmap::IndexMap;
use serde::de::IgnoredAny;
use tare_engine::bounds;
use tare_engine::load::LoadKey;
use tare_engine::Load;
use toml::Spanned;

use super::error::{ExperimentError, Locator};
use super::raw::{RawFraction, RawLoad, RawTrials, LOAD_KEYS};
use super::{DeploymentPolicy, Focus, LoadSettings, TrialPolicy};
use crate::engines::{self, ExperimentEngine, Spans};
use tare_analysis::PrecisionUnit;

type Result<T> = std::result::Result<T, ExperimentError>;

fn duration(
    loc: &Locator,
    value: &Option<Spanned<String>>,
    key: &str,
    default: Duration,
) -> Result<Duration> {
    match value {
        None => Ok(default),
        Some(v) => humantime::parse_duration(v.get_ref()).map_err(|e| {
            loc.error(
                v.span(),
                key,
                format!("`{}` is not a duration ({e}); e.g. 3s, 500ms", v.get_ref()),
            )
        }),
    }
}

fn positive(
    loc: &Locator,
    value: &Option<Spanned<i64>>,
    key: &str,
    default: u32,
    max: u32,
) -> Result<u32> {
    match value {
        None => Ok(default),
        Some(v) if (1..=max as i64).contains(v.get_ref()) => Ok(*v.get_ref() as u32),
        Some(v) => Err(loc.error(v.span(), key, format!("must be between 1 and {max}"))),
    }
}

/// `[load]`: the engine (`engine`, else `default_engine`, the target's),
/// the shared settings typed once over that engine's defaults, the
/// engine's own table, and the checks every engine shares, each mistake at
/// its line and key.
pub(super) fn load(
    loc: &Locator,
    l: &RawLoad,
    table: std::ops::Range<usize>,
    default_engine: &str,
    target: &str,
) -> Result<LoadSettings> {
    check_keys(loc)?;
    let engine = engine(loc, l, default_engine, target)?;
    let mut shared = engine.defaults();
    let mut spans = Spans::new(table.clone());
    shared_settings(loc, l, table, &mut shared, &mut spans)?;
    let table = engine.table(loc, &mut shared, &mut spans)?;
    // As each run will have it: threads within a cell's connections.
    let effective = engines::effective(&shared);
    effective
        .check(None)
        .and_then(|()| effective.check_coalescing_closed_loop())
        .map_err(|e| {
            let (span, key) = spans.of(e.key);
            loc.error(span, &key, e.message)
        })?;
    Ok(LoadSettings {
        engine,
        shared,
        table,
    })
}

/// `[load] engine`, else the target's own, when it can load a `target`
/// target; no other engine's table may be written.
fn engine(
    loc: &Locator,
    l: &RawLoad,
    default_engine: &str,
    target: &str,
) -> Result<&'static dyn ExperimentEngine> {
    let natural = engines::by_name(default_engine).expect("targets name registered engines");
    let engine = match &l.engine {
        None => natural,
        Some(e) => {
            let engine = engines::by_name(e.get_ref()).ok_or_else(|| {
                loc.error(
                    e.span(),
                    "load.engine",
                    format!(
                        "unknown engine `{}` ({})",
                        e.get_ref(),
                        engines::names().join(", ")
                    ),
                )
            })?;
            if engine.name() != natural.name() && !engine.loads_any_target() {
                return Err(loc.error(
                    e.span(),
                    "load.engine",
                    format!("engine `{}` cannot load a {target} target", e.get_ref()),
                ));
            }
            engine
        }
    };
    for other in engines::REGISTRY
        .iter()
        .filter(|o| o.name() != engine.name())
    {
        if let Some(span) = table_span(loc, other.name())? {
            return Err(loc.error(
                span,
                &format!("load.{}", other.name()),
                format!(
                    "this experiment's engine is {}, which would ignore [load.{}]",
                    engine.name(),
                    other.name()
                ),
            ));
        }
    }
    Ok(engine)
}

/// The settings every engine shares, over the engine's defaults in
/// `shared`, each one's span noted for the checks that follow.
fn shared_settings(
    loc: &Locator,
    l: &RawLoad,
    table: std::ops::Range<usize>,
    shared: &mut Load,
    spans: &mut Spans,
) -> Result<()> {
    if let Some(v) = &l.threads {
        shared.threads = positive(
            loc,
            &l.threads,
            "load.threads",
            1,
            bounds::MAX_THREADS as u32,
        )? as usize;
        spans.set(LoadKey::Threads, v.span(), "load.threads");
    }
    if let Some(v) = &l.connections {
        shared.connections = positive(
            loc,
            &l.connections,
            "load.connections",
            1,
            bounds::MAX_CONNECTIONS as u32,
        )? as usize;
        spans.set(LoadKey::Connections, v.span(), "load.connections");
    }
    let default_duration = shared.duration.unwrap_or(Duration::from_secs(3));
    let d = duration(loc, &l.duration, "load.duration", default_duration)?;
    if d < Duration::from_millis(100) {
        let span = l.duration.as_ref().map(|d| d.span()).unwrap_or(table);
        return Err(loc.error(span, "load.duration", "must be at least 100ms"));
    }
    shared.duration = Some(d);
    shared.warmup = duration(loc, &l.warmup, "load.warmup", shared.warmup)?;
    shared.timeout = duration(loc, &l.timeout, "load.timeout", shared.timeout)?;
    shared.ramp = duration(loc, &l.ramp, "load.ramp", shared.ramp)?;
    shared.rate = l.rate.as_ref().map(|r| *r.get_ref());
    shared.arrivals = parsed(loc, &l.arrivals, "load.arrivals")?.unwrap_or(shared.arrivals);
    shared.slo = parsed(loc, &l.slo, "load.slo")?;
    shared.io = parsed(loc, &l.io, "load.io")?.unwrap_or(shared.io);
    let keys = [
        (LoadKey::Duration, l.duration.as_ref().map(|v| v.span())),
        (LoadKey::Warmup, l.warmup.as_ref().map(|v| v.span())),
        (LoadKey::Timeout, l.timeout.as_ref().map(|v| v.span())),
        (LoadKey::Ramp, l.ramp.as_ref().map(|v| v.span())),
        (LoadKey::Rate, l.rate.as_ref().map(|v| v.span())),
        (LoadKey::Arrivals, l.arrivals.as_ref().map(|v| v.span())),
        (LoadKey::Slo, l.slo.as_ref().map(|v| v.span())),
        (LoadKey::Io, l.io.as_ref().map(|v| v.span())),
    ];
    for (key, span) in keys {
        if let Some(span) = span {
            spans.set(key, span, format!("load.{}", key.name()));
        }
    }
    Ok(())
}

/// A key of `[load]` that is neither a shared setting nor a registered
/// engine's table is a mistake (a typo of either), named at its line.
fn check_keys(loc: &Locator) -> Result<()> {
    let keys: IndexMap<Spanned<String>, IgnoredAny> =
        engines::value_at(loc, &["load"])?.unwrap_or_default();
    let names = engines::names();
    for key in keys.keys() {
        let k = key.get_ref().as_str();
        if !LOAD_KEYS.contains(&k) && !names.contains(&k) {
            let expected: Vec<String> = LOAD_KEYS
                .iter()
                .chain(&names)
                .map(|k| format!("`{k}`"))
                .collect();
            return Err(loc.error(
                key.span(),
                k,
                format!(
                    "unknown field `{k}`, expected one of {}",
                    expected.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Where `[load.<name>]` is written, if it is.
fn table_span(loc: &Locator, name: &str) -> Result<Option<std::ops::Range<usize>>> {
    let keys: IndexMap<Spanned<String>, IgnoredAny> =
        engines::value_at(loc, &["load"])?.unwrap_or_default();
    Ok(keys.keys().find(|k| k.get_ref() == name).map(|k| k.span()))
}

/// A value typed by its `FromStr` (arrivals, objectives, io), its error at
/// its line.
fn parsed<T: FromStr<Err = String>>(
    loc: &Locator,
    value: &Option<Spanned<String>>,
    key: &str,
) -> Result<Option<T>> {
    value
        .as_ref()
        .map(|v| {
            v.get_ref()
                .parse::<T>()
                .map_err(|e| loc.error(v.span(), key, e))
        })
        .transpose()
}

/// How long a run with `[trials] precision` and no `budget` may take.
const DEFAULT_BUDGET: Duration = Duration::from_secs(600);

/// `"3%"`, `"0.03"` or `0.03` as a fraction.
fn fraction(raw: &RawFraction) -> Option<f64> {
    let f = match raw {
        RawFraction::Number(n) => *n,
        RawFraction::Text(t) => match t.trim().strip_suffix('%') {
            Some(pct) => pct.trim().parse::<f64>().ok()? / 100.0,
            None => t.trim().parse().ok()?,
        },
    };
    f.is_finite().then_some(f)
}

/// `[trials] precision`: a fraction (`"3%"`, `0.03`: of each change), or
/// `"5 points"` (`"5pt"`: of each step's share of the gap), as the
/// fraction and its unit.
fn precision_target(raw: &RawFraction) -> Option<(f64, PrecisionUnit)> {
    if let RawFraction::Text(t) = raw {
        let t = t.trim();
        let number = ["points", "point", "pts", "pt"]
            .iter()
            .find_map(|unit| t.strip_suffix(unit));
        if let Some(n) = number {
            let f = n.trim().parse::<f64>().ok()? / 100.0;
            return f.is_finite().then_some((f, PrecisionUnit::Share));
        }
    }
    Some((fraction(raw)?, PrecisionUnit::Change))
}

pub(super) fn trials(loc: &Locator, raw: Option<&Spanned<RawTrials>>) -> Result<TrialPolicy> {
    let empty = RawTrials::default();
    let t = raw.map(|r| r.get_ref()).unwrap_or(&empty);
    let count = positive(loc, &t.count, "trials.count", 3, bounds::MAX_TRIALS)?;
    let target = precision(loc, t)?;
    let precision = target.map(|(f, _)| f);
    let precision_unit = target.map(|(_, u)| u).unwrap_or_default();
    let budget = budget(loc, t, precision)?;
    // With a precision, `max` is only a backstop: the budget ends the run.
    let default_max = if precision.is_some() {
        bounds::MAX_TRIALS
    } else {
        count
    };
    let max = positive(loc, &t.max, "trials.max", default_max, bounds::MAX_TRIALS)?;
    if max < count {
        let span = t.max.as_ref().map(|m| m.span()).unwrap_or(0..0);
        return Err(loc.error(
            span,
            "trials.max",
            format!("must be at least trials.count ({count})"),
        ));
    }
    let max_rsd = match &t.max_rsd {
        None => 0.05,
        Some(v) if *v.get_ref() > 0.0 && *v.get_ref() < 10.0 => *v.get_ref(),
        Some(v) => {
            return Err(loc.error(
                v.span(),
                "trials.max_rsd",
                "must be a fraction above 0 (0.05 = 5%)",
            ))
        }
    };
    let seed = match &t.seed {
        None => None,
        Some(s) if *s.get_ref() >= 0 => Some(*s.get_ref() as u64),
        Some(s) => return Err(loc.error(s.span(), "trials.seed", "must not be negative")),
    };
    let deployment = match &t.deployment {
        None => DeploymentPolicy::PerTrial,
        Some(d) => match d.get_ref().as_str() {
            "per-trial" => DeploymentPolicy::PerTrial,
            "kept" => DeploymentPolicy::Kept,
            _ => return Err(loc.error(d.span(), "trials.deployment", "must be per-trial or kept")),
        },
    };
    Ok(TrialPolicy {
        focus: focus(loc, t, precision)?,
        precision_unit,
        count,
        max,
        max_rsd,
        precision,
        budget,
        seed,
        cooldown: super::limits::duration(
            loc,
            &t.cooldown,
            "trials.cooldown",
            duration(
                loc,
                &t.cooldown,
                "trials.cooldown",
                Duration::from_millis(500),
            )?,
            bounds::MAX_COOLDOWN,
        )?,
        deployment,
        exclude_disturbed: t.exclude_disturbed.as_ref().is_some_and(|b| *b.get_ref()),
    })
}

/// `[trials] precision`, its target and unit, which replaces `max_rsd`.
fn precision(loc: &Locator, t: &RawTrials) -> Result<Option<(f64, PrecisionUnit)>> {
    let target = t
        .precision
        .as_ref()
        .map(|p| {
            precision_target(p.get_ref())
                .filter(|(f, _)| *f > 0.0 && *f < 1.0)
                .ok_or_else(|| {
                    loc.error(
                        p.span(),
                        "trials.precision",
                        "must be a percentage above 0 and below 100, e.g. \"3%\" (or 0.03), or points of the attribution gap, e.g. \"5 points\"",
                    )
                })
        })
        .transpose()?;
    if let (Some(_), Some(rsd)) = (&target, &t.max_rsd) {
        return Err(loc.error(
            rsd.span(),
            "trials.max_rsd",
            "trials.precision replaces the per-cell max_rsd rule: set one of them",
        ));
    }
    Ok(target)
}

/// `[trials] budget`, the time limit of a precision (its default when
/// the precision has none).
fn budget(loc: &Locator, t: &RawTrials, precision: Option<f64>) -> Result<Option<Duration>> {
    Ok(match (&t.budget, precision) {
        (Some(b), None) => {
            return Err(loc.error(
                b.span(),
                "trials.budget",
                "is the time limit of trials.precision: set a precision too",
            ))
        }
        (Some(_), Some(_)) => {
            let d = duration(loc, &t.budget, "trials.budget", Duration::ZERO)?;
            let max = bounds::MAX_BUDGET;
            Some(super::limits::duration(
                loc,
                &t.budget,
                "trials.budget",
                d,
                max,
            )?)
        }
        (None, Some(_)) => Some(DEFAULT_BUDGET),
        (None, None) => None,
    })
}

/// `[trials] focus`: the cells of the rounds a precision adds.
fn focus(loc: &Locator, t: &RawTrials, precision: Option<f64>) -> Result<Focus> {
    let Some(f) = &t.focus else {
        return Ok(Focus::All);
    };
    let focus = match f.get_ref().as_str() {
        "all" => Focus::All,
        "chain" => Focus::Chain,
        _ => return Err(loc.error(f.span(), "trials.focus", "must be all or chain")),
    };
    if precision.is_none() {
        return Err(loc.error(
            f.span(),
            "trials.focus",
            "chooses the cells of the rounds trials.precision adds: set a precision too",
        ));
    }
    Ok(focus)
}
