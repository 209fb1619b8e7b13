//! Where the time goes: the trials' resource monitoring (`tare-monitor`)
//! summarised per cell, and, along the attribution chain, where each step's
//! change of CPU per request landed ("+9.0 µs/request, 70% of it in
//! docker-proxy"). Read from the records only, like everything in reports.

use std::collections::BTreeMap;

use serde::Serialize;
use tare_analysis::stats::{paired_difference, welch_difference, Difference, Method};
use tare_analysis::Run;
use tare_monitor::{run_warning, Bound, CostShift, CpuPerRequest, MonitorRecord, Verdict};
use tare_record::Unit;

use crate::where_ran;

/// One cell's monitoring over its successful, monitored trials.
#[derive(Clone, Debug, Serialize)]
pub struct CellResources {
    pub cell: String,
    /// CPU per request over all its monitored trials (total CPU over total
    /// requests, never a mean of ratios).
    pub per_request: CpuPerRequest,
    /// Trials per verdict (`server-bound`, `generator-bound`, ...).
    pub verdicts: BTreeMap<String, usize>,
    pub trials: usize,
    /// Where each process ran: group (`server`, `generator`, each watched
    /// group) → CPU → share of its CPU time there, over the monitored
    /// trials (`where_ran`); empty for records from before it was sampled.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub where_ran: BTreeMap<String, BTreeMap<u32, f64>>,
    /// The groups that ran on the server's CPUs, in words.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shared_with_server: Vec<String>,
    /// What `per_request` counts per: the records' unit (requests,
    /// transactions, round trips, a benchmark program's runs).
    pub unit: Unit,
    /// The hosts its server was monitored on when not this machine (a
    /// target on another host, docs/remote.md): every figure but the
    /// generator's is that host's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// The hosts its remote generators ran on (`[load] hosts`); empty: the
    /// generator ran on this machine.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub generator_hosts: Vec<String>,
    /// Why its trials have no profile (the monitor's note: perf_event_open
    /// refused, a remote host), when none has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile_note: Option<String>,
}

impl CellResources {
    /// Where the server, network, rest and machine figures were measured:
    /// the remote hosts, `None` for this machine.
    pub(crate) fn measured_on(&self) -> Option<String> {
        (!self.hosts.is_empty()).then(|| self.hosts.join(", "))
    }

    /// Where its generator ran, when a component ran on a remote host:
    /// its hosts, or this machine beside a target on another; `None` when
    /// everything ran here.
    pub(crate) fn generator_on(&self) -> Option<String> {
        if !self.generator_hosts.is_empty() {
            Some(self.generator_hosts.join(", "))
        } else if !self.hosts.is_empty() {
            Some("this machine".into())
        } else {
            None
        }
    }
}

/// The one unit every cell counts CPU per, if they share one (else each
/// row says its own).
pub(crate) fn one_unit(res: &Resources) -> Option<Unit> {
    let mut u: Vec<Unit> = res.cells.iter().map(|c| c.unit).collect();
    u.dedup();
    match u.as_slice() {
        [u] => Some(*u),
        _ => None,
    }
}

