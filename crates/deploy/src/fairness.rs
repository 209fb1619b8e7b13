//! The fairness check: every measured difference between placements that is
//! not the factor under test. Seed 000's "unfair comparison" table
//! (docs/studies.md, seed 000, "Test 1": network mode, worker_connections,
//! epoll, multi_accept, tcp_nopush, tcp_nodelay and worker_rlimit_nofile
//! differing between host and Docker) is the kind of difference this catches
//! before any load runs. Facts the table has no row for (the binary, the log
//! target, the storage) are tare's additions.

use std::collections::BTreeMap;

use crate::facts::{Facts, Finding};

/// Facts a factor is allowed to change. A factor not listed here excuses only
/// the fact of the same name.
fn excused_by(factor: &str) -> &'static [&'static str] {
    match factor {
        // Placement changes where the server runs, not what it is: storage and
        // log filesystem are separate factors (docs/studies.md, "Why is
        // `--network host` 17% slower than native?": ~11 of the 17 points were
        // overlayfs).
        "placement" => &[],
        "variant" | "config" => &["config_sha256", "access_log"],
        "access_log" => &["config_sha256", "access_log"],
        "storage" => &["storage", "log_fs", "content_fs", "content_disk"],
        // The backend container gets the server's seccomp profile.
        "seccomp" => &["seccomp", "backend_seccomp"],
        // server_cpus pins the backend too; cgroup limits are the server's alone.
        "server_cpus" => &["cpus_visible", "cpu_limit", "backend_cpus_visible"],
        "cpus" | "cpu_limit" => &["cpus_visible", "cpu_limit"],
        "memory" | "memory_limit" => &["memory_limit"],
        "limits" => &["cpus_visible", "cpu_limit", "memory_limit", "nofile"],
        "image" | "binary" => &["binary_path", "binary_sha256", "server_version"],
        "transport" => &["transport"],
        "vm_cpus" => &["cpus_visible"],
        "vm_memory" => &["memory_limit"],
        _ => &[],
    }
}

/// Every fact that differs between cells and is not excused by a factor under test.
pub fn fairness(cells: &[(String, Facts)], factors_under_test: &[&str]) -> Vec<Finding> {
    let excused: Vec<&str> = factors_under_test
        .iter()
        .flat_map(|f| excused_by(f).iter().copied().chain(std::iter::once(*f)))
        .collect();
    let maps: Vec<(&str, BTreeMap<String, String>)> = cells
        .iter()
        .map(|(n, f)| (n.as_str(), f.compared()))
        .collect();
    let Some((_, first)) = maps.first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for fact in first.keys() {
        if excused.contains(&fact.as_str()) {
            continue;
        }
        let values: Vec<(String, String)> = maps
            .iter()
            .map(|(n, m)| (n.to_string(), m.get(fact).cloned().unwrap_or_default()))
            .collect();
        if values.iter().all(|(_, v)| *v == values[0].1) {
            continue;
        }
        out.push(Finding {
            fact: fact.to_string(),
            message: format!(
                "{fact} differs between cells ({}) and is not a factor under test",
                by_value(&values)
            ),
            values,
        });
    }
    out.extend(emulated(cells));
    out
}

/// Cells whose server ran in a TCG guest: their numbers say the guest
/// works, not how fast a virtual machine is (docs/placements.md).
fn emulated(cells: &[(String, Facts)]) -> Option<Finding> {
    let tcg: Vec<&str> = cells
        .iter()
        .filter(|(_, f)| f.guest.as_ref().is_some_and(|g| g.accel == "tcg"))
        .map(|(n, _)| n.as_str())
        .collect();
    let reason = cells
        .iter()
        .find_map(|(_, f)| f.guest.as_ref().filter(|g| g.accel == "tcg"))?
        .accel_reason
        .clone();
    Some(Finding {
        fact: "guest_accel".into(),
        values: cells
            .iter()
            .map(|(n, f)| {
                let v = f.guest.as_ref().map_or("host", |g| g.accel.as_str());
                (n.clone(), v.to_string())
            })
            .collect(),
        message: format!(
            "{} ran in a TCG guest, {} (no working KVM here: {reason})",
            tcg.join("; "),
            crate::vm::TCG_LABEL
        ),
    })
}

