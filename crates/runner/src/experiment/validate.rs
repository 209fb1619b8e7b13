//! From the raw TOML shape to a checked [`Experiment`]: every value range,
//! every cross-reference (config names, attribution cells), every factor
//! that cannot apply to a placement. The first problem found is returned,
//! with the line and key it is at.

use std::collections::HashSet;
use std::path::Path;

use tare_analysis::PrecisionUnit;
use toml::Spanned;

use super::error::{ExperimentError, Locator};
use super::factor::FactorKind;
use super::raw::{RawCell, RawExperiment, RawFactors, RawLoad, RawTarget};
use super::settings::{load, trials};
use super::{
    Cell, ConfigSource, ConfigVariant, Experiment, Focus, PlacementKind, Target, TargetKind,
};

use tare_engine::bounds::MAX_CELLS;

type Result<T> = std::result::Result<T, ExperimentError>;

pub(super) fn validate(text: &str, path: &Path, configs: &ConfigSource) -> Result<Experiment> {
    let loc = Locator {
        file: path,
        text,
        inputs: Some(configs),
    };
    let raw: RawExperiment = toml::from_str(text).map_err(|e| loc.toml_error(&e))?;
    super::limits::cell_count(&loc, &raw)?;
    super::limits::names(&loc, &raw)?;

    let target = target(&loc, &raw, configs)?;
    // The target's own variants, then the files [target.configs] declares.
    let config_names: Vec<String> = target
        .server
        .variants
        .iter()
        .cloned()
        .chain(target.configs.iter().map(|c| c.name.clone()))
        .collect();
    let (factors, cells) = cells(&loc, &raw, &config_names)?;
    super::limits::levels(&loc, &raw, &factors)?;
    check_cells_apply(&loc, &raw, &cells)?;
    check_service_transport(&loc, &raw, &target, &cells)?;
    super::image::check_cells(&loc, &raw, &target.server, &cells)?;
    let no_load = RawLoad::default();
    let load = load(
        &loc,
        raw.load.as_ref().unwrap_or(&no_load),
        load_header(loc.text),
        target.server.engine(),
        target.server.name(),
    )?;
    check_workloads(&loc, &raw, &factors, &load)?;
    let trials = trials(&loc, raw.trials.as_ref())?;
    let attribution = attribution(&loc, &raw, &cells)?;
    // `[trials]` keys that are about the attribution chain.
    let trials_span = || raw.trials.as_ref().map(|t| t.span()).unwrap_or(0..0);
    if let (Focus::Chain, true) = (trials.focus, attribution.is_empty()) {
        return Err(loc.error(
            trials_span(),
            "trials.focus",
            "chain needs an [attribution] chain to focus on",
        ));
    }
    if let (PrecisionUnit::Share, true) = (trials.precision_unit, attribution.is_empty()) {
        return Err(loc.error(
            trials_span(),
            "trials.precision",
            "points are of the attribution gap: they need an [attribution] chain (or give a percentage)",
        ));
    }
    let cpus = super::cpus::cpus(&loc, raw.cpus.as_ref())?;
    let hosts = super::hosts::hosts(&loc, &raw, configs)?;
    let monitor = super::monitor::monitor(&loc, raw.monitor.as_ref())?;

    let mut exp = Experiment {
        name: raw.name.clone().unwrap_or_else(|| {
            path.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "experiment".into())
        }),
        description: raw.description.clone(),
        path: path.to_path_buf(),
        text: text.to_string(),
        target,
        factors,
        cells,
        load,
        trials,
        attribution,
        splits: Vec::new(),
        cpus,
        hosts,
        monitor,
    };
    if let Some(split) = raw.attribution.as_ref().and_then(|a| a.split.as_ref()) {
        if *split.get_ref() {
            exp.splits = super::split::split(&mut exp)
                .map_err(|m| loc.error(split.span(), "attribution.split", m))?;
            if exp.cells.len() > MAX_CELLS {
                return Err(loc.error(
                    split.span(),
                    "attribution.split",
                    format!("more than {MAX_CELLS} cells"),
                ));
            }
        }
    }
    Ok(exp)
}

