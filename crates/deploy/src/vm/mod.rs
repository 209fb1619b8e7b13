//! Virtual machines for the `vm-*` placements: the server in a QEMU guest
//! booted from the host's kernel and an initramfs tare builds from the same
//! server binary, with no image registry and no download.
//!
//! - `kernel`: the guest kernel (`/boot/vmlinuz-*`, unpacked to a vmlinux
//!   in the cache) and its virtio modules.
//! - `initramfs` (on `cpio`): busybox, the modules, the server's closure,
//!   the deployment directory and the `/init` script (`init`).
//! - `accel`: KVM if a trial guest boots with it, TCG otherwise.
//! - `qemu`: the command line (`microvm`, direct kernel boot, virtio-net).
//! - `disk`: the data disk for `storage = "volume"` (a raw file formatted
//!   ext4 on the host, virtio-blk with `cache=none`).
//! - `threads`: QEMU's vCPU threads (pinned) and vhost-net's workers.
//!
//! The placements (`placements::vm`) put these together with a tap network
//! of the lab (`lab::TapNet`) or QEMU's user-mode network.

pub mod accel;
mod cpio;
pub(crate) mod disk;
pub mod init;
pub(crate) mod initramfs;
pub(crate) mod kernel;
pub(crate) mod qemu;
pub(crate) mod threads;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub use accel::TCG_LABEL;
pub(crate) use qemu::Accel;

/// Where unpacked kernels, base initramfs archives and the accelerator
/// verdict are cached (`TARE_VM_CACHE` overrides). A cache, not a leftover:
/// `tare cleanup` leaves it.
pub(crate) fn cache_dir() -> PathBuf {
    std::env::var_os("TARE_VM_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/tmp/tare-vm-cache"))
}

/// What this machine offers guests: QEMU, a kernel, an accelerator.
#[derive(Clone, Debug)]
pub(crate) struct Host {
    pub qemu: PathBuf,
    pub qemu_version: String,
    pub kernel: kernel::Kernel,
    pub accel: accel::Verdict,
    pub cache: PathBuf,
    /// `/dev/vhost-net` exists (asking QEMU for vhost without it aborts it).
    pub vhost: bool,
    /// The host's TSC rate, told to TCG guests (`accel::tsc_khz`).
    pub tsc_khz: Option<u64>,
}

/// The machine's guest facilities, found once per process (the kernel
/// unpacking and the accelerator trial are cached on disk too).
pub(crate) fn host() -> Result<&'static Host, String> {
    static HOST: OnceLock<Result<Host, String>> = OnceLock::new();
    HOST.get_or_init(find_host).as_ref().map_err(Clone::clone)
}

fn find_host() -> Result<Host, String> {
    let qemu = crate::host::which("qemu-system-x86_64")
        .ok_or("no qemu-system-x86_64 (Debian: apt-get install qemu-system-x86)")?;
    let cache = cache_dir();
    std::fs::create_dir_all(&cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    let kernel = kernel::find(&cache)?;
    crate::host::which("busybox")
        .ok_or("no busybox for the guest's init (Debian: apt-get install busybox-static)")?;
    let accel = accel::detect(&qemu, &kernel, &cache);
    Ok(Host {
        qemu_version: crate::host::version_line(&qemu, "--version").unwrap_or_default(),
        qemu,
        kernel,
        accel,
        cache,
        vhost: Path::new("/dev/vhost-net").exists(),
        tsc_khz: accel::tsc_khz(),
    })
}
