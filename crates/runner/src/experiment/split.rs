//! `[attribution] split = true`: a chain step between a container and a
//! plain process (docker-host → native, say) changes more than the
//! placement: the container's seccomp filter and where its content and
//! logs live (the image's overlay filesystem) come with it. The project's
//! own measurement put ~11 of 17 points of such a step on overlayfs and ~2
//! on seccomp (docs/studies.md, "Why is `--network host` 17% slower than
//! native?"). Splitting the step adds the intermediate cells that change
//! one of those at a time, so the report can say "seccomp X%, storage Y%,
//! the rest Z%", each with its interval, instead of blaming the placement.
//!
//! For a step between container cell `C` and process cell `N`, the parts
//! run from `C` through `C + seccomp=unconfined` and then `+ storage=host-path`
//! (the deployment's own directory bind-mounted: the files native serves)
//! to `N`; reversed when the step goes from `N` to `C`. A part whose level
//! `C` already has is left out.

use serde::{Deserialize, Serialize};
use tare_deploy::SpecOption;

use super::{Cell, Experiment, FactorKind};

/// The levels a split sets on the container cell, in order.
const PARTS: &[(FactorKind, &str)] = &[
    (FactorKind::Seccomp, "unconfined"),
    (FactorKind::Storage, "host-path"),
];

/// One chain step split into its parts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepSplit {
    /// The step's number in its chain (1 = from the first cell to the second).
    pub step: usize,
    /// The sub-chain, from the step's first cell to its second, each cell
    /// changing one factor.
    pub chain: Vec<String>,
}

/// Whether `cell` runs in a container (takes container options).
fn in_container(cell: &Cell) -> bool {
    cell.placement().accepts(SpecOption::Container)
}

/// Splits every container ↔ process step of every chain of `exp`: adds
/// the split factors (at their defaults) to every container cell, the
/// intermediate cells after the container cell, and returns each chain's
/// splits (aligned with `exp.attribution`). `Err` when no step can be split.
pub(super) fn split(exp: &mut Experiment) -> Result<Vec<Vec<StepSplit>>, String> {
    if !exp.attribution.iter().any(|chain| {
        chain
            .windows(2)
            .any(|w| match (find(exp, &w[0]), find(exp, &w[1])) {
                (Some(a), Some(b)) => crosses(&exp.cells[a], &exp.cells[b]),
                _ => false,
            })
    }) {
        return Err(
            "no step of the chain goes between a container placement and a process: nothing to split"
                .into(),
        );
    }
    name_parts(exp)?;
    let mut splits = Vec::new();
    for chain in exp.attribution.clone() {
        let mut these = Vec::new();
        for (i, w) in chain.windows(2).enumerate() {
            let (Some(a), Some(b)) = (find(exp, &w[0]), find(exp, &w[1])) else {
                continue;
            };
            if !crosses(&exp.cells[a], &exp.cells[b]) {
                continue;
            }
            if let Some(parts) = split_step(exp, a, b, w)? {
                these.push(StepSplit {
                    step: i + 1,
                    chain: parts,
                });
            }
        }
        splits.push(these);
    }
    for (kind, levels) in exp.factors.iter_mut() {
        if let Some((_, level)) = PARTS.iter().find(|(k, _)| k == kind) {
            if !levels.iter().any(|l| l == level) {
                levels.push((*level).into());
            }
        }
    }
    Ok(splits)
}

/// Whether a step from `a` to `b` goes between a container and a process.
fn crosses(a: &Cell, b: &Cell) -> bool {
    in_container(a) != in_container(b)
}

fn find(exp: &Experiment, id: &str) -> Option<usize> {
    exp.cells.iter().position(|c| c.id == id)
}

/// Every container cell names the split factors, at their defaults
/// unless set: the parts then read `seccomp: default → unconfined`. The
/// chains follow the cells' new ids.
fn name_parts(exp: &mut Experiment) -> Result<(), String> {
    for (kind, _) in PARTS {
        if !exp.factors.iter().any(|(k, _)| k == kind) {
            exp.factors
                .push((*kind, vec![kind.default_level().unwrap_or_default().into()]));
        }
    }
    let mut renamed: Vec<(String, String)> = Vec::new();
    for cell in exp.cells.iter_mut().filter(|c| in_container(c)) {
        let mut levels = cell.levels.clone();
        for (kind, _) in PARTS {
            if !levels.iter().any(|(k, _)| k == kind.name()) {
                levels.push((
                    kind.name().into(),
                    kind.default_level().unwrap_or_default().into(),
                ));
            }
        }
        let new = Cell::new(ordered(levels, &exp.factors))?;
        if new.id != cell.id {
            renamed.push((cell.id.clone(), new.id.clone()));
            *cell = new;
        }
    }
    for chain in exp.attribution.iter_mut() {
        for id in chain.iter_mut() {
            if let Some((_, new)) = renamed.iter().find(|(old, _)| old == id) {
                *id = new.clone();
            }
        }
    }
    Ok(())
}

/// The sub-chain of the step `w` between cells `a` and `b` (one in a
/// container): from the container cell, one part changed at a time, each
/// intermediate cell added after it. `None` when no part differs.
fn split_step(
    exp: &mut Experiment,
    a: usize,
    b: usize,
    w: &[String],
) -> Result<Option<Vec<String>>, String> {
    let (c, reversed) = if in_container(&exp.cells[a]) {
        (a, false)
    } else {
        (b, true)
    };
    let mut parts = vec![exp.cells[c].id.clone()];
    let mut levels = exp.cells[c].levels.clone();
    let mut at = c;
    for (kind, level) in PARTS {
        let slot = levels
            .iter_mut()
            .find(|(k, _)| k == kind.name())
            .expect("filled above");
        if slot.1 == *level {
            continue;
        }
        slot.1 = (*level).into();
        let cell = Cell::new(levels.clone())?;
        at = match find(exp, &cell.id) {
            Some(existing) => existing,
            None => {
                exp.cells.insert(at + 1, cell.clone());
                at + 1
            }
        };
        parts.push(cell.id);
    }
    if parts.len() == 1 {
        return Ok(None);
    }
    parts.push(if reversed { w[0].clone() } else { w[1].clone() });
    if reversed {
        parts.reverse();
    }
    Ok(Some(parts))
}

/// `levels` in the experiment's factor order.
fn ordered(
    levels: Vec<(String, String)>,
    factors: &[(FactorKind, Vec<String>)],
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (kind, _) in factors {
        if let Some(l) = levels.iter().find(|(k, _)| k == kind.name()) {
            out.push(l.clone());
        }
    }
    out
}
