//! An image's root filesystem on the host: exported from Docker's store
//! (`docker create`, `docker export`, `tar -x`) and hashed
//! ([`tree_sha256`]), for the placements that run its files without the
//! engine (a chroot in native and lab-*, a guest's root in vm-*, the
//! archive Podman imports).
//!
//! Every cell of a run exports the same image: with an [`ExportCache`]
//! held for the run, the first deployment exports and hashes it once, into
//! `$TMPDIR/tare-<run>-<pid>-export-<image id>` (an owner file in it, so
//! `tare cleanup` removes it if tare is killed), and each deployment gets
//! its own copy of that tree (a chroot writes into its root: mount points,
//! a missing working directory, whatever the server writes), with the
//! cached hash. Without a cache each deployment exports and hashes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command as Cmd, Stdio};
use std::sync::{Arc, Mutex};

use crate::error::DeployError;

/// The exports of the runs that hold an [`ExportCache`], by run id.
static RUNS: Mutex<BTreeMap<String, Run>> = Mutex::new(BTreeMap::new());

#[derive(Default)]
struct Run {
    /// How many [`ExportCache`]s hold it.
    holders: usize,
    /// Image id → its export, made by the first deployment that needs it.
    images: BTreeMap<String, Arc<Mutex<Option<Cached>>>>,
}

/// One image's export, kept for the run.
struct Cached {
    /// The directory holding the owner file and `rootfs`.
    dir: PathBuf,
    tree_sha256: String,
}

impl Cached {
    fn rootfs(&self) -> PathBuf {
        self.dir.join("rootfs")
    }
}

/// Keeps the root filesystems exported for run `run_id` while it lives,
/// so its cells export each image once; dropping the last one for the run
/// removes them. A runner holds one for the whole run.
#[must_use = "the cache lives as long as this value"]
pub struct ExportCache {
    run_id: String,
}

impl ExportCache {
    pub fn new(run_id: &str) -> ExportCache {
        let mut runs = RUNS.lock().unwrap_or_else(|p| p.into_inner());
        runs.entry(run_id.to_string()).or_default().holders += 1;
        ExportCache {
            run_id: run_id.to_string(),
        }
    }
}

impl Drop for ExportCache {
    fn drop(&mut self) {
        let gone = {
            let mut runs = RUNS.lock().unwrap_or_else(|p| p.into_inner());
            let Some(run) = runs.get_mut(&self.run_id) else {
                return;
            };
            run.holders -= 1;
            if run.holders > 0 {
                return;
            }
            runs.remove(&self.run_id)
                .map(|r| r.images)
                .unwrap_or_default()
        };
        for entry in gone.into_values() {
            let cached = entry.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(c) = cached {
                if let Err(e) = std::fs::remove_dir_all(&c.dir) {
                    eprintln!("tare: removing {}: {e}", c.dir.display());
                }
            }
        }
    }
}

/// `tag`'s files (`id`: their identity, `OciConfig::id`) in `rootfs`, made here, and their tree hash:
/// copied from the run's cache when the run holds an [`ExportCache`]
/// (exported into it first if no cell did yet), else exported directly.
/// `dir` is the deployment directory (it names the export's container).
pub(crate) fn rootfs(
    tag: &str,
    id: &str,
    rootfs: &Path,
    dir: &Path,
    run_id: &str,
) -> Result<String, DeployError> {
    let entry = {
        let mut runs = RUNS.lock().unwrap_or_else(|p| p.into_inner());
        runs.get_mut(run_id)
            .map(|run| run.images.entry(id.to_string()).or_default().clone())
    };
    let Some(entry) = entry.filter(|_| !id.is_empty()) else {
        export(tag, rootfs, dir)?;
        return hash(rootfs);
    };
    // Held while exporting: a second cell of the same image waits for the
    // first's export instead of making its own.
    let mut slot = entry.lock().unwrap_or_else(|p| p.into_inner());
    if slot.is_none() {
        *slot = Some(fill(tag, id, dir, run_id)?);
    }
    let cached = slot.as_ref().expect("filled above");
    copy_tree(&cached.rootfs(), rootfs)?;
    Ok(cached.tree_sha256.clone())
}

/// Exports and hashes `tag` into the run's cache directory for image `id`.
fn fill(tag: &str, id: &str, dir: &Path, run_id: &str) -> Result<Cached, DeployError> {
    let short: String = id
        .trim_start_matches("layers:")
        .trim_start_matches("sha256:")
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(12)
        .collect();
    let cache = std::env::temp_dir().join(format!(
        "{}{run_id}-{}-export-{short}",
        crate::owner::PREFIX,
        std::process::id()
    ));
    let made = (|| {
        std::fs::create_dir(&cache)
            .map_err(|e| DeployError::io(format!("creating {}", cache.display()), e))?;
        std::fs::write(
            cache.join(crate::owner::OWNER_FILE),
            crate::procfs::own_identity(),
        )
        .map_err(|e| DeployError::io("writing the owner file", e))?;
        let rootfs = cache.join("rootfs");
        export(tag, &rootfs, dir)?;
        hash(&rootfs)
    })();
    match made {
        Ok(tree_sha256) => Ok(Cached {
            dir: cache,
            tree_sha256,
        }),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&cache);
            Err(e)
        }
    }
}