/// `values` grouped by value, each group named by what its cells have in
/// common and no other cell has ("ext4 where placement=native (4 cells);
/// overlay where placement is docker-host or docker-publish (8 cells)"), so
/// a finding over many cells stays one readable line. Cell names are read
/// as `factor=level` lists (the runner's cell ids); a group nothing
/// describes lists its cells.
fn by_value(values: &[(String, String)]) -> String {
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for (cell, value) in values {
        match groups.iter_mut().find(|(v, _)| v == value) {
            Some((_, cells)) => cells.push(cell),
            None => groups.push((value, vec![cell])),
        }
    }
    let levels = |cell: &str| -> Vec<(String, String)> {
        cell.split(',')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect()
    };
    let parts: Vec<String> = groups
        .iter()
        .map(|(value, cells)| {
            let others: Vec<&str> = values
                .iter()
                .map(|(c, _)| c.as_str())
                .filter(|c| !cells.contains(c))
                .collect();
            let count = match cells.len() {
                1 => "1 cell".to_string(),
                n => format!("{n} cells"),
            };
            match describe(cells, &others, &levels) {
                Some(d) => format!("{value} where {d} ({count})"),
                None => format!("{value} in {}", cells.join("; ")),
            }
        })
        .collect();
    parts.join("; ")
}