/// The watched processes that show in some cell, sorted: a watched
/// process no cell used (conmon in a run without Podman, say) would be a
/// column of zeros.
pub(crate) fn watched_columns(res: &Resources) -> Vec<String> {
    let mut v: Vec<String> = res
        .cells
        .iter()
        .flat_map(|c| {
            c.per_request
                .watched_us
                .iter()
                .filter(|(_, us)| **us >= 0.05)
                .map(|(name, _)| name.clone())
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Which cells' servers were monitored on another host, host by host, in
/// the cells' order: the text and HTML reports name them.
pub(crate) fn by_host(res: &Resources) -> Vec<(&str, Vec<&str>)> {
    let mut by_host: Vec<(&str, Vec<&str>)> = Vec::new();
    for c in &res.cells {
        for h in &c.hosts {
            match by_host.iter_mut().find(|(n, _)| n == h) {
                Some((_, cells)) => cells.push(&c.cell),
                None => by_host.push((h, vec![&c.cell])),
            }
        }
    }
    by_host
}

/// How CPU per unit of work is shown: microseconds per request (or
/// transaction, round trip, megabit), milliseconds per run of a benchmark
/// program (seconds of CPU each, millions of µs). Returns the divisor of a
/// µs figure and its unit (`µs`, `ms`).
pub(crate) fn cpu_scale(unit: Unit) -> (f64, &'static str) {
    match unit {
        Unit::Runs => (1e3, "ms"),
        _ => (1.0, "µs"),
    }
}

/// What a cell's CPU figures are per, as a unit: `µs/request`, `ms/run`.
pub(crate) fn cpu_per(unit: Unit) -> String {
    format!("{}/{}", cpu_scale(unit).1, unit.noun())
}

/// Each reason some cells have no profile, with those cells, in the
/// cells' order: one line each in the text and HTML reports.
pub(crate) fn no_profile(res: &Resources) -> Vec<(&str, Vec<&str>)> {
    let mut by: Vec<(&str, Vec<&str>)> = Vec::new();
    for c in &res.cells {
        if let Some(n) = &c.profile_note {
            match by.iter_mut().find(|(w, _)| w == n) {
                Some((_, cells)) => cells.push(&c.cell),
                None => by.push((n, vec![&c.cell])),
            }
        }
    }
    by
}

/// One attribution step's change of CPU per request.
#[derive(Clone, Debug, Serialize)]
pub struct StepCost {
    pub from: String,
    pub to: String,
    pub shift: CostShift,
    /// The shift in words, as printed.
    pub text: String,
    /// What moved below the process level, when both cells were profiled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<StepProfile>,
}

/// A differential profile: the subsystems and functions whose CPU per
/// request moved between a step's two cells (docs/profiles.md).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StepProfile {
    /// (subsystem, µs per request in the first cell, in the second),
    /// largest move first; every subsystem either cell has.
    pub subsystems_us: Vec<(String, f64, f64)>,
    /// (function, first, second): the functions that moved most.
    pub functions_us: Vec<(String, f64, f64)>,
    /// (component, subsystem, first, second): the moves by where they
    /// ran (server, generator, docker-proxy, rest of the machine...).
    pub components_us: Vec<(String, String, f64, f64)>,
    /// Subsystem → the 95% interval of its move (second − first, µs per
    /// unit) across the trials: paired on the round (the mean within-round
    /// move, Student's t) when both cells' profiled trials pair up round
    /// by round (two rounds or more), else Welch's; a subsystem is absent
    /// without one (one profiled trial a side).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub subsystems_moved_ci_us: BTreeMap<String, (f64, f64)>,
    /// Function → the 95% interval of its move, for `functions_us`'s
    /// functions, as `subsystems_moved_ci_us`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub functions_moved_ci_us: BTreeMap<String, (f64, f64)>,
    /// How the intervals were computed: `paired_t` (on the round) or
    /// `welch_t` (unpaired); absent without intervals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved_ci_method: Option<Method>,
    /// The step's largest known cause, what removes it and the experiment
    /// lines that measure that (`crate::remedy`); absent when none is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remedy: Option<crate::remedy::Remedy>,
}

/// One profiled trial's CPU per unit, with its round when the run ran in
/// rounds (its trial number: docs/analysis.md).
pub(crate) type ProfiledTrial<'a> = (Option<u32>, &'a CpuPerRequest);

/// The interval of `value`'s move from `a`'s trials to `b`'s: paired on
/// the round when every trial of each has a partner in the other (two
/// rounds or more), else Welch's over all of them. A paired interval over
/// only some trials would be about other trials than the merged figures
/// it is printed beside (a failed trial, an unprofiled one).
fn moved_ci(
    a: &[ProfiledTrial],
    b: &[ProfiledTrial],
    value: impl Fn(&CpuPerRequest) -> f64,
) -> Option<Difference> {
    let pairs: Vec<(f64, f64)> = a
        .iter()
        .filter_map(|(ra, pa)| {
            let ra = (*ra)?;
            let (_, pb) = b.iter().find(|(rb, _)| *rb == Some(ra))?;
            Some((value(pa), value(pb)))
        })
        .collect();
    if pairs.len() >= 2 && pairs.len() == a.len() && pairs.len() == b.len() {
        return paired_difference(&pairs);
    }
    let side = |t: &[ProfiledTrial]| t.iter().map(|(_, p)| value(p)).collect::<Vec<f64>>();
    welch_difference(&side(a), &side(b))
}

/// Functions a step lists.
const STEP_FUNCTIONS: usize = 8;

fn moves<K: Ord + Clone>(a: &BTreeMap<K, f64>, b: &BTreeMap<K, f64>) -> Vec<(K, f64, f64)> {
    let keys: std::collections::BTreeSet<&K> = a.keys().chain(b.keys()).collect();
    let mut v: Vec<(K, f64, f64)> = keys
        .into_iter()
        .map(|k| {
            (
                k.clone(),
                a.get(k).copied().unwrap_or(0.0),
                b.get(k).copied().unwrap_or(0.0),
            )
        })
        .collect();
    v.sort_by(|x, y| (y.2 - y.1).abs().total_cmp(&(x.2 - x.1).abs()));
    v
}

impl StepProfile {
    /// `None` unless both cells were profiled.
    pub(crate) fn between(a: &CpuPerRequest, b: &CpuPerRequest) -> Option<StepProfile> {
        if a.profile_us.is_empty() || b.profile_us.is_empty() {
            return None;
        }
        let flat = |p: &CpuPerRequest| -> BTreeMap<(String, String), f64> {
            p.profile_us
                .iter()
                .flat_map(|(c, by)| by.iter().map(move |(s, v)| ((c.clone(), s.clone()), *v)))
                .collect()
        };
        let mut functions = moves(&a.functions_us, &b.functions_us);
        functions.truncate(STEP_FUNCTIONS);
        Some(StepProfile {
            subsystems_us: moves(&a.subsystems_us(), &b.subsystems_us()),
            functions_us: functions,
            components_us: moves(&flat(a), &flat(b))
                .into_iter()
                .map(|((c, s), x, y)| (c, s, x, y))
                .collect(),
            ..Default::default()
        })
    }

    /// Adds the intervals of the subsystems' and the listed functions'
    /// moves across the cells' profiled trials (trials without a profile
    /// are left out; a function missing from a trial's top list counts 0).
    pub(crate) fn with_intervals(mut self, a: &[ProfiledTrial], b: &[ProfiledTrial]) -> Self {
        let (a, b) = (profiled(a), profiled(b));
        for (sub, _, _) in &self.subsystems_us {
            let of = |p: &CpuPerRequest| p.subsystems_us().get(sub).copied().unwrap_or(0.0);
            if let Some(d) = moved_ci(&a, &b, of) {
                self.moved_ci_method = Some(d.method);
                if let Some(ci) = d.ci {
                    self.subsystems_moved_ci_us.insert(sub.clone(), ci);
                }
            }
        }
        for (f, _, _) in &self.functions_us {
            let of = |p: &CpuPerRequest| p.functions_us.get(f).copied().unwrap_or(0.0);
            if let Some(ci) = moved_ci(&a, &b, of).and_then(|d| d.ci) {
                self.functions_moved_ci_us.insert(f.clone(), ci);
            }
        }
        if self.subsystems_moved_ci_us.is_empty() {
            self.moved_ci_method = None;
        }
        self
    }
}

fn profiled<'a>(t: &[ProfiledTrial<'a>]) -> Vec<ProfiledTrial<'a>> {
    t.iter()
        .filter(|(_, p)| !p.profile_us.is_empty())
        .copied()
        .collect()
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Resources {
    pub cells: Vec<CellResources>,
    pub steps: Vec<StepCost>,
    /// Set when any trial was generator-bound.
    pub warning: Option<String>,
}

