//! The text report: what `tare report DIR`, the end of `tare run` and
//! `tare compare` print on a terminal. Plain aligned columns, every median
//! with its interval, and a closing list of notes that says in words what
//! the markers mean and what to do about them.
//!
//! - [`cells`]: the per-cell table.
//! - [`waterfall`]: the attribution table (seed 000's waterfall: docs/studies.md,
//!   seed 000).
//! - [`compare`]: two runs, benchstat-style.
//! - [`notes`]: the notes collected while rendering.

mod cells;
mod compare;
mod notes;
mod waterfall;

use tare_analysis::stats::{MedianCi, CONFIDENCE};
use tare_analysis::{CellStats, Comparison};

use crate::report::{factor_order, Report};
use crate::units;
use notes::Notes;

/// The whole text report of one run.
pub(crate) fn report(r: &Report) -> String {
    let mut notes = Notes::default();
    let mut out = header(r);
    out.push('\n');
    out.push_str(&cells::section(r, &mut notes));
    out.push('\n');
    if let Some(m) = cells::metrics(r) {
        out.push_str(&m);
        out.push('\n');
    }
    if let Some(m) = cells::names(r) {
        out.push_str(&m);
        out.push('\n');
    }
    out.push_str(&waterfall::section(r, &mut notes));
    out.push('\n');
    if let Some(res) = &r.resources {
        out.push_str(&resources(res, &mut notes));
        out.push('\n');
    }
    if let Some(noise) = noise(&r.noise) {
        out.push_str(&noise);
        out.push('\n');
    }
    out.push_str(&fairness(r));
    for w in &r.warnings {
        notes.add(format!("reading the run: {w}"));
    }
    out.push_str(&notes.render());
    out
}

/// The text comparison of two runs.
pub(crate) fn comparison(c: &Comparison) -> String {
    let mut notes = Notes::default();
    let mut out = compare::section(c, &mut notes);
    out.push_str(&notes.render());
    out
}

fn header(r: &Report) -> String {
    let mut out = format!("run {}", r.run_id);
    if let Some(dir) = &r.dir {
        out.push_str(&format!(" ({})", dir.display()));
    }
    out.push('\n');
    if let Some(line) = r.provenance.as_ref().and_then(provenance_line) {
        out.push_str(&format!("  {line}\n"));
    }
    if r.cpus.server.is_some() || r.cpus.generator.is_some() {
        let side = |v: &Option<String>| {
            v.as_deref()
                .map_or("any CPU".into(), |l| format!("CPU {l}"))
        };
        let helpers = match (&r.cpus.helpers, &r.cpus.server) {
            (Some(h), Some(s)) if h == s => ", its helpers with it".to_string(),
            (Some(h), _) => format!(", helpers on CPU {h}"),
            (None, _) => String::new(),
        };
        out.push_str(&format!(
            "  server on {}{helpers}, generator on {} ([cpus])\n",
            side(&r.cpus.server),
            side(&r.cpus.generator)
        ));
    }
    let trials: usize = r.cells.iter().map(|c| c.trials).sum();
    let ok: usize = r.cells.iter().map(CellStats::ok).sum();
    out.push_str(&format!(
        "  {} cells with results, {trials} trials ({ok} ok)",
        r.cells.len()
    ));
    if !r.failed_cells.is_empty() {
        let n = r.failed_cells.len();
        out.push_str(&format!(
            ", {n} cell{} failed",
            if n == 1 { "" } else { "s" }
        ));
    }
    if !r.skipped_cells.is_empty() {
        out.push_str(&format!(
            ", {} skipped on this machine",
            r.skipped_cells.len()
        ));
    }
    out.push('\n');
    if let Some(d) = &r.drift {
        out.push_str(&format!(
            "  machine drift over the run: rounds ranged {}..{} of the run's average speed ({} rounds; trial noise left ±{})\n",
            units::change(d.min),
            units::change(d.max),
            d.rounds.len(),
            units::percent(d.residual_sd)
        ));
    }
    out
}

