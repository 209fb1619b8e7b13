//! The guest's initramfs, built by tare from the host's files, like tare's
//! images (`docker::image`): busybox (the init's shell and tools), the
//! virtio modules of the guest kernel, the server binary with its `ldd`
//! closure and the files its target needs, at their host paths; then the
//! deployment directory (config, content, data) at its host path and the
//! `/init` script. Baked in, not shared over 9p or virtio-fs: serving files
//! through those was 3-5x slower here, which would be a
//! filesystem result, not a placement one.
//!
//! Two archives, concatenated (the kernel unpacks them in turn): the base,
//! which depends only on the kernel and the binaries and is cached by a
//! hash of their paths, sizes and mtimes, and the deployment's own.

use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::cpio::Cpio;
use super::init::{DISK_MODULE_DIR, IMAGE_ROOT, MODULE_DIR};
use super::kernel::{self, Kernel};
use crate::host::sha256_hex;

/// Bump when the layout below changes, so old cached bases are not reused.
const RECIPE: &str = "tare-initramfs-2";

/// Modules the guest needs that Debian builds as modules: virtio over MMIO
/// (microvm's transport) and virtio-net (Debian has no CONFIG_IP_PNP
/// either, so the init sets the address itself).
pub(crate) const MODULES: &[&str] = &["virtio_mmio", "virtio_net"];

/// Modules for the data disk (`vm::disk`), loaded only when a guest has
/// one: virtio-blk, and ext4 with the crc32c its metadata checksums use
/// (a soft dependency, `softdep ext4 pre: crypto-crc32c` in
/// modules.softdep, which modules.dep does not list).
pub(crate) const DISK_MODULES: &[&str] = &["virtio_mmio", "virtio_blk", "crc32c_generic", "ext4"];

/// Directories of the deployment directory that stay on the host.
const HOST_ONLY: &[&str] = &["vm"];

/// What was built.
pub(crate) struct Built {
    pub bytes: u64,
}