/// Request-weighted merge: each part's µs per request is total µs over total
/// requests.
fn merge(list: &[CpuPerRequest]) -> Option<CpuPerRequest> {
    let requests: u64 = list.iter().map(|c| c.requests).sum();
    if requests == 0 {
        return None;
    }
    let n = requests as f64;
    let w = |f: fn(&CpuPerRequest) -> f64| {
        list.iter().map(|c| f(c) * c.requests as f64).sum::<f64>() / n
    };
    let mut watched: BTreeMap<String, f64> = BTreeMap::new();
    for c in list {
        for (k, v) in &c.watched_us {
            *watched.entry(k.clone()).or_default() += v * c.requests as f64 / n;
        }
    }
    // The profile: over the trials that have one, weighed the same way.
    let profiled: Vec<&CpuPerRequest> = list.iter().filter(|c| !c.profile_us.is_empty()).collect();
    let pn = profiled.iter().map(|c| c.requests).sum::<u64>().max(1) as f64;
    let mut profile_us: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    let mut functions_us: BTreeMap<String, f64> = BTreeMap::new();
    for c in &profiled {
        let w = c.requests as f64 / pn;
        for (comp, by) in &c.profile_us {
            let e = profile_us.entry(comp.clone()).or_default();
            for (sub, v) in by {
                *e.entry(sub.clone()).or_default() += v * w;
            }
        }
        for (f, v) in &c.functions_us {
            *functions_us.entry(f.clone()).or_default() += v * w;
        }
    }
    Some(CpuPerRequest {
        requests,
        server_us: w(|c| c.server_us),
        generator_us: w(|c| c.generator_us),
        softirq_us: w(|c| c.softirq_us),
        proxy_us: w(|c| c.proxy_us),
        network_us: w(|c| c.network_us),
        watched_us: watched,
        sampler_us: w(|c| c.sampler_us),
        rest_us: w(|c| c.rest_us),
        machine_us: w(|c| c.machine_us),
        profile_us,
        functions_us,
    })
}