fn target(loc: &Locator, raw: &RawExperiment, source: &ConfigSource) -> Result<Target> {
    let base = match source {
        ConfigSource::RelativeTo(dir) => dir.clone(),
        ConfigSource::RunDir(_) => std::path::PathBuf::from("."),
    };
    let t = raw.target.get_ref();
    let kind: TargetKind = t.kind.get_ref().parse().map_err(|_| {
        let names: Vec<&str> = TargetKind::all().map(TargetKind::name).collect();
        loc.error(
            t.kind.span(),
            "target.kind",
            format!(
                "unknown target `{}` ({})",
                t.kind.get_ref(),
                names.join(", ")
            ),
        )
    })?;
    let mut server = kind.target();
    let configs = configs(loc, t, kind, &server, source)?;
    if let Some(b) = &t.binary {
        server.binary = Some(b.get_ref().into());
    }
    if let Some(b) = &t.backend_binary {
        if let Some(c) = server.companion.as_mut() {
            c.binary = Some(b.get_ref().into());
        } else {
            let with: Vec<&str> = TargetKind::all()
                .filter(|k| k.target().companion.is_some())
                .map(TargetKind::name)
                .collect();
            return Err(loc.error(
                b.span(),
                "target.backend_binary",
                format!(
                    "`{kind}` has no backend (only {} do: their `tare serve`)",
                    with.join(", ")
                ),
            ));
        }
    }
    if let Some(u) = &t.rootless_user {
        rootless_user(loc, u)?;
    }
    let server = super::service::apply(loc, t, server, &base)?;
    let server = super::image::apply(loc, t, server, source)?;
    Ok(Target {
        // A user's image is the target itself, not a container option.
        image: match server.oci {
            Some(_) => None,
            None => t.image.as_ref().map(|i| i.get_ref().clone()),
        },
        server,
        rootless_user: t.rootless_user.as_ref().map(|u| u.get_ref().clone()),
        configs,
    })
}

/// `[target.configs.NAME]`: each config's text, from its file or inline,
/// for a target that takes config files.
fn configs(
    loc: &Locator,
    t: &RawTarget,
    kind: TargetKind,
    server: &tare_deploy::Target,
    source: &ConfigSource,
) -> Result<Vec<ConfigVariant>> {
    let mut configs = Vec::new();
    for (name, cfg) in &t.configs {
        let key = format!("target.configs.{}", name.get_ref());
        let c = cfg.get_ref();
        let text = match (&c.file, &c.text) {
            (Some(file), None) => {
                let p = match source {
                    ConfigSource::RelativeTo(dir) => dir.join(file.get_ref()),
                    ConfigSource::RunDir(dir) => dir.join("configs").join(name.get_ref()),
                };
                super::limits::read_file(&p).map_err(|e| {
                    loc.error(
                        file.span(),
                        &format!("{key}.file"),
                        format!("cannot read {}: {e}", p.display()),
                    )
                })?
            }
            (None, Some(text)) => text.clone(),
            _ => {
                return Err(loc.error(
                    cfg.span(),
                    &key,
                    "give exactly one of `file` (a path relative to this file) or `text`",
                ))
            }
        };
        if !server.config_files {
            return Err(loc.error(
                name.span(),
                &key,
                format!(
                    "{kind} takes no config file; its variants: {}",
                    server.variants.join(", ")
                ),
            ));
        }
        configs.push(ConfigVariant {
            name: name.get_ref().clone(),
            text,
        });
    }
    Ok(configs)
}

/// `[target] rootless_user`: a login name (useradd's rule), so it can be
/// passed on as is.
fn rootless_user(loc: &Locator, u: &Spanned<String>) -> Result<()> {
    let name = u.get_ref();
    let ok = !name.is_empty()
        && name.len() <= 32
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if ok {
        return Ok(());
    }
    Err(loc.error(
        u.span(),
        "target.rootless_user",
        format!("{name:?} is not a user name (1-32 of [A-Za-z0-9_.-], not starting with -)"),
    ))
}

