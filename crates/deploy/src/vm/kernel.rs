//! The guest kernel: the host's own (or a Debian `linux-image` package's)
//! `/boot/vmlinuz-<version>` with its modules in `/lib/modules/<version>`.
//!
//! For speed the compressed bzImage is unpacked once to a plain `vmlinux`
//! ELF in the cache, which QEMU boots directly (PVH entry): under TCG here
//! that reached userspace in ~1.7 s against ~4 s from the bzImage, since
//! the emulated CPU pays for every instruction of the decompressor (issue
//! 16's probe). Unpacking works as the kernel's own
//! `scripts/extract-vmlinux`: find a compressor's magic in the image and
//! decompress from there with the host's tool. Where that fails, the
//! bzImage boots as is (and the facts say so).

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::host::sha256_hex;

/// A kernel a guest can boot.
#[derive(Clone, Debug)]
pub(crate) struct Kernel {
    /// `uname -r` of the guest: the suffix of `vmlinuz-<version>`.
    pub version: String,
    /// The compressed image in /boot.
    pub image: PathBuf,
    /// What QEMU boots: the unpacked vmlinux, or the image itself.
    pub boot: PathBuf,
    /// Its modules directory.
    pub modules: PathBuf,
    /// Its timer frequency (`CONFIG_HZ` in `/boot/config-<version>`), which
    /// turns the TSC rate into loops per jiffy (`lpj=`) for a TCG guest.
    pub hz: Option<u32>,
}

impl Kernel {
    /// Whether QEMU boots an unpacked vmlinux (fast) or the bzImage.
    pub(crate) fn unpacked(&self) -> bool {
        self.boot != self.image
    }

    /// A short identity for caches: version, size and mtime of the image.
    pub(crate) fn identity(&self) -> String {
        let md = std::fs::metadata(&self.image).ok();
        format!(
            "{} {} {}",
            self.version,
            md.as_ref().map_or(0, |m| m.size()),
            md.as_ref().map_or(0, |m| m.mtime())
        )
    }
}

/// Where guest kernels are looked for; `TARE_VM_KERNEL` names one image.
const BOOT: &str = "/boot";
const MODULES: &str = "/lib/modules";

/// The newest kernel in /boot that has its modules installed (or the image
/// `TARE_VM_KERNEL` names), unpacked into `cache` where possible.
pub(crate) fn find(cache: &Path) -> Result<Kernel, String> {
    let image = match std::env::var_os("TARE_VM_KERNEL") {
        Some(p) => PathBuf::from(p),
        None => newest()?,
    };
    let version = image
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("vmlinuz-"))
        .ok_or_else(|| format!("{}: not named vmlinuz-<version>", image.display()))?
        .to_string();
    let modules = Path::new(MODULES).join(&version);
    if !modules.join("modules.dep").is_file() {
        return Err(format!(
            "{}: no modules.dep for kernel {version} (Debian: apt-get install linux-image-amd64)",
            modules.display()
        ));
    }
    std::fs::File::open(&image).map_err(|e| format!("{}: {e}", image.display()))?;
    let hz = std::fs::read_to_string(image.with_file_name(format!("config-{version}")))
        .ok()
        .and_then(|c| config_hz(&c));
    let mut kernel = Kernel {
        version,
        boot: image.clone(),
        image,
        modules,
        hz,
    };
    if let Some(vmlinux) = unpack(&kernel, cache) {
        kernel.boot = vmlinux;
    }
    Ok(kernel)
}

/// `CONFIG_HZ=250` in a kernel's config file.
fn config_hz(config: &str) -> Option<u32> {
    config
        .lines()
        .find_map(|l| l.strip_prefix("CONFIG_HZ="))
        .and_then(|v| v.trim().parse().ok())
        .filter(|hz| (24..=10_000).contains(hz))
}