/// What one cell's monitored trials hold, gathered in trial order.
struct Seen {
    per: Vec<CpuPerRequest>,
    verdicts: Vec<Verdict>,
    cpus: where_ran::CpusSeen,
    unit: Unit,
    hosts: Vec<String>,
    generator_hosts: Vec<String>,
    /// Each `per`'s round, when the run ran in rounds (trials pair on it).
    rounds: Vec<Option<u32>>,
    /// Why a trial had no profile (its monitor's note).
    no_profile: Option<String>,
}

/// The run's monitoring, `None` when no trial was monitored.
pub(crate) fn resources(run: &Run, chain: Option<&[String]>) -> Option<Resources> {
    let (mut order, by_cell) = gather(run);
    if by_cell.is_empty() {
        return None;
    }
    // The report's cell order (the plan's), not the interleaved trial order.
    let planned = run.cell_ids();
    order.sort_by_key(|id| planned.iter().position(|p| p == id).unwrap_or(usize::MAX));
    let mut cells = Vec::new();
    let mut all_verdicts = Vec::new();
    for id in order {
        let seen = &by_cell[id];
        if let Some(c) = cell_resources(id, seen) {
            all_verdicts.extend(seen.verdicts.iter().cloned());
            cells.push(c);
        }
    }
    let steps = chain.map_or_else(Vec::new, |chain| step_costs(chain, &cells, &by_cell));
    Some(Resources {
        cells,
        steps,
        warning: run_warning(&all_verdicts),
    })
}

/// Each cell's monitored trials, and the cells in the order their first
/// monitored trial ran.
fn gather(run: &Run) -> (Vec<&str>, BTreeMap<&str, Seen>) {
    let mut by_cell: BTreeMap<&str, Seen> = BTreeMap::new();
    // Trials pair on their round only when the run ran in rounds.
    let rounds = run.in_rounds();
    let mut order: Vec<&str> = Vec::new();
    for t in &run.trials {
        let (Some(r), Some(m)) = (t.usable(), &t.monitor) else {
            continue;
        };
        let Ok(m) = MonitorRecord::from_json(m) else {
            continue;
        };
        if !order.contains(&t.cell.as_str()) {
            order.push(&t.cell);
        }
        let e = by_cell.entry(&t.cell).or_insert_with(|| Seen {
            per: Vec::new(),
            verdicts: Vec::new(),
            cpus: Default::default(),
            unit: r.unit(),
            hosts: Vec::new(),
            generator_hosts: Vec::new(),
            rounds: Vec::new(),
            no_profile: None,
        });
        for g in &r.generators {
            if !e.generator_hosts.contains(&g.host) {
                e.generator_hosts.push(g.host.clone());
            }
        }
        where_ran::add(&mut e.cpus, &m);
        if m.profile.is_none() && e.no_profile.is_none() {
            let why = m
                .notes
                .iter()
                .find(|n| n.starts_with("no profile"))
                .cloned()
                .unwrap_or_else(|| "no profile: recorded before tare sampled stacks".into());
            e.no_profile = Some(why);
        }
        if let Some(h) = &m.host {
            if !e.hosts.contains(h) {
                e.hosts.push(h.clone());
            }
        }
        if let Some(p) = m.per_request {
            e.per.push(p);
            e.rounds.push(rounds.then_some(t.trial));
        }
        if let Some(v) = m.verdict {
            e.verdicts.push(v);
        }
    }
    (order, by_cell)
}

/// Cell `id`'s summary, `None` when none of its trials has CPU per request.
fn cell_resources(id: &str, seen: &Seen) -> Option<CellResources> {
    let per = &seen.per;
    let per_request = merge(per)?;
    let profile_note = per
        .iter()
        .all(|p| p.profile_us.is_empty())
        .then(|| seen.no_profile.clone())
        .flatten();
    let mut counts = BTreeMap::new();
    for v in &seen.verdicts {
        *counts.entry(bound_name(v.bound)).or_insert(0) += 1;
    }
    let where_ran = where_ran::normalize(seen.cpus.clone());
    Some(CellResources {
        cell: id.to_string(),
        per_request,
        verdicts: counts,
        trials: per.len(),
        shared_with_server: where_ran::shared_with_server(&where_ran),
        where_ran,
        unit: seen.unit,
        hosts: seen.hosts.clone(),
        generator_hosts: seen.generator_hosts.clone(),
        profile_note,
    })
}