/// One line from `provenance.json`: tare version, kernel, CPU, host: the
/// keys the runner writes, looked up leniently (top level or one object
/// down), so the header survives schema growth.
fn provenance_line(p: &serde_json::Value) -> Option<String> {
    let find = |keys: &[&str]| -> Option<String> {
        let scalar = |v: &serde_json::Value| match v {
            serde_json::Value::String(s) if !s.is_empty() => Some(s.clone()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => None,
        };
        let obj = p.as_object()?;
        keys.iter()
            .find_map(|k| obj.get(*k).and_then(scalar))
            .or_else(|| {
                obj.values()
                    .filter_map(|v| v.as_object())
                    .find_map(|inner| keys.iter().find_map(|k| inner.get(*k).and_then(scalar)))
            })
    };
    let parts: Vec<String> = [
        find(&["tare_version", "tare"]).map(|v| format!("tare {v}")),
        find(&["kernel", "kernel_release", "uname"]).map(|v| format!("kernel {v}")),
        find(&["cpu_model", "cpu", "model_name"]),
        find(&["cpus", "cpu_count", "nproc"]).map(|v| format!("{v} CPUs")),
        find(&["governor"]).map(|v| format!("governor {v}")),
        find(&["hostname", "host"]).map(|v| format!("host {v}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!parts.is_empty()).then(|| parts.join(" · "))
}

/// The disturbed trials shown one per line; the rest are counted (the JSON
/// and HTML reports list every one).
const NOISE_LINES: usize = 8;

/// The disturbed trials, one line each with the monitor's reasons, the
/// first [`NOISE_LINES`] of them.
fn noise(n: &crate::noise::Noise) -> Option<String> {
    let mut out = format!("noise: {}\n", n.headline()?);
    if n.trials.len() > NOISE_LINES {
        let per_cell: Vec<String> = n
            .per_cell
            .iter()
            .map(|(cell, (bad, all))| format!("{cell} {bad}/{all}"))
            .collect();
        out.push_str(&format!("  disturbed per cell: {}\n", per_cell.join(", ")));
    }
    for t in n.trials.iter().take(NOISE_LINES) {
        out.push_str(&format!(
            "  {} #{}{}: {}\n",
            t.cell,
            t.trial,
            if t.excluded { " (excluded)" } else { "" },
            t.reasons.join("; ")
        ));
    }
    if n.trials.len() > NOISE_LINES {
        out.push_str(&format!(
            "  ... and {} more (every one in report.json's `noise.trials` and in report.html)\n",
            n.trials.len() - NOISE_LINES
        ));
    }
    Some(out)
}

fn fairness(r: &Report) -> String {
    match &r.findings {
        None => "fairness: not checked (no findings.json in this run)\n".into(),
        Some(f) if f.is_empty() => {
            "fairness: no difference between cells beyond the factors under test\n".into()
        }
        Some(f) => {
            let mut out = format!(
                "fairness: {} difference{} between cells that no factor under test explains\n",
                f.len(),
                if f.len() == 1 { "" } else { "s" }
            );
            for finding in f {
                out.push_str(&format!("  ! {}\n", finding.message));
            }
            out
        }
    }
}

/// Where each process ran, one line for all cells when they agree, else one
/// per cell; then each helper that shared the server's CPU, marked `!`.
fn where_ran(res: &crate::resources::Resources) -> String {
    let cells: Vec<_> = res
        .cells
        .iter()
        .filter(|c| !c.where_ran.is_empty())
        .collect();
    let Some(first) = cells.first() else {
        return String::new();
    };
    let line = |c: &crate::resources::CellResources| crate::where_ran::line(&c.where_ran);
    let same = cells
        .iter()
        .all(|c| line(c) == line(first) && c.shared_with_server == first.shared_with_server);
    let mut out = String::new();
    if same {
        out.push_str(&format!(
            "where it ran: {}
",
            line(first)
        ));
        for s in &first.shared_with_server {
            out.push_str(&format!(
                "  ! {s}
"
            ));
        }
    } else {
        out.push_str(
            "where it ran:
",
        );
        for c in &cells {
            out.push_str(&format!(
                "  {}: {}
",
                c.cell,
                line(c)
            ));
            for s in &c.shared_with_server {
                out.push_str(&format!(
                    "    ! {s}
"
                ));
            }
        }
    }
    out
}

/// `median [lo, hi]` through `fmt`.
fn with_interval(ci: &MedianCi, fmt: fn(f64) -> String) -> String {
    if ci.n < 2 && ci.hi <= ci.lo {
        return fmt(ci.median);
    }
    format!("{} [{}, {}]", fmt(ci.median), fmt(ci.lo), fmt(ci.hi))
}

/// The interval column's header: `req/s [95% CI]`, or the actual shared
/// confidence when every interval has the same lower one, or `[CI]` when
/// they differ (each row then says its own).
fn interval_header(name: &str, cis: &[&MedianCi]) -> String {
    match shared_confidence(cis) {
        Some(c) if c >= CONFIDENCE => format!("{name} [{} CI]", units::confidence(CONFIDENCE)),
        Some(c) => format!("{name} [{} CI]", units::confidence(c)),
        None => format!("{name} [CI]"),
    }
}

/// The confidence every interval has, if they all have the same.
fn shared_confidence(cis: &[&MedianCi]) -> Option<f64> {
    let first = cis.first()?.confidence;
    let same = |c: f64| (c - first).abs() < 1e-9 || (c >= CONFIDENCE && first >= CONFIDENCE);
    cis.iter().all(|ci| same(ci.confidence)).then_some(first)
}

/// A cell's levels in factor order, `, `-joined: a short name for a cell.
fn levels(cell: &CellStats, order: &[String]) -> String {
    let v: Vec<&str> = order
        .iter()
        .filter_map(|k| cell.factors.get(k).map(String::as_str))
        .collect();
    if v.is_empty() {
        cell.cell.clone()
    } else {
        v.join(", ")
    }
}

/// Which cells' servers were monitored on another host, host by host: their
/// rows are that host's machine, not this one.
fn measured_on(res: &crate::resources::Resources) -> String {
    crate::resources::by_host(res)
        .iter()
        .map(|(host, cells)| {
            format!(
                "  measured on host {host}: {} (server, network, rest and machine are {host}'s; \
                 a generator elsewhere counts in the cells table's generator CPU)\n",
                cells.join(", ")
            )
        })
        .collect()
}

/// A step's differential profile: the subsystems whose CPU per unit moved
/// by at least [`PROFILE_SHOWN`], then its top functions (docs/profiles.md).
fn step_profile(p: &crate::resources::StepProfile) -> String {
    use crate::table::{Align, Table};
    let shown = |x: f64, y: f64| (y - x).abs() >= PROFILE_SHOWN;
    let rows: Vec<_> = p
        .subsystems_us
        .iter()
        .filter(|(_, x, y)| shown(*x, *y))
        .take(PROFILE_ROWS)
        .collect();
    if rows.is_empty() {
        return format!("    (no subsystem moved by {PROFILE_SHOWN} µs or more)\n");
    }
    let mut t = Table::new(&[
        ("subsystem", Align::Left),
        ("from", Align::Right),
        ("to", Align::Right),
        ("moved [95% CI]", Align::Left),
        ("mostly in", Align::Left),
    ]);
    let ci = |ci: Option<&(f64, f64)>| {
        ci.map(|(lo, hi)| format!(" [{lo:+.1}, {hi:+.1}]"))
            .unwrap_or_default()
    };
    for (sub, x, y) in rows {
        // The component whose share of this subsystem moved most.
        let by = p
            .components_us
            .iter()
            .filter(|(_, s, _, _)| s == sub)
            .max_by(|a, b| (a.3 - a.2).abs().total_cmp(&(b.3 - b.2).abs()))
            .map(|(c, _, a, b)| format!("{c} {:+.1}", b - a))
            .unwrap_or_default();
        t.row(vec![
            sub.clone(),
            format!("{x:.1}"),
            format!("{y:.1}"),
            format!(
                "{:+.1}{}",
                y - x,
                ci(p.subsystems_moved_ci_us.get(sub.as_str()))
            ),
            by,
        ]);
    }
    let mut out = t.render(4);
    let top: Vec<String> = p
        .functions_us
        .iter()
        .filter(|(_, x, y)| shown(*x, *y))
        .take(5)
        .map(|(f, x, y)| {
            format!(
                "{f} {:+.1}{}",
                y - x,
                ci(p.functions_moved_ci_us.get(f.as_str()))
            )
        })
        .collect();
    if !top.is_empty() {
        out.push_str(&format!("    top functions: {}\n", top.join(", ")));
    }
    if let Some(r) = &p.remedy {
        out.push_str(&format!(
            "    what removes it: {}, {:.1} µs more in {}: {}\n",
            r.cause, r.extra_us, r.cell, r.change
        ));
        if let Some(e) = &r.experiment {
            out.push_str("    measure it with:\n");
            for l in e.lines() {
                out.push_str(&format!("      {l}\n"));
            }
        }
    }
    out
}

/// A subsystem is listed under a step when it moved this much (µs per unit).
const PROFILE_SHOWN: f64 = 0.1;
/// At most this many subsystems under a step.
const PROFILE_ROWS: usize = 8;

/// One line per reason some cells have no profile.
fn no_profile(res: &crate::resources::Resources) -> String {
    crate::resources::no_profile(res)
        .iter()
        .map(|(why, cells)| format!("  {} ({})\n", why, cells.join(", ")))
        .collect()
}

/// Where the CPU went, per cell and along the attribution chain.
fn resources(res: &crate::resources::Resources, notes: &mut Notes) -> String {
    use crate::table::{Align, Table};
    // One unit for the table when every cell counts the same work, else
    // each row says its own (`per`).
    let one_unit = crate::resources::one_unit(res);
    let mut out = match one_unit {
        Some(u) => {
            let (_, us) = crate::resources::cpu_scale(u);
            format!(
                "where the CPU goes ({us} of CPU per {}, over each cell's monitored trials)\n",
                u.noun()
            )
        }
        None => "where the CPU goes (CPU per unit of work, each row's in `per`, over each cell's monitored trials)\n"
            .to_string(),
    };
    let watched = crate::resources::watched_columns(res);
    let mut header: Vec<(&str, Align)> = vec![("cell", Align::Left)];
    if one_unit.is_none() {
        header.push(("per", Align::Left));
    }
    header.extend([
        ("server", Align::Right),
        ("generator", Align::Right),
        ("network", Align::Right),
    ]);
    header.extend(watched.iter().map(|w| (w.as_str(), Align::Right)));
    header.extend([
        ("rest", Align::Right),
        ("machine", Align::Right),
        ("verdicts", Align::Left),
    ]);
    let mut t = Table::new(&header);
    for c in &res.cells {
        let p = &c.per_request;
        let (scale, _) = crate::resources::cpu_scale(c.unit);
        let num = |us: f64| format!("{:.1}", us / scale);
        let mut row = vec![c.cell.clone()];
        if one_unit.is_none() {
            row.push(crate::resources::cpu_per(c.unit));
        }
        row.extend([num(p.server_us), num(p.generator_us), num(p.network_us)]);
        row.extend(
            watched
                .iter()
                .map(|w| num(p.watched_us.get(w).copied().unwrap_or(0.0))),
        );
        row.push(num(p.rest_us));
        row.push(num(p.machine_us));
        row.push(
            c.verdicts
                .iter()
                .map(|(k, n)| format!("{n} {k}"))
                .collect::<Vec<_>>()
                .join(", "),
        );
        t.row(row);
    }
    out.push_str(&t.render(2));
    if !res.steps.is_empty() {
        out.push_str(&format!(
            "along the chain, CPU per {} moved:\n",
            one_unit.map_or("unit of work", |u| u.noun())
        ));
        for s in &res.steps {
            out.push_str(&format!("  {} → {}: {}\n", s.from, s.to, s.text));
            if let Some(p) = &s.profile {
                out.push_str(&step_profile(p));
            }
        }
    }
    out.push_str(&no_profile(res));
    out.push_str(&measured_on(res));
    out.push_str(&where_ran(res));
    notes.add(
        "network: softirq (packet processing, machine-wide) + user-space proxies; under tick accounting softirq \
         overlaps the server's and generator's system time, so columns do not add up to machine (docs/monitor.md)",
    );
    if let Some(w) = &res.warning {
        notes.add(format!("generator-bound: {w}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run without Podman printed conmon, pasta, rootlessport and
    /// slirp4netns as columns of zeros beside docker-proxy.
    #[test]
    fn watched_processes_no_cell_used_are_not_columns() {
        let res = crate::resources::Resources {
            cells: vec![cell("native", 0.0), cell("docker-publish", 20.3)],
            steps: Vec::new(),
            warning: None,
        };
        let text = resources(&res, &mut Notes::default());
        let header = text.lines().nth(1).unwrap();
        assert!(header.contains("docker-proxy"), "{text}");
        assert!(!header.contains("conmon"), "{text}");
        assert!(!header.contains("pasta"), "{text}");
    }

    fn cell(name: &str, proxy: f64) -> crate::resources::CellResources {
        cell_of(name, proxy, tare_record::Unit::Requests, 7.0)
    }

    fn cell_of(
        name: &str,
        proxy: f64,
        unit: tare_record::Unit,
        server_us: f64,
    ) -> crate::resources::CellResources {
        let mut per_request = tare_monitor::CpuPerRequest {
            requests: 1000,
            server_us,
            generator_us: 7.0,
            machine_us: server_us + 7.0,
            ..Default::default()
        };
        per_request.watched_us.insert("docker-proxy".into(), proxy);
        per_request.watched_us.insert("conmon".into(), 0.0);
        per_request.watched_us.insert("pasta".into(), 0.01);
        crate::resources::CellResources {
            cell: name.into(),
            per_request,
            verdicts: Default::default(),
            trials: 1,
            where_ran: Default::default(),
            shared_with_server: Vec::new(),
            unit,
            hosts: Vec::new(),
            generator_hosts: Vec::new(),
            profile_note: None,
        }
    }

    /// Under a step: the subsystems that moved, the component that moved
    /// each most, the top functions; a cell without a profile says why in
    /// one line.
    #[test]
    fn a_step_lists_the_subsystems_that_moved_and_a_cell_without_a_profile_says_why() {
        let profiled = |nat: f64, tcp: f64| {
            let mut c = cell("x", 0.0);
            let p = &mut c.per_request;
            p.profile_us.insert(
                "server".into(),
                [("NAT".to_string(), nat), ("TCP/IP".to_string(), tcp)].into(),
            );
            p.profile_us
                .insert("generator".into(), [("TCP/IP".to_string(), tcp)].into());
            p.functions_us.insert("nf_nat_manip_pkt".into(), nat);
            c
        };
        let (mut a, mut b) = (profiled(0.0, 10.0), profiled(1.5, 10.02));
        a.cell = "lab-bridge".into();
        b.cell = "lab-nat".into();
        let mut remote = cell("remote", 0.0);
        remote.profile_note =
            Some("no profile: the target ran on srv, whose CPU tare does not sample".into());
        let step = crate::resources::StepCost {
            from: a.cell.clone(),
            to: b.cell.clone(),
            shift: tare_monitor::CostShift::between(&a.per_request, &b.per_request),
            text: "+1.5 µs/request".into(),
            profile: crate::resources::StepProfile::between(&a.per_request, &b.per_request).map(
                |mut p| {
                    p.subsystems_moved_ci_us.insert("NAT".into(), (1.2, 1.8));
                    p.functions_moved_ci_us
                        .insert("nf_nat_manip_pkt".into(), (1.2, 1.8));
                    p
                },
            ),
        };
        let res = crate::resources::Resources {
            cells: vec![a, b, remote],
            steps: vec![step],
            warning: None,
        };
        let text = resources(&res, &mut Notes::default());
        let nat = text
            .lines()
            .find(|l| l.trim_start().starts_with("NAT"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(
            nat.contains("0.0") && nat.contains("1.5") && nat.contains("+1.5 [+1.2, +1.8]"),
            "{nat}"
        );
        assert!(nat.contains("server +1.5"), "{nat}");
        // TCP/IP moved 0.04 µs: under the threshold, not listed.
        assert!(
            !text.lines().any(|l| l.trim_start().starts_with("TCP/IP")),
            "{text}"
        );
        assert!(
            text.contains("top functions: nf_nat_manip_pkt +1.5 [+1.2, +1.8]"),
            "{text}"
        );
        assert!(
            text.contains(
                "  no profile: the target ran on srv, whose CPU tare does not sample (remote)"
            ),
            "{text}"
        );
    }

    /// A target on another host is monitored there, and the
    /// report says where.
    #[test]
    fn cells_monitored_on_another_host_name_it() {
        let mut remote = cell("native", 0.0);
        remote.hosts = vec!["srv".into()];
        let res = crate::resources::Resources {
            cells: vec![remote, cell("docker-host", 0.0)],
            steps: Vec::new(),
            warning: None,
        };
        let text = resources(&res, &mut Notes::default());
        let line = text
            .lines()
            .find(|l| l.contains("measured on host srv"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(
            line.contains("native") && !line.contains("docker-host"),
            "{line}"
        );
    }

    /// A benchmark program's cells count runs: seconds of CPU each, shown
    /// in ms per run, not as millions of µs "per request".
    #[test]
    fn cpu_is_per_run_in_ms_for_a_benchmark_programs_cells() {
        use tare_record::Unit;
        let res = crate::resources::Resources {
            cells: vec![cell_of("hpcc", 0.0, Unit::Runs, 46_868_335.3)],
            steps: Vec::new(),
            warning: None,
        };
        let text = resources(&res, &mut Notes::default());
        assert!(
            text.starts_with("where the CPU goes (ms of CPU per run,"),
            "{text}"
        );
        assert!(text.contains("46868.3"), "{text}");
        assert!(!text.contains("46868335"), "{text}");
        // Mixed units: each row says its own.
        let res = crate::resources::Resources {
            cells: vec![
                cell_of("hpcc", 0.0, Unit::Runs, 46_868_335.3),
                cell_of("serve", 0.0, Unit::Requests, 7.0),
            ],
            steps: Vec::new(),
            warning: None,
        };
        let text = resources(&res, &mut Notes::default());
        assert!(text.contains("each row's in `per`"), "{text}");
        let rows: Vec<&str> = text.lines().skip(2).take(2).collect();
        assert!(
            rows[0].contains("ms/run") && rows[0].contains("46868.3"),
            "{text}"
        );
        assert!(
            rows[1].contains("µs/request") && rows[1].contains(" 7.0"),
            "{text}"
        );
    }
}