fn newest() -> Result<PathBuf, String> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(BOOT)
        .map_err(|e| format!("{BOOT}: {e}"))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix("vmlinuz-"))
                .is_some_and(|v| Path::new(MODULES).join(v).join("modules.dep").is_file())
        })
        .collect();
    // Debian's versions sort by modification time as well as by name; the
    // newest file is what the package manager installed last.
    found.sort_by_key(|p| std::fs::metadata(p).map(|m| m.mtime()).unwrap_or(0));
    found.pop().ok_or_else(|| {
        format!("no kernel in {BOOT} with modules in {MODULES} (Debian: apt-get install linux-image-amd64)")
    })
}

/// Compressors a bzImage may carry, by magic, with the command that
/// decompresses one stream from stdin (extract-vmlinux's list, in its order).
const COMPRESSORS: &[(&[u8], &str, &[&str])] = &[
    (b"\x1f\x8b\x08", "gzip", &["-dc"]),
    (b"\xfd7zXZ\x00", "xz", &["-dc", "--single-stream"]),
    (b"\x28\xb5\x2f\xfd", "zstd", &["-dc"]),
];

/// The unpacked vmlinux in the cache, made now if missing; `None` when no
/// compressor here yields an ELF image.
fn unpack(kernel: &Kernel, cache: &Path) -> Option<PathBuf> {
    let key = &sha256_hex(kernel.identity().as_bytes())[..16];
    let out = cache.join(format!("vmlinux-{}-{key}", kernel.version));
    if out.is_file() {
        return Some(out);
    }
    let image = std::fs::read(&kernel.image).ok()?;
    for (magic, tool, args) in COMPRESSORS {
        let Some(tool) = crate::host::which(tool) else {
            continue;
        };
        let mut from = 0;
        // The first match can be a false one inside the setup code: try a few.
        for _ in 0..4 {
            let Some(at) = position(&image[from..], magic).map(|i| i + from) else {
                break;
            };
            from = at + 1;
            if let Some(elf) = decompress(&tool, args, &image[at..]) {
                let tmp = cache.join(format!(".vmlinux-{}.{}", key, std::process::id()));
                if std::fs::write(&tmp, &elf).is_ok() && std::fs::rename(&tmp, &out).is_ok() {
                    return Some(out);
                }
                let _ = std::fs::remove_file(&tmp);
                return None;
            }
        }
    }
    None
}

fn position(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The decompressed bytes if they are an x86-64 ELF executable.
fn decompress(tool: &Path, args: &[&str], data: &[u8]) -> Option<Vec<u8>> {
    use std::io::Write;
    let mut child = Command::new(tool)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    let data = data.to_vec();
    // Feed from a thread: the tool's output fills its pipe before its input
    // is all read.
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
    });
    let out = child.wait_with_output().ok()?;
    let _ = feeder.join();
    // gzip and zstd complain about the bytes after the stream (the rest of
    // the bzImage) and exit non-zero; the ELF check is what counts.
    let elf = &out.stdout;
    (elf.len() > 1 << 20 && elf.starts_with(b"\x7fELF\x02\x01") && elf[18] == 0x3e)
        .then_some(out.stdout)
}

/// The `.ko` files of `wanted` and everything they depend on, each after its
/// dependencies, from the kernel's `modules.dep`. A module built into the
/// kernel (in `modules.builtin`) needs nothing.
pub(crate) fn modules(kernel: &Kernel, wanted: &[&str]) -> Result<Vec<PathBuf>, String> {
    let dep_file = kernel.modules.join("modules.dep");
    let text =
        std::fs::read_to_string(&dep_file).map_err(|e| format!("{}: {e}", dep_file.display()))?;
    let deps = parse_modules_dep(&text);
    let builtin =
        std::fs::read_to_string(kernel.modules.join("modules.builtin")).unwrap_or_default();
    let mut order: Vec<String> = Vec::new();
    for name in wanted {
        let Some(path) = deps.keys().find(|p| module_name(p) == *name).cloned() else {
            if builtin.lines().any(|l| module_name(l) == *name) {
                continue;
            }
            return Err(format!(
                "kernel {} has no module {name} (neither in modules.dep nor built in)",
                kernel.version
            ));
        };
        visit(&path, &deps, &mut order, 0)?;
    }
    Ok(order.iter().map(|p| kernel.modules.join(p)).collect())
}

