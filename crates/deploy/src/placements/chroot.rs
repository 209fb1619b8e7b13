//! A plain process run from an image's exported root filesystem: the
//! image's files without the container (docs/your-service.md, "Your
//! image"). Between fork and exec the child makes a mount namespace of its
//! own, mounts /proc, /dev, /sys and a tmpfs /tmp inside the tree, and
//! chroots into it; the host's network, no seccomp filter, no cgroup limit.
//!
//! The mounts live in the child's namespace alone: they are gone when its
//! last process exits, however tare ends, and the host never sees them, so
//! removing the tree never walks into /proc or /dev.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Everything the child needs, made before the fork (no allocation after).
pub(crate) struct Chroot {
    root: CString,
    /// (source, target inside the tree, fs type, flags) in order.
    mounts: Vec<(CString, CString, CString, libc::c_ulong)>,
    workdir: CString,
}

impl Chroot {
    /// A chroot into `root` starting in `workdir` (a path in the image);
    /// the mount points are made in the tree if the image has none.
    pub(crate) fn new(root: &Path, workdir: &Path) -> io::Result<Chroot> {
        let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(io::Error::other);
        let s = |t: &str| CString::new(t).map_err(io::Error::other);
        let bind = libc::MS_BIND | libc::MS_REC;
        let mut mounts = vec![(c(root)?, c(root)?, s("none")?, bind)];
        for (source, at, fs, flags) in [
            ("proc", "proc", "proc", 0),
            ("/dev", "dev", "none", bind),
            ("/sys", "sys", "none", bind),
            ("tmpfs", "tmp", "tmpfs", 0),
        ] {
            let target = root.join(at);
            std::fs::create_dir_all(&target)?;
            mounts.push((s(source)?, c(&target)?, s(fs)?, flags));
        }
        // As an engine makes a missing working directory.
        let rel = workdir.strip_prefix("/").unwrap_or(workdir);
        std::fs::create_dir_all(root.join(rel))?;
        Ok(Chroot {
            root: c(root)?,
            mounts,
            workdir: c(workdir)?,
        })
    }

    /// Enters it. Runs in the child between fork and exec: only
    /// async-signal-safe syscalls.
    pub(crate) fn enter(&self) -> io::Result<()> {
        let check = |rc: libc::c_int| {
            if rc == 0 {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            }
        };
        let null = std::ptr::null();
        // SAFETY: plain syscalls on NUL-terminated strings made before the fork.
        unsafe {
            check(libc::unshare(libc::CLONE_NEWNS))?;
            // Nothing mounted here propagates back to the host.
            check(libc::mount(
                null,
                c"/".as_ptr(),
                null,
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
            // The tree bound onto itself first: its root is then a mount
            // the server's mountinfo shows (the root filesystem fact).
            for (source, target, fs, flags) in &self.mounts {
                check(libc::mount(
                    source.as_ptr(),
                    target.as_ptr(),
                    fs.as_ptr(),
                    *flags,
                    std::ptr::null(),
                ))?;
            }
            check(libc::chroot(self.root.as_ptr()))?;
            check(libc::chdir(self.workdir.as_ptr()))?;
        }
        Ok(())
    }
}
