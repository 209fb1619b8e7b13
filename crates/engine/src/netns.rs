//! Running a worker thread inside a network namespace.
//!
//! `setns(CLONE_NEWNET)` changes the namespace of the calling *thread* only, so
//! a load generator can stand in another namespace ("a client on another
//! machine", as one of the lab's placements puts it) by having each worker enter it before
//! opening sockets, with no subprocess and no `ip netns exec`.

use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The path of a named namespace as `ip netns add NAME` creates it.
pub fn named(name: &str) -> PathBuf {
    Path::new("/run/netns").join(name)
}

/// Moves the calling thread into the network namespace at `path`.
pub fn enter(path: &Path) -> io::Result<()> {
    let f = std::fs::File::open(path).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("network namespace {}: {e}", path.display()),
        )
    })?;
    // SAFETY: plain syscall on an fd we hold open for its duration.
    let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("entering network namespace {}: {e}", path.display()),
        ));
    }
    Ok(())
}