fn hash(rootfs: &Path) -> Result<String, DeployError> {
    tree_sha256(rootfs).map_err(|e| DeployError::io(format!("hashing {}", rootfs.display()), e))
}

/// `from` copied to `to` (which must not exist) with owners, modes, links
/// and times (`cp -a`; a reflink where the filesystem has them).
fn copy_tree(from: &Path, to: &Path) -> Result<(), DeployError> {
    let out = Cmd::new("cp")
        .args(["-a", "--reflink=auto"])
        .arg(from)
        .arg(to)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| DeployError::io("running cp", e))?;
    if !out.status.success() {
        return Err(DeployError::io(
            format!("copying {} to {}", from.display(), to.display()),
            std::io::Error::other(String::from_utf8_lossy(&out.stderr).trim().to_string()),
        ));
    }
    Ok(())
}

/// `tag`'s files, exported into `rootfs` through a container created for
/// it and removed at once (`docker create`, `docker export`, `tar -x`).
pub(crate) fn export(tag: &str, rootfs: &Path, dir: &Path) -> Result<(), DeployError> {
    use crate::docker::{LABEL, LABEL_OWNER};
    std::fs::create_dir(rootfs)
        .map_err(|e| DeployError::io(format!("creating {}", rootfs.display()), e))?;
    let name = format!(
        "{}-export",
        dir.file_name().and_then(|n| n.to_str()).unwrap_or("tare")
    );
    let owner = format!("{LABEL_OWNER}={}", crate::procfs::own_identity());
    let created = docker(&[
        "create",
        "--name",
        &name,
        "--label",
        &format!("{LABEL}=1"),
        "--label",
        &owner,
        "--entrypoint",
        "/",
        tag,
    ])?;
    if !created.status.success() {
        return Err(DeployError::Docker(format!(
            "exporting {tag}: {}",
            last_lines(&created.stderr, 2)
        )));
    }
    let result = export_into(&name, rootfs);
    let removed = crate::docker::remove_container(&name);
    result.and(removed)
}

fn export_into(container: &str, rootfs: &Path) -> Result<(), DeployError> {
    let mut exporter = Cmd::new("docker")
        .args(["export", container])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| DeployError::Docker(format!("running docker export: {e}")))?;
    let stream = exporter.stdout.take().expect("piped");
    let untar = Cmd::new("tar")
        .args(["-x", "--numeric-owner", "-C"])
        .arg(rootfs)
        .stdin(stream)
        .stderr(Stdio::piped())
        .output();
    let exported = exporter
        .wait_with_output()
        .map_err(|e| DeployError::Docker(format!("docker export: {e}")))?;
    let untar = untar.map_err(|e| DeployError::io("running tar", e))?;
    if !exported.status.success() || !untar.status.success() {
        return Err(DeployError::Docker(format!(
            "exporting {container}: {} {}",
            last_lines(&exported.stderr, 2),
            last_lines(&untar.stderr, 2)
        )));
    }
    Ok(())
}

/// A digest over a root filesystem tree: every entry's path, type, mode,
/// owner, and its content's sha256 (a file) or target (a link), sorted by
/// path. The same image exported twice hashes the same.
pub(crate) fn tree_sha256(root: &Path) -> std::io::Result<String> {
    let mut lines = Vec::new();
    tree_lines(root, Path::new(""), &mut lines)?;
    lines.sort();
    Ok(crate::host::sha256_hex(lines.join("\n").as_bytes()))
}

fn tree_lines(root: &Path, rel: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    for entry in std::fs::read_dir(root.join(rel))? {
        let entry = entry?;
        let rel = rel.join(entry.file_name());
        let path = root.join(&rel);
        let md = std::fs::symlink_metadata(&path)?;
        let head = format!(
            "{} {:o} {}:{}",
            rel.display(),
            md.mode(),
            md.uid(),
            md.gid()
        );
        if md.is_dir() {
            out.push(format!("{head} dir"));
            tree_lines(root, &rel, out)?;
        } else if md.file_type().is_symlink() {
            out.push(format!(
                "{head} -> {}",
                std::fs::read_link(&path)?.display()
            ));
        } else if md.is_file() {
            let h = crate::host::sha256_hex(&std::fs::read(&path)?);
            out.push(format!("{head} {h}"));
        } else {
            out.push(format!("{head} special {}", md.rdev()));
        }
    }
    Ok(())
}

/// `docker ARGS`, its output captured.
pub(super) fn docker(args: &[&str]) -> Result<std::process::Output, DeployError> {
    Cmd::new("docker")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| DeployError::Docker(format!("running docker {}: {e}", args[0])))
}

/// The last `n` non-empty lines of `bytes`, joined with ` | `.
pub(super) fn last_lines(bytes: &[u8], n: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}