type Factors = Vec<(FactorKind, Vec<String>)>;

/// The factors and the cells: either the product of `[factors]` or the
/// `[[cells]]` list, never both.
fn cells(loc: &Locator, raw: &RawExperiment, configs: &[String]) -> Result<(Factors, Vec<Cell>)> {
    match (&raw.factors, &raw.cells) {
        (Some(f), Some(_)) => Err(loc.error(
            f.span(),
            "factors",
            "use either [factors] (every combination) or [[cells]] (an explicit list), not both",
        )),
        (Some(f), None) => product(loc, f.get_ref(), configs),
        (None, Some(list)) => explicit(loc, list, configs),
        // One cell: repeated trials of one setup, in the reference placement.
        (None, None) => {
            let reference = PlacementKind::reference().name().to_string();
            Ok((
                vec![(FactorKind::Placement, vec![reference.clone()])],
                vec![Cell::new(vec![("placement".into(), reference)])
                    .map_err(|m| loc.error(0..0, "placement", m))?],
            ))
        }
    }
}

fn factor_kind(loc: &Locator, key: &Spanned<String>, prefix: &str) -> Result<FactorKind> {
    FactorKind::from_name(key.get_ref()).ok_or_else(|| {
        let known: Vec<_> = FactorKind::ALL.iter().map(|k| k.name()).collect();
        loc.error(
            key.span(),
            &format!("{prefix}{}", key.get_ref()),
            format!("unknown factor (known: {})", known.join(", ")),
        )
    })
}

fn product(loc: &Locator, raw: &RawFactors, configs: &[String]) -> Result<(Factors, Vec<Cell>)> {
    let mut factors: Factors = Vec::new();
    for (key, levels) in raw {
        let kind = factor_kind(loc, key, "factors.")?;
        let name = format!("factors.{}", key.get_ref());
        if levels.get_ref().is_empty() {
            return Err(loc.error(levels.span(), &name, "a factor needs at least one level"));
        }
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for level in levels.get_ref() {
            let text = kind
                .canonical(&level.get_ref().text(), configs)
                .map_err(|m| loc.error(level.span(), &name, m))?;
            if !seen.insert(text.clone()) {
                return Err(loc.error(
                    level.span(),
                    &name,
                    format!("level `{text}` is listed twice"),
                ));
            }
            out.push(text);
        }
        factors.push((kind, out));
    }
    // Checked: enough levels overflow `usize` (and could wrap to a small count).
    let total = factors
        .iter()
        .try_fold(1usize, |total, (_, l)| total.checked_mul(l.len()));
    if !matches!(total, Some(t) if t <= MAX_CELLS) {
        let span = raw.keys().next().map(|k| k.span()).unwrap_or(0..0);
        let count = match total {
            Some(t) => format!("{t} cells is more than {MAX_CELLS}"),
            None => format!("far more than {MAX_CELLS} cells (too many to count)"),
        };
        return Err(loc.error(
            span,
            "factors",
            format!("{count}: list the cells you need with [[cells]]"),
        ));
    }
    // The product in odometer order: the last factor varies fastest.
    let mut cells = vec![Vec::new()];
    for (kind, levels) in &factors {
        cells = cells
            .into_iter()
            .flat_map(|prefix: Vec<(String, String)>| {
                levels.iter().map(move |l| {
                    let mut c = prefix.clone();
                    c.push((kind.name().to_string(), l.clone()));
                    c
                })
            })
            .collect();
    }
    // A factor that does not apply to a cell's placement (storage for
    // native) is left out of the cell, and the cells that leaves the same
    // are one cell: native is not `storage=image` and `storage=volume`.
    let mut out: Vec<Cell> = Vec::new();
    for levels in cells {
        let cell = Cell::new(applicable(levels)).map_err(|m| {
            let span = raw.keys().next().map(|k| k.span()).unwrap_or(0..0);
            loc.error(span, "factors", m)
        })?;
        if !out.iter().any(|c| c.id == cell.id) {
            out.push(cell);
        }
    }
    // A level no cell keeps would be silently not measured.
    for (kind, levels) in &factors {
        let Some(option) = kind.needs() else { continue };
        for level in levels {
            let kept = out
                .iter()
                .any(|c| c.levels.iter().any(|(k, l)| k == kind.name() && l == level));
            if !kept && kind.default_level() != Some(level.as_str()) {
                let name = format!("factors.{}", kind.name());
                let span = raw
                    .keys()
                    .find(|k| k.get_ref() == kind.name())
                    .map_or(0..0, |k| k.span());
                return Err(loc.error(
                    span,
                    &name,
                    format!(
                        "`{}` = `{level}` applies to no cell: it needs a placement that takes {} ({})",
                        kind.name(),
                        option.describe(),
                        PlacementKind::accepting(option)
                    ),
                ));
            }
        }
    }
    Ok((factors, out))
}

