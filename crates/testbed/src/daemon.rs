//! What the throw-away servers share: their binary found, a scratch
//! directory each, a start tried again on another port when the port was
//! taken, the wait until it answers, and the kill of its process group.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The first of `paths` that exists, or a panic saying `missing`.
pub(crate) fn installed(paths: &[&'static str], missing: &str) -> &'static str {
    paths
        .iter()
        .copied()
        .find(|p| Path::new(p).exists())
        .unwrap_or_else(|| panic!("{missing}"))
}

/// A fresh, empty `<base>/tare-testbed-<kind>-<pid>-<n>`.
pub(crate) fn scratch_dir(base: &Path, kind: &str) -> PathBuf {
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let dir = base.join(format!(
        "tare-testbed-{kind}-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `try_start` on up to five ports: a port from the kernel, released, then
/// given to the server, may be handed to another test meanwhile, and a
/// start whose server exited is tried again on another. After five, the
/// directory is removed and the panic quotes the server's `log` there.
pub(crate) fn on_a_free_port<T>(
    what: &str,
    dir: &Path,
    log: &str,
    mut try_start: impl FnMut() -> Option<T>,
) -> T {
    for _attempt in 0..5 {
        if let Some(server) = try_start() {
            return server;
        }
    }
    let log = std::fs::read_to_string(dir.join(log)).unwrap_or_default();
    let _ = std::fs::remove_dir_all(dir);
    panic!("{what} did not start (5 ports tried): {log}");
}

/// `server` once `ready()` holds, polled every `poll`; `None` when its
/// process (`child` of it) exited first: its port was taken; nothing to
/// stop, and its directory is kept for the next try. Panics after `limit`,
/// `server` then killing it on drop.
pub(crate) fn when_ready<T>(
    mut server: T,
    child: fn(&mut T) -> &mut Option<Child>,
    what: &str,
    (limit, poll): (Duration, Duration),
    ready: impl Fn() -> bool,
) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        let process = child(&mut server);
        if let Some(Ok(Some(_))) = process.as_mut().map(|c| c.try_wait()) {
            *process = None;
            std::mem::forget(server);
            return None;
        }
        if ready() {
            return Some(server);
        }
        assert!(Instant::now() < deadline, "{what} did not answer");
        std::thread::sleep(poll);
    }
}

/// Kills `child`'s process group now (SIGKILL), as a crash would.
pub(crate) fn kill_group(child: &mut Option<Child>) {
    if let Some(mut c) = child.take() {
        // SAFETY: signalling the process group of our own child.
        unsafe { libc::kill(-(c.id() as i32), libc::SIGKILL) };
        let _ = c.wait();
    }
}

/// What every throw-away server with a `child` (in its own process
/// group), a `port` on 127.0.0.1 and a `dir` of its own answers the same
/// way: its pid, its address, a crash on demand, and nothing left once it
/// is dropped, even when a test fails.
macro_rules! server_handle {
    ($server:ty) => {
        impl $server {
            pub fn pid(&self) -> u32 {
                self.child.as_ref().map_or(0, |c| c.id())
            }

            /// `127.0.0.1:PORT`.
            pub fn addr(&self) -> std::net::SocketAddr {
                std::net::SocketAddr::from(([127, 0, 0, 1], self.port))
            }

            /// Kills the server now (SIGKILL), as a crash would.
            pub fn kill(&mut self) {
                $crate::daemon::kill_group(&mut self.child);
            }
        }

        impl Drop for $server {
            fn drop(&mut self) {
                self.kill();
                let _ = std::fs::remove_dir_all(&self.dir);
            }
        }
    };
}
pub(crate) use server_handle;
