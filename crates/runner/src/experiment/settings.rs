//! `[load]` and `[trials]`: ranges, units and defaults, each mistake named
//! with its line and key (the rest of the file is checked in `validate`).

use std::time::Duration;

use toml::Spanned;

use super::error::{ExperimentError, Locator};
use super::raw::{RawLoad, RawTrials};
use super::{DeploymentPolicy, Engine, HttpLoad, LoadSettings, PgLoad, TargetKind, TrialPolicy};

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

pub(super) fn load(
    loc: &Locator,
    raw: &Spanned<RawLoad>,
    kind: TargetKind,
) -> Result<LoadSettings> {
    let l = raw.get_ref();
    let natural = if kind.engine() == "pg" {
        Engine::Pg
    } else {
        Engine::Http
    };
    let engine = match &l.engine {
        None => natural,
        Some(e) => {
            let engine = match e.get_ref().as_str() {
                "http" => Engine::Http,
                "pg" => Engine::Pg,
                other => {
                    return Err(loc.error(
                        e.span(),
                        "load.engine",
                        format!("unknown engine `{other}` (http, pg)"),
                    ))
                }
            };
            if engine != natural {
                return Err(loc.error(
                    e.span(),
                    "load.engine",
                    format!(
                        "engine `{}` cannot load a {} target",
                        e.get_ref(),
                        kind.name()
                    ),
                ));
            }
            engine
        }
    };
    let duration_v = duration(loc, &l.duration, "load.duration", Duration::from_secs(3))?;
    if duration_v < Duration::from_millis(100) {
        let span = l.duration.as_ref().map(|d| d.span()).unwrap_or(raw.span());
        return Err(loc.error(span, "load.duration", "must be at least 100ms"));
    }
    let http = l.http.as_ref();
    let pg = l.pg.as_ref();
    let mode = match pg.and_then(|p| p.mode.as_ref()) {
        None => "prepared".to_string(),
        Some(m) if ["simple", "extended", "prepared"].contains(&m.get_ref().as_str()) => {
            m.get_ref().clone()
        }
        Some(m) => {
            return Err(loc.error(
                m.span(),
                "load.pg.mode",
                "must be simple, extended or prepared",
            ))
        }
    };
    let rate = match &l.rate {
        None => None,
        Some(r) if r.get_ref().is_finite() && *r.get_ref() > 0.0 => Some(*r.get_ref()),
        Some(r) => {
            return Err(loc.error(
                r.span(),
                "load.rate",
                "must be a positive number of requests per second",
            ))
        }
    };
    let arrivals = match &l.arrivals {
        None => "constant".to_string(),
        Some(a) if ["constant", "poisson"].contains(&a.get_ref().as_str()) => a.get_ref().clone(),
        Some(a) => return Err(loc.error(a.span(), "load.arrivals", "must be constant or poisson")),
    };
    let slo = match &l.slo {
        None => None,
        Some(s) => {
            tare_engine::find_max::parse_slo(s.get_ref())
                .map_err(|e| loc.error(s.span(), "load.slo", e))?;
            Some(s.get_ref().clone())
        }
    };
    let ramp = duration(loc, &l.ramp, "load.ramp", Duration::ZERO)?;
    if engine == Engine::Pg && ramp > duration_v {
        let span = l.ramp.as_ref().map(|r| r.span()).unwrap_or(raw.span());
        return Err(loc.error(
            span,
            "load.ramp",
            "must not be longer than load.duration (pg)",
        ));
    }
    let open_loop = l.rate.is_some() || l.slo.is_some();
    let coalesce = coalesce_mode(
        loc,
        http.and_then(|h| h.coalesce.as_ref()),
        "load.http",
        open_loop,
    )?;
    let pg_coalesce = coalesce_mode(
        loc,
        pg.and_then(|p| p.coalesce.as_ref()),
        "load.pg",
        open_loop,
    )?;
    if let Some(c) = pg.and_then(|p| p.coalesce.as_ref()) {
        if pg_coalesce != "off" && pg.and_then(|p| p.reconnect) == Some(true) {
            return Err(loc.error(
                c.span(),
                "load.pg.coalesce",
                "not with reconnect: connecting takes several round trips",
            ));
        }
    }
    let io = match &l.io {
        None => tare_engine::IoMode::Auto,
        Some(v) => v
            .get_ref()
            .parse::<tare_engine::IoMode>()
            .map_err(|e| loc.error(v.span(), "load.io", e))?,
    };
    let coalescing = match engine {
        Engine::Http => &coalesce,
        Engine::Pg => &pg_coalesce,
    };
    if let (tare_engine::IoMode::Uring, Some(v)) = (io, &l.io) {
        if coalescing != "off" {
            return Err(loc.error(
                v.span(),
                "load.io",
                "io_uring cannot coalesce (it needs receive timestamps, which only epoll takes); use auto or epoll",
            ));
        }
    }
    if let (Some(r), Some(s)) = (&l.rate, &l.slo) {
        let _ = s;
        return Err(loc.error(
            r.span(),
            "load.rate",
            "give either a rate or an slo (which searches the rate)",
        ));
    }
    Ok(LoadSettings {
        engine,
        rate,
        arrivals,
        ramp,
        slo,
        io: io.to_string(),
        threads: positive(loc, &l.threads, "load.threads", 2, 1024)?,
        connections: positive(loc, &l.connections, "load.connections", 50, 1_000_000)?,
        duration: duration_v,
        warmup: duration(loc, &l.warmup, "load.warmup", Duration::from_secs(1))?,
        timeout: duration(loc, &l.timeout, "load.timeout", Duration::from_secs(2))?,
        http: HttpLoad {
            path: http
                .and_then(|h| h.path.clone())
                .unwrap_or_else(|| "/".into()),
            method: http
                .and_then(|h| h.method.clone())
                .unwrap_or_else(|| "GET".into()),
            headers: http.map(|h| h.headers.clone()).unwrap_or_default(),
            body: http.and_then(|h| h.body.clone()),
            keepalive: http.and_then(|h| h.keepalive).unwrap_or(true),
            coalesce,
        },
        pg: PgLoad {
            mode,
            script: pg.and_then(|p| p.script.clone()),
            reconnect: pg.and_then(|p| p.reconnect).unwrap_or(false),
            coalesce: pg_coalesce,
            user: pg.and_then(|p| p.user.clone()),
            database: pg.and_then(|p| p.database.clone()),
        },
    })
}

