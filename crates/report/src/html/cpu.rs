//! "Where the CPU goes": the trials' resource monitoring per cell, as the
//! text report's table has it (`crate::text`, `crate::resources`): CPU per
//! unit of work by component, the watched processes any cell used, the
//! verdicts, and along the attribution chain where each step's change of
//! CPU landed. A figure measured on another host carries that host's
//! name (a target on a remote host is monitored there, docs/remote.md),
//! and so does a generator that ran elsewhere.

use super::escape::html;
use crate::resources::{self, cpu_per, cpu_scale, CellResources, Resources, StepProfile};

/// The section, or nothing when no trial was monitored.
pub(super) fn section(res: Option<&Resources>) -> String {
    let Some(res) = res else {
        return String::new();
    };
    if res.cells.is_empty() {
        return String::new();
    }
    let one_unit = resources::one_unit(res);
    let watched = resources::watched_columns(res);
    let mut out = String::from("<section id=\"cpu\"><h2>Where the CPU goes</h2>\n");
    out.push_str(&match one_unit {
        Some(u) => format!(
            "<p class=\"sub\">{} of CPU per {}, over each cell's monitored trials.</p>\n",
            cpu_scale(u).1,
            html(u.noun())
        ),
        None => "<p class=\"sub\">CPU per unit of work, each row's in <em>per</em>, over each cell's monitored trials.</p>\n".into(),
    });
    out.push_str("<table><tr><th>cell</th>");
    if one_unit.is_none() {
        out.push_str("<th>per</th>");
    }
    out.push_str("<th>server</th><th>generator</th><th>network</th>");
    for w in &watched {
        out.push_str(&format!("<th>{}</th>", html(w)));
    }
    out.push_str("<th>rest</th><th>machine</th><th>verdicts</th></tr>\n");
    for c in &res.cells {
        out.push_str(&row(c, &watched, one_unit.is_none()));
    }
    out.push_str("</table>\n");
    out.push_str(&after_table(res, one_unit));
    out.push_str("</section>\n");
    out
}

/// One cell's row; on a remote host each figure is labelled with it.
fn row(c: &CellResources, watched: &[String], per: bool) -> String {
    let p = &c.per_request;
    let (scale, _) = cpu_scale(c.unit);
    let there = c.measured_on();
    let gen_on = c.generator_on();
    let td = |us: f64, host: Option<&str>| match host {
        Some(h) => format!(
            "<td>{:.1} <small class=\"muted\">on {}</small></td>",
            us / scale,
            html(h)
        ),
        None => format!("<td>{:.1}</td>", us / scale),
    };
    let at = there.as_deref();
    let mut s = format!("<tr><td><code>{}</code></td>", html(&c.cell));
    if per {
        s.push_str(&format!("<td>{}</td>", html(&cpu_per(c.unit))));
    }
    s.push_str(&td(p.server_us, at));
    s.push_str(&td(p.generator_us, gen_on.as_deref()));
    s.push_str(&td(p.network_us, at));
    for w in watched {
        s.push_str(&td(p.watched_us.get(w).copied().unwrap_or(0.0), at));
    }
    s.push_str(&td(p.rest_us, at));
    s.push_str(&td(p.machine_us, at));
    let verdicts: Vec<String> = c.verdicts.iter().map(|(k, n)| format!("{n} {k}")).collect();
    s.push_str(&format!("<td>{}</td></tr>\n", html(&verdicts.join(", "))));
    s
}

/// The chain's steps, the hosts the figures were measured on, and how to
/// read the network column.
fn after_table(res: &Resources, one_unit: Option<tare_record::Unit>) -> String {
    let mut s = String::new();
    if !res.steps.is_empty() {
        s.push_str(&format!(
            "<h3>Along the chain, CPU per {} moved</h3>\n<ul>",
            html(one_unit.map_or("unit of work", |u| u.noun()))
        ));
        let unit = one_unit.map_or("µs/unit".to_string(), cpu_per);
        for st in &res.steps {
            s.push_str(&format!(
                "<li><code>{}</code> → <code>{}</code>: {}",
                html(&st.from),
                html(&st.to),
                html(&st.text)
            ));
            if let Some(p) = &st.profile {
                s.push_str(&step_profile(p, &format!("{} → {}", st.from, st.to), &unit));
            }
            s.push_str("</li>");
        }
        s.push_str("</ul>\n");
    }
    for (why, cells) in resources::no_profile(res) {
        s.push_str(&format!(
            "<p class=\"muted\">{} ({}).</p>\n",
            html(why),
            html(&cells.join(", "))
        ));
    }
    for (host, cells) in resources::by_host(res) {
        let cells: Vec<String> = cells
            .iter()
            .map(|c| format!("<code>{}</code>", html(c)))
            .collect();
        s.push_str(&format!(
            "<p class=\"muted\">Measured on host {h}: {} (server, network, rest and machine are {h}'s; a generator elsewhere counts in the cells table's generator CPU).</p>\n",
            cells.join(", "),
            h = html(host)
        ));
    }
    s.push_str("<p class=\"muted\">network: softirq (packet processing, machine-wide) + user-space proxies; under tick accounting softirq overlaps the server's and generator's system time, so columns do not add up to machine (docs/monitor.md).</p>\n");
    if let Some(w) = &res.warning {
        s.push_str(&format!(
            "<ul class=\"warnings\"><li>generator-bound: {}</li></ul>\n",
            html(w)
        ));
    }
    s
}