/// Writes the guest's initramfs to `out`: the cached base for `files`
/// (plus busybox and the modules), then `dir`, a user's image's exported
/// root filesystem (`image`, at [`IMAGE_ROOT`]) and `init`.
pub(crate) fn build(
    kernel: &Kernel,
    files: &BTreeSet<PathBuf>,
    dir: &Path,
    image: Option<&Path>,
    init: &str,
    cache: &Path,
    out: &Path,
) -> Result<Built, String> {
    let mut all = files.clone();
    all.extend(busybox()?);
    let modules = kernel::modules(kernel, MODULES)?;
    // A kernel without them still boots guests with no disk; a guest with
    // one checks them first (`placements::vm`).
    let disk_modules = kernel::modules(kernel, DISK_MODULES).unwrap_or_default();
    let key = base_key(kernel, &all, &[&modules[..], &disk_modules[..]].concat());
    let base = cache.join(format!("initramfs-{}.cpio", &key[..16]));
    if !base.is_file() {
        let tmp = cache.join(format!(".initramfs-{}.{}", &key[..16], std::process::id()));
        write_base(
            &all,
            &[(MODULE_DIR, &modules), (DISK_MODULE_DIR, &disk_modules)],
            &tmp,
        )
        .map_err(|e| format!("the guest's base archive: {e}"))?;
        std::fs::rename(&tmp, &base).map_err(|e| format!("{}: {e}", base.display()))?;
    }
    std::fs::copy(&base, out).map_err(|e| format!("{}: {e}", out.display()))?;
    let file = std::fs::OpenOptions::new()
        .append(true)
        .open(out)
        .map_err(|e| format!("{}: {e}", out.display()))?;
    let mut c = Cpio::new(std::io::BufWriter::new(file));
    // The directory's ancestors as the host has them (a default 0755 would
    // replace /tmp's 1777 from the base: a later entry wins).
    let mut ancestors: Vec<&Path> = dir.ancestors().skip(1).collect();
    ancestors.reverse();
    for a in ancestors {
        if let Ok(md) = std::fs::metadata(a) {
            c.dir(&a.display().to_string(), md.mode(), md.uid(), md.gid())
                .map_err(|e| e.to_string())?;
        }
    }
    add_dir(&mut c, dir, dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if let Some(root) = image {
        add_tree(&mut c, root, Path::new(IMAGE_ROOT))
            .map_err(|e| format!("{}: {e}", root.display()))?;
    }
    c.file("init", 0o755, 0, 0, init.as_bytes())
        .map_err(|e| e.to_string())?;
    c.finish().map_err(|e| e.to_string())?;
    let bytes = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
    Ok(Built { bytes })
}

/// A guest of busybox and `init` alone (the accelerator trial).
pub(crate) fn build_trial(kernel: &Kernel, init: &str, out: &Path) -> Result<(), String> {
    let _ = kernel;
    let files: BTreeSet<PathBuf> = busybox()?.into_iter().collect();
    let f = std::fs::File::create(out).map_err(|e| e.to_string())?;
    let mut c = Cpio::new(std::io::BufWriter::new(f));
    host_files(&mut c, &files).map_err(|e| e.to_string())?;
    c.file("init", 0o755, 0, 0, init.as_bytes())
        .map_err(|e| e.to_string())?;
    c.finish().map_err(|e| e.to_string())?;
    Ok(())
}

/// The host's busybox (Debian's busybox-static is one static file) and any
/// libraries a dynamic one needs.
fn busybox() -> Result<Vec<PathBuf>, String> {
    let bin = crate::host::which("busybox")
        .ok_or("no busybox on this machine (Debian: apt-get install busybox-static)")?;
    let mut files = vec![bin.clone()];
    files.extend(crate::host::shared_libraries(&bin)?);
    if bin != Path::new("/bin/busybox") {
        // The init runs /bin/busybox: keep the file there too.
        files.push(bin);
    }
    Ok(files)
}

fn base_key(kernel: &Kernel, files: &BTreeSet<PathBuf>, modules: &[PathBuf]) -> String {
    let mut text = format!("{RECIPE}\n{}\n", kernel.identity());
    for f in files.iter().chain(modules) {
        let md = std::fs::metadata(f).ok();
        text.push_str(&format!(
            "{} {} {}\n",
            f.display(),
            md.as_ref().map_or(0, |m| m.size()),
            md.as_ref().map_or(0, |m| m.mtime())
        ));
    }
    sha256_hex(text.as_bytes())
}

fn write_base(
    files: &BTreeSet<PathBuf>,
    modules: &[(&str, &[PathBuf])],
    out: &Path,
) -> std::io::Result<()> {
    let f = std::fs::File::create(out)?;
    let mut c = Cpio::new(std::io::BufWriter::new(f));
    for (dir, mode) in [
        ("proc", 0o555),
        ("sys", 0o555),
        ("dev", 0o755),
        ("tmp", 0o1777),
        ("run", 0o755),
        ("var/log/nginx", 0o755),
        ("var/lib/nginx", 0o755),
        ("var/run/postgresql", 0o2775),
    ] {
        c.dir(dir, mode, 0, 0)?;
    }
    host_files(&mut c, files)?;
    for (dir, list) in modules {
        for (i, m) in list.iter().enumerate() {
            let bytes = kernel::module_bytes(m).map_err(std::io::Error::other)?;
            let name = m
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("module.ko")
                .split(".ko")
                .next()
                .unwrap_or("module")
                .to_string();
            c.file(&format!("{dir}/{i:02}-{name}.ko"), 0o644, 0, 0, &bytes)?;
        }
    }
    c.finish()?;
    Ok(())
}

/// Host files at their paths. Each is stored under its real directory
/// (parents resolved), and the host's symlinked top-level directories (a
/// merged /usr's /lib → usr/lib) become the same symlinks, so every path a
/// loader or `ld.so.cache` names resolves as on the host.
fn host_files<W: Write>(c: &mut Cpio<W>, files: &BTreeSet<PathBuf>) -> std::io::Result<()> {
    for top in ["bin", "sbin", "lib", "lib32", "lib64", "libx32"] {
        let p = Path::new("/").join(top);
        if let Ok(target) = std::fs::read_link(&p) {
            c.symlink(top, &target.display().to_string())?;
        }
    }
    let mut stored = BTreeSet::new();
    for f in files {
        let (Some(parent), Some(name)) = (f.parent(), f.file_name()) else {
            continue;
        };
        let real = std::fs::canonicalize(parent)?.join(name);
        if !stored.insert(real.clone()) {
            continue;
        }
        let md = std::fs::metadata(f)?;
        let data = std::fs::read(f)?;
        c.file(
            &real.display().to_string(),
            md.mode(),
            md.uid(),
            md.gid(),
            &data,
        )?;
    }
    Ok(())
}

/// `dir` and everything under it with owners and modes (postgres refuses a
/// data directory that is not its own with mode 0700), except `HOST_ONLY`
/// subdirectories of `root` and anything neither a file nor a directory.
fn add_dir<W: Write>(c: &mut Cpio<W>, root: &Path, dir: &Path) -> std::io::Result<()> {
    let md = std::fs::symlink_metadata(dir)?;
    c.dir(&dir.display().to_string(), md.mode(), md.uid(), md.gid())?;
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        if dir == root && HOST_ONLY.iter().any(|h| e.file_name().to_str() == Some(h)) {
            continue;
        }
        let md = std::fs::symlink_metadata(&p)?;
        if md.is_dir() {
            add_dir(c, root, &p)?;
        } else if md.is_file() {
            let data = std::fs::read(&p)?;
            c.file(
                &p.display().to_string(),
                md.mode(),
                md.uid(),
                md.gid(),
                &data,
            )?;
        } else if md.file_type().is_symlink() {
            let target = std::fs::read_link(&p)?;
            c.symlink(&p.display().to_string(), &target.display().to_string())?;
        }
    }
    Ok(())
}

/// The tree at `host` stored at `guest` (an image's root filesystem in
/// the guest): directories, files and links with their modes and owners,
/// in path order; anything else (a device node) is left out, as the guest
/// mounts its own /dev.
fn add_tree<W: Write>(c: &mut Cpio<W>, host: &Path, guest: &Path) -> std::io::Result<()> {
    let md = std::fs::symlink_metadata(host)?;
    c.dir(&guest.display().to_string(), md.mode(), md.uid(), md.gid())?;
    let mut entries: Vec<_> = std::fs::read_dir(host)?.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let (from, to) = (e.path(), guest.join(e.file_name()));
        let md = std::fs::symlink_metadata(&from)?;
        let at = to.display().to_string();
        if md.is_dir() {
            add_tree(c, &from, &to)?;
        } else if md.is_file() {
            c.file(&at, md.mode(), md.uid(), md.gid(), &std::fs::read(&from)?)?;
        } else if md.file_type().is_symlink() {
            c.symlink(&at, &std::fs::read_link(&from)?.display().to_string())?;
        }
    }
    Ok(())
}