/// A factor whose levels in `group` never occur in `others`, said as
/// `factor=level` or `factor is a, b or c`; `None` when no factor separates
/// the group from the rest.
fn describe(
    group: &[&str],
    others: &[&str],
    levels: &dyn Fn(&str) -> Vec<(String, String)>,
) -> Option<String> {
    let first = levels(group.first()?);
    for (factor, _) in &first {
        let level_of = |cell: &str| {
            levels(cell)
                .into_iter()
                .find(|(k, _)| k == factor)
                .map(|(_, v)| v)
        };
        let mut inside: Vec<String> = Vec::new();
        for c in group {
            let l = level_of(c)?;
            if !inside.contains(&l) {
                inside.push(l);
            }
        }
        let separates = others
            .iter()
            .all(|c| level_of(c).is_some_and(|l| !inside.contains(&l)));
        if separates {
            return Some(match inside.as_slice() {
                [one] => format!("{factor}={one}"),
                [init @ .., last] => format!("{factor} is {} or {last}", init.join(", ")),
                [] => return None,
            });
        }
    }
    None
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::{BackendFacts, GuestDisk, GuestFacts, ProcessFacts};

    fn cell(name: &str, log_fs: &str, placement: &str) -> (String, Facts) {
        (
            name.to_string(),
            Facts {
                placement: placement.into(),
                log_fs: Some(log_fs.into()),
                process: ProcessFacts {
                    config_sha256: "abc".into(),
                    ..ProcessFacts::default()
                },
                ..Facts::default()
            },
        )
    }

    /// A guest's disk is compared as one line; a cell without one says
    /// `none`, so a guest on its disk and a container on a volume differ
    /// by it, and the storage factor excuses that.
    #[test]
    fn the_content_disk_is_compared_and_storage_excuses_it() {
        let mut vm = cell("vm", "ext4", "vm-bridge");
        vm.1.guest = Some(GuestFacts {
            disk: Some(GuestDisk {
                interface: "virtio-blk".into(),
                format: "raw".into(),
                cache: "none".into(),
                aio: "native".into(),
                bytes: 4 << 30,
                fs: "ext4".into(),
                host_fs: "ext4".into(),
            }),
            ..GuestFacts::default()
        });
        let native = cell("native", "ext4", "native");
        assert_eq!(
            vm.1.compared()["content_disk"],
            "virtio-blk raw file on ext4 (cache=none, aio=native)"
        );
        assert_eq!(native.1.compared()["content_disk"], "none");
        let cells = [native, vm];
        let facts = |f: &[Finding]| f.iter().map(|f| f.fact.clone()).collect::<Vec<_>>();
        assert!(facts(&fairness(&cells, &["placement"])).contains(&"content_disk".to_string()));
        assert!(!facts(&fairness(&cells, &["placement", "storage"]))
            .contains(&"content_disk".to_string()));
    }

    #[test]
    fn a_tcg_guest_is_labelled_emulated() {
        let mut vm = cell("vm", "tmpfs", "vm-bridge");
        vm.1.guest = Some(GuestFacts {
            accel: "tcg".into(),
            accel_reason: "the KVM trial boot failed".into(),
            ..GuestFacts::default()
        });
        let cells = [cell("native", "tmpfs", "native"), vm];
        let f = fairness(&cells, &["placement"]);
        let g = f.iter().find(|f| f.fact == "guest_accel").expect("{f:?}");
        assert!(g.message.contains(crate::vm::TCG_LABEL), "{}", g.message);
        assert!(
            g.message.starts_with("vm ran in a TCG guest"),
            "{}",
            g.message
        );
        assert_eq!(g.values[0].1, "host");
        let kvm = GuestFacts {
            accel: "kvm".into(),
            ..GuestFacts::default()
        };
        let mut k = cell("vm", "tmpfs", "vm-bridge");
        k.1.guest = Some(kvm);
        assert!(fairness(&[k], &["placement"]).is_empty());
    }

    #[test]
    fn log_on_tmpfs_vs_overlay_is_reported_when_placement_is_the_factor() {
        let cells = [
            cell("native", "tmpfs", "native"),
            cell("docker-host", "overlay", "docker-host"),
        ];
        let f = fairness(&cells, &["placement"]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].fact, "log_fs");
        assert!(f[0].message.contains("tmpfs") && f[0].message.contains("overlay"));
        // ...and excused when storage is itself under test.
        assert!(fairness(&cells, &["placement", "storage"]).is_empty());
    }

    #[test]
    fn a_finding_over_many_cells_is_grouped_by_value() {
        let mut cells = Vec::new();
        for (placement, fs) in [
            ("native", "ext4"),
            ("docker-host", "overlay"),
            ("docker-publish", "overlay"),
        ] {
            for log in ["on", "off"] {
                let id = format!("placement={placement},access_log={log}");
                cells.push(cell(&id, fs, placement));
            }
        }
        let f = fairness(&cells, &["placement", "access_log"]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            f[0].message,
            "log_fs differs between cells (ext4 where placement=native (2 cells); overlay where \
             placement is docker-host or docker-publish (4 cells)) and is not a factor under test"
        );
        // Names that are not factor lists are listed.
        let f = fairness(
            &[cell("a", "ext4", "x"), cell("b", "tmpfs", "y")],
            &["placement"],
        );
        assert_eq!(
            f[0].message,
            "log_fs differs between cells (ext4 in a; tmpfs in b) and is not a factor under test"
        );
    }

    #[test]
    fn identical_cells_have_no_findings() {
        let cells = [
            cell("a", "ext4", "native"),
            cell("b", "ext4", "docker-host"),
        ];
        assert!(fairness(&cells, &["placement"]).is_empty());
        assert!(fairness(&[], &[]).is_empty());
    }

    #[test]
    fn a_backend_difference_is_a_finding_too() {
        let with = |name: &str, nofile: u64, seccomp: &str| {
            let mut c = cell(name, "ext4", name);
            c.1.backend = Some(BackendFacts {
                process: ProcessFacts {
                    nofile_soft: Some(nofile),
                    seccomp: Some(seccomp.into()),
                    ..ProcessFacts::default()
                },
                ..BackendFacts::default()
            });
            c
        };
        let cells = [
            with("native", 1024, "disabled"),
            with("docker-host", 65535, "filter"),
        ];
        let f = fairness(&cells, &["placement"]);
        let facts: Vec<&str> = f.iter().map(|f| f.fact.as_str()).collect();
        assert_eq!(facts, ["backend_nofile", "backend_seccomp"], "{f:?}");
        // The seccomp factor covers the backend's container too.
        let f = fairness(&cells, &["placement", "seccomp"]);
        assert_eq!(f.len(), 1, "{f:?}");
    }

    #[test]
    fn config_difference_is_excused_only_by_variant() {
        let mut b = cell("b", "ext4", "native");
        b.1.process.config_sha256 = "def".into();
        let cells = [cell("a", "ext4", "native"), b];
        assert_eq!(fairness(&cells, &["placement"])[0].fact, "config_sha256");
        assert!(fairness(&cells, &["variant"]).is_empty());
    }
}