/// `levels` without the factors its placement does not take.
fn applicable(levels: Vec<(String, String)>) -> Vec<(String, String)> {
    let placement = placement_of(&levels);
    levels
        .into_iter()
        .filter(|(name, _)| {
            FactorKind::from_name(name)
                .and_then(FactorKind::needs)
                .is_none_or(|option| placement.accepts(option))
        })
        .collect()
}

type RawCells = Spanned<Vec<Spanned<RawCell>>>;

fn explicit(loc: &Locator, list: &RawCells, configs: &[String]) -> Result<(Factors, Vec<Cell>)> {
    if list.get_ref().is_empty() {
        return Err(loc.error(list.span(), "cells", "the cell list is empty"));
    }
    // Factor order: the order keys first appear in.
    let mut factors: Factors = Vec::new();
    let mut parsed = Vec::new();
    for (i, cell) in list.get_ref().iter().enumerate() {
        let mut levels = Vec::new();
        for (key, level) in cell.get_ref() {
            let kind = factor_kind(loc, key, &format!("cells[{i}]."))?;
            let name = format!("cells[{i}].{}", key.get_ref());
            let text = kind
                .canonical(&level.get_ref().text(), configs)
                .map_err(|m| loc.error(level.span(), &name, m))?;
            match factors.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, ls)) if !ls.contains(&text) => ls.push(text.clone()),
                Some(_) => {}
                None => factors.push((kind, vec![text.clone()])),
            }
            levels.push((kind, text));
        }
        parsed.push((cell.span(), levels));
    }
    // Every cell names every factor that applies to it, so ids are
    // comparable: a factor a cell leaves out takes its default level, and
    // one without a default is an error. A factor its placement does not
    // take (storage for native) is left out, unless the cell sets it to
    // something other than the default, which `check_cells_apply` refuses.
    let mut cells: Vec<Cell> = Vec::new();
    for (i, (span, levels)) in parsed.into_iter().enumerate() {
        let placement = placement_of(
            &levels
                .iter()
                .map(|(k, l)| (k.name().to_string(), l.clone()))
                .collect::<Vec<_>>(),
        );
        let mut full = Vec::new();
        for (kind, _) in &factors {
            let set = levels.iter().find(|(k, _)| k == kind);
            let applies = kind.needs().is_none_or(|o| placement.accepts(o));
            if !applies && set.is_none_or(|(_, l)| kind.default_level() == Some(l.as_str())) {
                continue;
            }
            let level = match set {
                Some((_, l)) => l.clone(),
                None => match kind.default_level() {
                    Some(d) => d.to_string(),
                    None => {
                        return Err(loc.error(
                            span,
                            &format!("cells[{i}]"),
                            format!(
                                "this cell does not set `{}`, which other cells vary",
                                kind.name()
                            ),
                        ))
                    }
                },
            };
            full.push((kind.name().to_string(), level));
        }
        let cell =
            Cell::new(full).map_err(|m| loc.error(span.clone(), &format!("cells[{i}]"), m))?;
        if cells.iter().any(|c| c.id == cell.id) {
            return Err(loc.error(
                span,
                &format!("cells[{i}]"),
                format!("cell `{}` is listed twice", cell.id),
            ));
        }
        cells.push(cell);
    }
    if cells.len() > MAX_CELLS {
        return Err(loc.error(list.span(), "cells", format!("more than {MAX_CELLS} cells")));
    }
    Ok((factors, cells))
}