/// `[load.http] coalesce` or `[load.pg] coalesce`: `off`, `auto` or a
/// pause, for a closed loop only.
fn coalesce_mode(
    loc: &Locator,
    raw: Option<&Spanned<String>>,
    table: &str,
    open_loop: bool,
) -> Result<String> {
    let Some(c) = raw else {
        return Ok("off".into());
    };
    let key = format!("{table}.coalesce");
    let mode = c
        .get_ref()
        .parse::<tare_engine::Coalesce>()
        .map_err(|e| loc.error(c.span(), &key, e))?;
    if mode != tare_engine::Coalesce::Off && open_loop {
        return Err(loc.error(
            c.span(),
            &key,
            "only for a closed loop: an open loop (rate, slo) keeps its schedule",
        ));
    }
    Ok(mode.to_string())
}

pub(super) fn trials(loc: &Locator, raw: Option<&Spanned<RawTrials>>) -> Result<TrialPolicy> {
    let empty = RawTrials::default();
    let t = raw.map(|r| r.get_ref()).unwrap_or(&empty);
    let count = positive(loc, &t.count, "trials.count", 3, 1000)?;
    let max = positive(loc, &t.max, "trials.max", count, 1000)?;
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
        count,
        max,
        max_rsd,
        seed,
        cooldown: duration(
            loc,
            &t.cooldown,
            "trials.cooldown",
            Duration::from_millis(500),
        )?,
        deployment,
    })
}