/// A step's differential flame graph, then the subsystems and functions
/// that moved most, with their intervals (docs/profiles.md).
fn step_profile(p: &StepProfile, title: &str, unit: &str) -> String {
    let mut s = super::flame::step_graph(p, title, unit);
    let ci = |c: Option<&(f64, f64)>| {
        c.map(|(lo, hi)| format!(" [{lo:+.1}, {hi:+.1}]"))
            .unwrap_or_default()
    };
    let line = |rows: Vec<String>| rows.join(", ");
    let subs: Vec<String> = p
        .subsystems_us
        .iter()
        .filter(|(_, x, y)| (y - x).abs() >= 0.1)
        .take(8)
        .map(|(n, x, y)| format!("{n} {:+.1}{}", y - x, ci(p.subsystems_moved_ci_us.get(n))))
        .collect();
    let funcs: Vec<String> = p
        .functions_us
        .iter()
        .filter(|(_, x, y)| (y - x).abs() >= 0.1)
        .take(5)
        .map(|(n, x, y)| format!("{n} {:+.1}{}", y - x, ci(p.functions_moved_ci_us.get(n))))
        .collect();
    if !subs.is_empty() {
        s.push_str(&format!(
            "<p class=\"sub\">subsystems moved ({} [95% CI]): {}</p>",
            html(unit),
            html(&line(subs))
        ));
    }
    if !funcs.is_empty() {
        s.push_str(&format!(
            "<p class=\"sub\">top functions: {}</p>",
            html(&line(funcs))
        ));
    }
    if let Some(r) = &p.remedy {
        s.push_str(&format!(
            "<p>What removes it: <strong>{}</strong>, {:.1} {} more in <code>{}</code>: {}</p>",
            html(&r.cause),
            r.extra_us,
            html(unit),
            html(&r.cell),
            html(&r.change)
        ));
        if let Some(e) = &r.experiment {
            s.push_str(&format!(
                "<p class=\"sub\">Measure it with:</p><pre>{}</pre>",
                html(e)
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use tare_monitor::CpuPerRequest;
    use tare_record::Unit;

    fn cell(name: &str, hosts: &[&str], generators: &[&str]) -> CellResources {
        let mut per_request = CpuPerRequest {
            requests: 1000,
            server_us: 12.5,
            generator_us: 7.25,
            network_us: 3.0,
            rest_us: 1.0,
            machine_us: 24.0,
            ..Default::default()
        };
        per_request.watched_us.insert("docker-proxy".into(), 20.3);
        per_request.watched_us.insert("conmon".into(), 0.0);
        CellResources {
            cell: name.into(),
            per_request,
            verdicts: [("server-bound".to_string(), 2)].into_iter().collect(),
            trials: 2,
            where_ran: Default::default(),
            shared_with_server: Vec::new(),
            unit: Unit::Requests,
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
            generator_hosts: generators.iter().map(|h| h.to_string()).collect(),
            profile_note: None,
        }
    }

    #[test]
    fn the_table_has_each_component_and_labels_what_ran_on_a_remote_host() {
        let res = Resources {
            cells: vec![
                cell("placement=native", &[], &[]),
                cell("placement=docker-publish", &["srv"], &[]),
                cell("placement=docker-host", &[], &["gen1", "gen2"]),
            ],
            steps: Vec::new(),
            warning: Some("1 of 6 trials were generator-bound".into()),
        };
        let page = section(Some(&res));
        assert!(page.contains("<h2>Where the CPU goes</h2>"), "{page}");
        assert!(page.contains("µs of CPU per request"), "{page}");
        for h in [
            "server",
            "generator",
            "network",
            "docker-proxy",
            "rest",
            "machine",
        ] {
            assert!(page.contains(&format!("<th>{h}</th>")), "{h}: {page}");
        }
        // A watched process no cell used is no column.
        assert!(!page.contains("conmon"), "{page}");
        let row = |id: &str| {
            page.lines()
                .find(|l| l.contains(&format!("<code>{id}</code></td>")))
                .unwrap_or_else(|| panic!("{id}: {page}"))
                .to_string()
        };
        // All here: no labels.
        let native = row("placement=native");
        assert!(
            native.contains("<td>12.5</td><td>7.2</td><td>3.0</td><td>20.3</td>"),
            "{native}"
        );
        assert!(!native.contains(" on "), "{native}");
        // The target on srv: its figures are srv's, the generator this machine's.
        let remote = row("placement=docker-publish");
        assert!(
            remote.contains("<td>12.5 <small class=\"muted\">on srv</small></td>"),
            "{remote}"
        );
        assert!(
            remote.contains("7.2 <small class=\"muted\">on this machine</small>"),
            "{remote}"
        );
        assert_eq!(remote.matches("on srv").count(), 5, "{remote}");
        // Generators elsewhere, the target here: only the generator labelled.
        let gens = row("placement=docker-host");
        assert!(
            gens.contains("7.2 <small class=\"muted\">on gen1, gen2</small>"),
            "{gens}"
        );
        assert_eq!(gens.matches("<small").count(), 1, "{gens}");
        assert!(
            page.contains("Measured on host srv: <code>placement=docker-publish</code>"),
            "{page}"
        );
        assert!(page.contains("generator-bound: 1 of 6"), "{page}");
    }

    /// A profiled step gets its flame graph and its moves with intervals;
    /// a cell without a profile, one line saying why.
    #[test]
    fn a_profiled_step_has_a_flame_graph_and_a_cell_without_says_why() {
        let profiled = |nat: f64| {
            let mut c = cell("x", &[], &[]);
            c.per_request
                .profile_us
                .insert("server".into(), [("NAT".to_string(), nat)].into());
            c.per_request
                .functions_us
                .insert("nf_nat_manip_pkt".into(), nat);
            c
        };
        let (a, b) = (profiled(0.0), profiled(1.5));
        let mut p = StepProfile::between(&a.per_request, &b.per_request).unwrap();
        p.subsystems_moved_ci_us.insert("NAT".into(), (1.2, 1.8));
        let mut refused = cell("refused", &[], &[]);
        refused.profile_note = Some("no profile: perf_event_open: Permission denied (kernel.perf_event_paranoid = 2; tare needs root or CAP_PERFMON)".into());
        let res = Resources {
            cells: vec![a, b, refused],
            steps: vec![resources::StepCost {
                from: "lab-bridge".into(),
                to: "lab-nat".into(),
                shift: tare_monitor::CostShift::between(
                    &CpuPerRequest::default(),
                    &CpuPerRequest::default(),
                ),
                text: "+1.5 µs/request".into(),
                profile: Some(p),
            }],
            warning: None,
        };
        let page = section(Some(&res));
        assert_eq!(page.matches("data-chart=\"flame\"").count(), 1, "{page}");
        assert!(
            page.contains("server / NAT: 0.00 → 1.50 µs/request"),
            "{page}"
        );
        assert!(page.contains("NAT +1.5 [+1.2, +1.8]"), "{page}");
        assert!(
            page.contains("top functions: nf_nat_manip_pkt +1.5"),
            "{page}"
        );
        assert_eq!(
            page.matches("no profile: perf_event_open").count(),
            1,
            "{page}"
        );
        assert!(page.contains("CAP_PERFMON) (refused)."), "{page}");
    }

    #[test]
    fn mixed_units_say_each_rows_unit_and_nothing_monitored_is_no_section() {
        let mut hpcc = cell("hpcc", &[], &[]);
        hpcc.unit = Unit::Runs;
        hpcc.per_request.server_us = 46_868_335.3;
        let res = Resources {
            cells: vec![hpcc, cell("serve", &[], &[])],
            steps: Vec::new(),
            warning: None,
        };
        let page = section(Some(&res));
        assert!(page.contains("<th>per</th>"), "{page}");
        assert!(page.contains("<td>ms/run</td><td>46868.3</td>"), "{page}");
        assert!(page.contains("<td>µs/request</td><td>12.5</td>"), "{page}");
        assert_eq!(section(None), "");
    }
}
