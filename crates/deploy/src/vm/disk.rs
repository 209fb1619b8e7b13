//! The guest's data disk (`storage = "volume"` in a vm placement): a raw
//! file in the deployment's `vm/` directory, formatted ext4 on the host
//! with the server's content in it (`mkfs.ext4 -d`), attached as
//! virtio-blk with `cache=none` (O_DIRECT on the host file, no host page
//! cache: the IBM study's KVM disk, docs/studies.md, seed 002) and
//! `aio=native` (Linux AIO, which `cache=none` allows), and mounted by the
//! guest's init over the content directory (`init::Data::Disk`).
//!
//! The file is sparse: it holds what the filesystem and the test files
//! wrote, not its size. It lives in the deployment directory, so it goes
//! with it (teardown, `tare cleanup`).

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use tare_engine::child::{output_within, Waited};

/// The disk's size: room for fio's test file at its largest usual sizes
/// (`[load.tool] size`, 256m in examples/ibm-host.toml) and the content.
/// Sparse, so the host pays only for what is written.
pub(crate) const DEFAULT_BYTES: u64 = 4 << 30;

/// The filesystem made on the disk.
pub(crate) const GUEST_FS: &str = "ext4";

/// How QEMU reaches the file: no host page cache, Linux native AIO.
pub(crate) const CACHE: &str = "none";
pub(crate) const AIO: &str = "native";

/// The guest's device for the first virtio-blk disk.
pub(crate) const DEVICE: &str = "/dev/vda";

/// How long `mkfs.ext4` may take (a 4 GiB sparse file takes ~20 ms here).
const MKFS_LIMIT: Duration = Duration::from_secs(60);

/// A made disk.
#[derive(Clone, Debug)]
pub(crate) struct Disk {
    pub path: PathBuf,
    pub bytes: u64,
    /// The filesystem the file lives on, on the host.
    pub host_fs: String,
}

/// Makes `vm_dir/data.raw`, `bytes` long, formatted ext4 with `content`'s
/// files in it (owners and modes kept), checking that the host file takes
/// O_DIRECT (`cache=none` needs it).
pub(crate) fn make(vm_dir: &Path, content: &Path, bytes: u64) -> Result<Disk, String> {
    let mkfs = crate::host::which("mkfs.ext4").ok_or(
        "no mkfs.ext4 to format the guest's disk (Debian: apt-get install e2fsprogs; scripts/setup.sh does)",
    )?;
    let path = vm_dir.join("data.raw");
    let file = std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    file.set_len(bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    drop(file);
    let host_fs = crate::procfs::fs_type(std::process::id() as libc::pid_t, &path)
        .unwrap_or_else(|| "unknown".into());
    if let Err(e) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
    {
        return Err(format!(
            "{}: the disk file's filesystem ({host_fs}) refuses O_DIRECT, which QEMU's cache=none needs ({e}); put the deployment on a disk filesystem (TMPDIR)",
            path.display()
        ));
    }
    // One inode per MiB (a few files, not millions), or twice the
    // content's entries when it has more (an image's root filesystem), and
    // the inode tables written now: with lazy initialisation the guest
    // kernel would zero them in the background (ext4lazyinit) while the
    // benchmark runs.
    let inodes = (bytes >> 20).max(2 * entries(content) + 1024);
    let child = Command::new(&mkfs)
        .args([
            "-q",
            "-F",
            "-L",
            "tare-data",
            "-N",
            &inodes.to_string(),
            "-E",
        ])
        .arg("lazy_itable_init=0,lazy_journal_init=1")
        .arg("-d")
        .arg(content)
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", mkfs.display()))?;
    let out = output_within(child, MKFS_LIMIT).map_err(|w| match w {
        Waited::TimedOut => format!(
            "mkfs.ext4 {} took over {} s",
            path.display(),
            MKFS_LIMIT.as_secs()
        ),
        Waited::Failed(e) => format!("mkfs.ext4: {e}"),
    })?;
    if !out.status.success() {
        let words = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "mkfs.ext4 {} failed ({}): {}",
            path.display(),
            out.status,
            words.trim().lines().last().unwrap_or("no output")
        ));
    }
    Ok(Disk {
        path,
        bytes,
        host_fs,
    })
}

/// How many entries the tree at `dir` holds (0 if it cannot be read).
fn entries(dir: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => 1 + entries(&e.path()),
            _ => 1,
        })
        .sum()
}

impl Disk {
    /// QEMU's arguments attaching it as the guest's first virtio-blk disk.
    pub(crate) fn qemu_args(&self) -> [String; 4] {
        [
            "-drive".into(),
            format!(
                "file={},if=none,id=d0,format=raw,cache={CACHE},aio={AIO}",
                self.path.display()
            ),
            "-device".into(),
            "virtio-blk-device,drive=d0".into(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disk_is_formatted_with_the_content_and_attached_uncached() {
        if crate::host::which("mkfs.ext4").is_none() {
            eprintln!("skipped: no mkfs.ext4 here");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let content = dir.path().join("data");
        std::fs::create_dir(&content).unwrap();
        std::fs::write(content.join("index.html"), "hi").unwrap();
        let d = match make(dir.path(), &content, 64 << 20) {
            Ok(d) => d,
            // tmpfs before Linux 6.6 refuses O_DIRECT: said in one line.
            Err(e) if e.contains("refuses O_DIRECT") => {
                eprintln!("skipped: {e}");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        assert_eq!(std::fs::metadata(&d.path).unwrap().len(), 64 << 20);
        assert!(!d.host_fs.is_empty());
        let a = d.qemu_args().join(" ");
        assert!(
            a.contains("format=raw,cache=none,aio=native -device virtio-blk-device,drive=d0"),
            "{a}"
        );
        // The file holds an ext4 filesystem (its magic at 1080).
        let bytes = std::fs::read(&d.path).unwrap();
        assert_eq!(&bytes[1080..1082], &[0x53, 0xEF]);
        let e = make(dir.path(), &dir.path().join("absent"), 64 << 20).unwrap_err();
        assert!(e.starts_with("mkfs.ext4 ") && !e.contains('\n'), "{e}");
    }
}