/// The placement levels name (checked canonical), else the reference.
fn placement_of(levels: &[(String, String)]) -> PlacementKind {
    levels
        .iter()
        .find(|(k, _)| k == FactorKind::Placement.name())
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or_else(PlacementKind::reference)
}

/// A service is told where to listen on each transport its cells use: a
/// command without `{socket}` cannot be a `transport = "unix"` cell.
fn check_service_transport(
    loc: &Locator,
    raw: &RawExperiment,
    target: &Target,
    cells: &[Cell],
) -> Result<()> {
    let Some(service) = &target.server.service else {
        return Ok(());
    };
    for cell in cells {
        if let Err(m) = service.check(cell.setup.transport) {
            let t = raw.target.get_ref();
            let span = t.command.as_ref().map_or(raw.target.span(), |c| c.span());
            return Err(loc.error(span, "target.command", format!("cell `{}`: {m}", cell.id)));
        }
    }
    Ok(())
}

/// A factor that sets a deployment option needs a placement that honours
/// it (container factors a container, netem delay a namespace tare made),
/// except at its default level, which means "no option": anything else
/// would silently measure two identical cells under two names.
fn check_cells_apply(loc: &Locator, raw: &RawExperiment, cells: &[Cell]) -> Result<()> {
    // Point at the factor's key ([factors]) or at the cell ([[cells]]).
    let at = |name: &str, index: usize| -> (std::ops::Range<usize>, String) {
        if let Some(f) = &raw.factors {
            let span = f
                .get_ref()
                .keys()
                .find(|k| k.get_ref() == name)
                .map(|k| k.span());
            (span.unwrap_or(f.span()), format!("factors.{name}"))
        } else if let Some(c) = &raw.cells {
            let span = c.get_ref().get(index).map(|c| c.span());
            (span.unwrap_or(c.span()), format!("cells[{index}].{name}"))
        } else {
            (0..0, name.to_string())
        }
    };
    for (index, cell) in cells.iter().enumerate() {
        let placement = cell.placement();
        for (name, level) in &cell.levels {
            let kind = FactorKind::from_name(name).expect("levels hold known factors");
            // A default level means "no option": fine anywhere.
            let special = kind.default_level() != Some(level.as_str());
            let bad = kind
                .needs()
                .filter(|option| special && !placement.accepts(*option))
                .map(|option| {
                    format!(
                        "a placement that takes {} ({})",
                        option.describe(),
                        PlacementKind::accepting(option)
                    )
                });
            if let Some(need) = bad {
                let (span, key) = at(name, index);
                return Err(loc.error(
                    span,
                    &key,
                    format!(
                        "cell `{}`: `{name}` needs {need}; list only the cells that make sense with [[cells]]",
                        cell.id
                    ),
                ));
            }
            // A level the placement takes the factor but not (a guest and
            // a host path): its reason, when the file is read.
            let refused = (kind == FactorKind::Storage)
                .then(|| level.parse::<tare_deploy::Storage>().ok())
                .flatten()
                .and_then(|s| placement.refuses_storage(s));
            if let Some(why) = refused {
                let (span, key) = at(name, index);
                return Err(loc.error(span, &key, format!("cell `{}`: {why}", cell.id)));
            }
        }
    }
    Ok(())
}