/// Depth-first, dependencies first. modules.dep lists a module's
/// dependencies so that the last one is loaded first (modprobe(8) inserts
/// them in reverse), and each dependency has its own line.
fn visit(
    path: &str,
    deps: &HashMap<String, Vec<String>>,
    order: &mut Vec<String>,
    depth: usize,
) -> Result<(), String> {
    if order.iter().any(|p| p == path) {
        return Ok(());
    }
    if depth > 32 {
        return Err(format!("modules.dep: a dependency loop through {path}"));
    }
    for d in deps.get(path).into_iter().flatten().rev() {
        visit(d, deps, order, depth + 1)?;
    }
    if !order.iter().any(|p| p == path) {
        order.push(path.to_string());
    }
    Ok(())
}

/// `kernel/drivers/net/virtio_net.ko: kernel/drivers/net/net_failover.ko …`
fn parse_modules_dep(text: &str) -> HashMap<String, Vec<String>> {
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(m, d)| {
            (
                m.trim().to_string(),
                d.split_whitespace().map(String::from).collect(),
            )
        })
        .collect()
}

/// `kernel/drivers/net/virtio_net.ko.xz` → `virtio_net` (modules are named
/// with `_` even where the file has `-`).
fn module_name(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.split(".ko").next().unwrap_or(file);
    stem.replace('-', "_")
}

/// The bytes of a module file, decompressed if the distribution compressed
/// it (busybox's insmod reads plain ELF).
pub(crate) fn module_bytes(path: &Path) -> Result<Vec<u8>, String> {
    let raw = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let tool = match ext {
        "ko" => return Ok(raw),
        "xz" => "xz",
        "zst" => "zstd",
        "gz" => "gzip",
        other => {
            return Err(format!(
                "{}: unknown module compression {other}",
                path.display()
            ))
        }
    };
    let tool = crate::host::which(tool)
        .ok_or_else(|| format!("{}: needs {tool} to decompress", path.display()))?;
    let out = Command::new(tool)
        .arg("-dc")
        .arg(path)
        .output()
        .map_err(|e| format!("decompressing {}: {e}", path.display()))?;
    if !out.status.success() {
        return Err(format!("decompressing {} failed", path.display()));
    }
    Ok(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_come_after_their_dependencies() {
        let text = "kernel/drivers/net/virtio_net.ko: kernel/drivers/net/net_failover.ko kernel/net/core/failover.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/virtio/virtio_ring.ko:
kernel/drivers/virtio/virtio_mmio.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/net/net_failover.ko: kernel/net/core/failover.ko
kernel/net/core/failover.ko:
";
        let deps = parse_modules_dep(text);
        let mut order = Vec::new();
        for m in [
            "kernel/drivers/virtio/virtio_mmio.ko",
            "kernel/drivers/net/virtio_net.ko",
        ] {
            visit(m, &deps, &mut order, 0).unwrap();
        }
        let names: Vec<String> = order.iter().map(|p| module_name(p)).collect();
        assert_eq!(
            names,
            [
                "virtio_ring",
                "virtio",
                "virtio_mmio",
                "failover",
                "net_failover",
                "virtio_net"
            ]
        );
    }

    #[test]
    fn the_timer_frequency_comes_from_the_config() {
        let config = "# CONFIG_HZ_100 is not set\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n";
        assert_eq!(config_hz(config), Some(250));
        assert_eq!(config_hz("CONFIG_HZ_250=y\n"), None);
        assert_eq!(config_hz("CONFIG_HZ=0\n"), None);
    }

    #[test]
    fn module_names_ignore_compression_and_dashes() {
        assert_eq!(module_name("kernel/a/virtio-rng.ko.xz"), "virtio_rng");
        assert_eq!(module_name("virtio_net.ko"), "virtio_net");
    }

    #[test]
    fn the_first_magic_is_found() {
        assert_eq!(position(b"abc\xfd7zXZ\x00", b"\xfd7zXZ\x00"), Some(3));
        assert_eq!(position(b"abc", b"xyz"), None);
    }
}
