//! Finding processes in /proc: a tree's descendants, processes whose name
//! matches a pattern (one shared walk for several patterns), threads by name.

use super::stat::parse_stat;

/// Programs that run under another name: pasta re-executes itself as its
/// AVX2 build, whose command name is `passt.avx2` (or `pasta.avx2`).
const ALIASES: [(&str, &[&str]); 1] = [("pasta", &["pasta.avx2", "passt.avx2"])];

/// Whether a command name matches a watch pattern: exact, or a prefix when
/// the pattern ends in `*` (`containerd-shim*`, `ksoftirqd/*`). Names are
/// compared as the kernel keeps them, truncated to 15 bytes.
pub(crate) fn name_matches(pattern: &str, comm: &str) -> bool {
    if ALIASES
        .iter()
        .any(|(p, names)| *p == pattern && names.contains(&comm))
    {
        return true;
    }
    match pattern.strip_suffix('*') {
        Some(prefix) => comm.starts_with(prefix) || prefix.starts_with(comm) && comm.len() == 15,
        None => comm == pattern || (comm.len() == 15 && pattern.starts_with(comm)),
    }
}

fn numeric_entries(dir: &str) -> Vec<u32> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// `roots` and every process below them, from the `children` files of each
/// thread (CONFIG_PROC_CHILDREN), falling back to a scan of ppids.
pub(crate) fn descendants(roots: &[u32]) -> Vec<u32> {
    let mut out: Vec<u32> = roots
        .iter()
        .copied()
        .filter(|p| std::path::Path::new(&format!("/proc/{p}")).exists())
        .collect();
    let has_children_files = std::path::Path::new("/proc/self/task")
        .join(std::process::id().to_string())
        .join("children")
        .exists();
    let mut i = 0;
    if has_children_files {
        while i < out.len() && out.len() < 100_000 {
            let pid = out[i];
            for tid in numeric_entries(&format!("/proc/{pid}/task")) {
                let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/children"))
                    .unwrap_or_default();
                for c in text
                    .split_ascii_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok())
                {
                    if !out.contains(&c) {
                        out.push(c);
                    }
                }
            }
            i += 1;
        }
        return out;
    }
    let all: Vec<(u32, u32)> = numeric_entries("/proc")
        .into_iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            Some((p, parse_stat(&text)?.1.ppid))
        })
        .collect();
    while i < out.len() {
        let parent = out[i];
        for (p, pp) in &all {
            if *pp == parent && !out.contains(p) {
                out.push(*p);
            }
        }
        i += 1;
    }
    out
}

/// The children of `parent` whose name matches `pattern`: from the
/// `children` file of each of its threads (CONFIG_PROC_CHILDREN), else
/// from a scan of ppids. A few small files while `parent` has few threads
/// (the monitor looks every sample until the program starts).
pub(crate) fn children_named(parent: u32, pattern: &str) -> Vec<u32> {
    let tasks = numeric_entries(&format!("/proc/{parent}/task"));
    let has_children_files = tasks.first().is_some_and(|t| {
        std::path::Path::new(&format!("/proc/{parent}/task/{t}/children")).exists()
    });
    let kids: Vec<u32> = if has_children_files {
        tasks
            .iter()
            .flat_map(|t| {
                std::fs::read_to_string(format!("/proc/{parent}/task/{t}/children"))
                    .unwrap_or_default()
                    .split_ascii_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok())
                    .collect::<Vec<_>>()
            })
            .collect()
    } else {
        numeric_entries("/proc")
            .into_iter()
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/stat"))
                    .ok()
                    .and_then(|t| parse_stat(&t).map(|(_, s)| s.ppid == parent))
                    .unwrap_or(false)
            })
            .collect()
    };
    kids.into_iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm"))
                .is_ok_and(|c| name_matches(pattern, c.trim_end_matches('\n')))
        })
        .collect()
}

/// Processes whose name matches `pattern` (see [`name_matches`]).
pub fn named(pattern: &str) -> Vec<u32> {
    named_all(&[pattern]).pop().unwrap_or_default()
}

/// One walk of /proc for several patterns: each process's name is read
/// once, whatever the number of patterns (the walk is the monitor's most
/// expensive step, so it is shared).
pub(crate) fn named_all<S: AsRef<str>>(patterns: &[S]) -> Vec<Vec<u32>> {
    let mut out = vec![Vec::new(); patterns.len()];
    let mut buf = String::with_capacity(32);
    for p in numeric_entries("/proc") {
        buf.clear();
        let Ok(mut f) = std::fs::File::open(format!("/proc/{p}/comm")) else {
            continue;
        };
        if std::io::Read::read_to_string(&mut f, &mut buf).is_err() {
            continue;
        }
        let comm = buf.trim_end_matches('\n');
        for (i, pat) in patterns.iter().enumerate() {
            if name_matches(pat.as_ref(), comm) {
                out[i].push(p);
            }
        }
    }
    out
}

pub(super) fn threads(pid: u32, prefix: &str) -> Vec<u32> {
    numeric_entries(&format!("/proc/{pid}/task"))
        .into_iter()
        .filter(|t| {
            std::fs::read_to_string(format!("/proc/{pid}/task/{t}/comm"))
                .map(|c| c.starts_with(prefix))
                .unwrap_or(false)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_found_by_its_name_and_no_other() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let me = std::process::id();
        let found = children_named(me, "sleep");
        let other = children_named(me, "nosuchprogram");
        let _ = child.kill();
        let _ = child.wait();
        assert!(found.contains(&child.id()), "{found:?}");
        assert!(other.is_empty(), "{other:?}");
    }

    #[test]
    fn patterns_match_truncated_kernel_names() {
        assert!(name_matches("docker-proxy", "docker-proxy"));
        assert!(!name_matches("docker-proxy", "docker"));
        assert!(name_matches("containerd-shim*", "containerd-shim"));
        assert!(name_matches("ksoftirqd/*", "ksoftirqd/1"));
        assert!(!name_matches("ksoftirqd/*", "kworker/1"));
        // comm keeps 15 bytes: "containerd-shim-runc-v2" is "containerd-shim".
        assert!(name_matches("containerd-shim-runc-v2", "containerd-shim"));
        assert!(name_matches("pasta", "passt.avx2"));
        assert!(!name_matches("slirp4netns", "passt.avx2"));
    }
}