/// Every `workload` level is something the experiment's engine can send
/// (`Table::with_workload`), so a typo fails when the file is read.
fn check_workloads(
    loc: &Locator,
    raw: &RawExperiment,
    factors: &Factors,
    load: &super::LoadSettings,
) -> Result<()> {
    let Some((_, levels)) = factors.iter().find(|(k, _)| *k == FactorKind::Workload) else {
        return Ok(());
    };
    for level in levels {
        if let Err(e) = load.table.with_workload(level) {
            let name = FactorKind::Workload.name();
            let (span, key) = match (&raw.factors, &raw.cells) {
                (Some(f), _) => (
                    f.get_ref()
                        .keys()
                        .find(|k| k.get_ref() == name)
                        .map_or(f.span(), |k| k.span()),
                    format!("factors.{name}"),
                ),
                (None, Some(c)) => (c.span(), format!("cells[].{name}")),
                (None, None) => (0..0, name.to_string()),
            };
            return Err(loc.error(
                span,
                &key,
                format!("`{level}`: {e} (engine {})", load.engine.name()),
            ));
        }
    }
    Ok(())
}

/// The chain and its fallback, each entry selecting exactly one cell by
/// some of its levels (`placement=native` is enough when only one cell is native).
fn attribution(loc: &Locator, raw: &RawExperiment, cells: &[Cell]) -> Result<Vec<Vec<String>>> {
    let Some(a) = &raw.attribution else {
        return Ok(Vec::new());
    };
    let mut chains = vec![chain(loc, "attribution.chain", &a.chain, cells)?];
    if let Some(f) = &a.fallback {
        chains.push(chain(loc, "attribution.fallback", f, cells)?);
    }
    Ok(chains)
}

fn chain(
    loc: &Locator,
    key: &str,
    list: &Spanned<Vec<Spanned<String>>>,
    cells: &[Cell],
) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for entry in list.get_ref() {
        let mut wanted = Vec::new();
        for part in entry
            .get_ref()
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            let Some((k, v)) = part.split_once('=') else {
                return Err(loc.error(entry.span(), key, format!("`{part}` is not factor=level")));
            };
            wanted.push((k.trim().to_string(), v.trim().to_string()));
        }
        let matches: Vec<&Cell> = cells
            .iter()
            .filter(|c| {
                wanted
                    .iter()
                    .all(|(k, v)| c.levels.iter().any(|(ck, cv)| ck == k && cv == v))
            })
            .collect();
        let id = match matches.as_slice() {
            [one] => one.id.clone(),
            [] => {
                return Err(loc.error(
                    entry.span(),
                    key,
                    format!("`{}` matches no cell", entry.get_ref()),
                ))
            }
            many => {
                return Err(loc.error(
                    entry.span(),
                    key,
                    format!(
                        "`{}` matches {} cells; name more levels",
                        entry.get_ref(),
                        many.len()
                    ),
                ))
            }
        };
        if out.contains(&id) {
            return Err(loc.error(
                entry.span(),
                key,
                format!("cell `{id}` is in the chain twice"),
            ));
        }
        out.push(id);
    }
    if out.len() < 2 {
        return Err(loc.error(list.span(), key, "a chain needs at least two cells"));
    }
    // The waterfall gives each step's share to the one factor it changes,
    // by the rule analysis names the steps with.
    let levels = |id: &str| {
        cells
            .iter()
            .find(|c| c.id == id)
            .expect("resolved above")
            .levels
            .iter()
            .cloned()
            .collect::<std::collections::BTreeMap<String, String>>()
    };
    for (i, pair) in out.windows(2).enumerate() {
        let changed = tare_analysis::changed_factors(&levels(&pair[0]), &levels(&pair[1]));
        if changed.len() != 1 {
            return Err(loc.error(
                list.get_ref()[i + 1].span(),
                key,
                format!(
                    "step {} changes {} factors ({}); each step of a chain must change exactly one",
                    i + 1,
                    changed.len(),
                    changed.join(", ")
                ),
            ));
        }
    }
    Ok(out)
}

/// Where `[load]` (or the first `[load.ENGINE]`) starts in the file, for
/// the errors that point at the table itself; 0..0 when there is none.
fn load_header(text: &str) -> std::ops::Range<usize> {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if t.starts_with("[load]") || t.starts_with("[load.") {
            let start = at + (line.len() - t.len());
            return start..start + t.trim_end().len();
        }
        at += line.len();
    }
    0..0
}