/// Along the attribution chain, where each step's change of CPU per
/// request landed, with its profile's intervals and remedy.
fn step_costs(
    chain: &[String],
    cells: &[CellResources],
    by_cell: &BTreeMap<&str, Seen>,
) -> Vec<StepCost> {
    let trials_of = |id: &str| -> Vec<ProfiledTrial> {
        by_cell
            .get(id)
            .map(|e| e.rounds.iter().copied().zip(e.per.iter()).collect())
            .unwrap_or_default()
    };
    let mut steps = Vec::new();
    for pair in chain.windows(2) {
        let find = |id: &str| cells.iter().find(|c| c.cell == id);
        if let (Some(a), Some(b)) = (find(&pair[0]), find(&pair[1])) {
            let shift = CostShift::between(&a.per_request, &b.per_request);
            steps.push(StepCost {
                from: pair[0].clone(),
                to: pair[1].clone(),
                text: shift.describe(cpu_scale(a.unit).0, &cpu_per(a.unit)),
                shift,
                profile: StepProfile::between(&a.per_request, &b.per_request).map(|p| {
                    let mut p = p.with_intervals(&trials_of(&pair[0]), &trials_of(&pair[1]));
                    p.remedy = crate::remedy::of(&p, &pair[0], &pair[1]);
                    p
                }),
            });
        }
    }
    steps
}

fn bound_name(b: Bound) -> String {
    b.name().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(nat: f64, tcp: f64) -> CpuPerRequest {
        let mut p = CpuPerRequest {
            requests: 1000,
            ..Default::default()
        };
        p.profile_us.insert(
            "server".into(),
            [("NAT".to_string(), nat), ("TCP/IP".to_string(), tcp)].into(),
        );
        p.functions_us.insert("nf_nat_manip_pkt".into(), nat);
        p
    }

    fn rounds(v: &[CpuPerRequest], in_rounds: bool) -> Vec<ProfiledTrial<'_>> {
        v.iter()
            .enumerate()
            .map(|(i, p)| (in_rounds.then_some(i as u32 + 1), p))
            .collect()
    }

    /// A step's intervals: paired on the round, the rounds' drift (TCP/IP
    /// moves with the machine) cancels and NAT's move is tight; the same
    /// trials unpaired give Welch's wider interval; one trial a side, none.
    #[test]
    fn a_steps_moves_get_intervals_paired_on_the_round() {
        let a = [trial(0.0, 10.0), trial(0.0, 14.0), trial(0.0, 8.0)];
        let b = [trial(1.4, 10.1), trial(1.6, 14.1), trial(1.5, 8.1)];
        let merged = |v: &[CpuPerRequest]| merge(v).unwrap();
        let base = StepProfile::between(&merged(&a), &merged(&b)).unwrap();
        let paired = base
            .clone()
            .with_intervals(&rounds(&a, true), &rounds(&b, true));
        assert_eq!(paired.moved_ci_method, Some(Method::PairedT));
        let (lo, hi) = paired.subsystems_moved_ci_us["NAT"];
        assert!(lo > 1.0 && hi < 2.0, "{lo} {hi}");
        let (lo, hi) = paired.subsystems_moved_ci_us["TCP/IP"];
        assert!(
            (lo - 0.1).abs() < 1e-6 && (hi - 0.1).abs() < 1e-6,
            "{lo} {hi}"
        );
        assert_eq!(
            paired.functions_moved_ci_us["nf_nat_manip_pkt"],
            paired.subsystems_moved_ci_us["NAT"]
        );
        let unpaired = base
            .clone()
            .with_intervals(&rounds(&a, false), &rounds(&b, false));
        assert_eq!(unpaired.moved_ci_method, Some(Method::WelchT));
        let (lo, hi) = unpaired.subsystems_moved_ci_us["TCP/IP"];
        assert!(lo < 0.0 && hi > 0.2, "drift is not cancelled: {lo} {hi}");
        // A trial without a partner (its pair failed): Welch's, over all.
        let uneven = base
            .clone()
            .with_intervals(&rounds(&a, true)[..2], &rounds(&b, true));
        assert_eq!(uneven.moved_ci_method, Some(Method::WelchT));
        let one = base.with_intervals(&rounds(&a, true)[..1], &rounds(&b, true)[..1]);
        assert!(one.subsystems_moved_ci_us.is_empty() && one.moved_ci_method.is_none());
        let json = serde_json::to_value(&paired).unwrap();
        assert_eq!(json["moved_ci_method"], "paired_t");
        assert!(json["subsystems_moved_ci_us"]["NAT"][0].is_f64(), "{json}");
        let json = serde_json::to_value(&one).unwrap();
        assert!(json.get("subsystems_moved_ci_us").is_none(), "{json}");
    }
}
