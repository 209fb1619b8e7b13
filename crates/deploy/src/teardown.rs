//! What a deployment must undo, and the registry of live deployments that an
//! interrupt handler tears down (Ctrl-C leaves no trace).
//!
//! Each deployment owns an `Arc<Teardown>`; the registry holds another, so a
//! signal handler thread can undo everything while the main thread is blocked
//! inside a load run. Undoing is idempotent: whoever comes first takes the list.

use std::path::PathBuf;
use std::process::Child;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::docker;
use crate::error::DeployError;

/// One thing a deployment created, in creation order; undone in reverse.
pub(crate) enum Resource {
    /// A server process started in its own process group (pgid = its pid).
    Process(Child),
    Container(String),
    Volume(String),
    /// The deployment's temporary directory (config, content, logs, sockets).
    Dir(PathBuf),
    /// Anything else a placement made (a lab network), undone by itself.
    Undo(Box<dyn Undo>),
}

/// Something a placement made that knows how to remove itself, reporting
/// what it could not remove.
pub(crate) trait Undo: Send {
    fn undo(self: Box<Self>) -> Result<(), DeployError>;
}

#[derive(Default)]
pub(crate) struct Teardown {
    resources: Mutex<Vec<Resource>>,
}

fn live() -> &'static Mutex<Vec<Arc<Teardown>>> {
    static LIVE: OnceLock<Mutex<Vec<Arc<Teardown>>>> = OnceLock::new();
    LIVE.get_or_init(|| Mutex::new(Vec::new()))
}

impl Teardown {
    /// A new, registered teardown list.
    pub(crate) fn register() -> Arc<Teardown> {
        let t = Arc::new(Teardown::default());
        live()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(t.clone());
        t
    }

    pub(crate) fn push(&self, r: Resource) {
        self.resources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(r);
    }

    /// Undoes everything, newest first; keeps going past failures and returns the first.
    pub(crate) fn run(self: &Arc<Self>) -> Result<(), DeployError> {
        let taken = std::mem::take(&mut *self.resources.lock().unwrap_or_else(|e| e.into_inner()));
        live()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|t| !Arc::ptr_eq(t, self));
        let mut first = None;
        for r in taken.into_iter().rev() {
            if let Err(e) = undo(r) {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

fn undo(r: Resource) -> Result<(), DeployError> {
    match r {
        Resource::Process(child) => {
            stop_group(child);
            Ok(())
        }
        Resource::Container(id) => docker::remove_container(&id),
        Resource::Volume(name) => docker::remove_volume(&name),
        Resource::Dir(path) => match std::fs::remove_dir_all(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(DeployError::io(format!("removing {}", path.display()), e)),
        },
        Resource::Undo(u) => u.undo(),
    }
}

/// SIGTERM to the whole process group (nginx workers, postgres backends),
/// SIGKILL after a grace period, then reap the leader.
pub(crate) fn stop_group(mut child: Child) {
    let pgid = child.id() as libc::pid_t;
    signal_group(pgid, libc::SIGTERM);
    // A stopped (SIGSTOP) server holds SIGTERM until it runs again: let it
    // run, so a frozen server ends at once, not after the grace period.
    signal_group(pgid, libc::SIGCONT);
    // Postgres' smart shutdown waits for clients; SIGTERM on the postmaster is
    // "smart", so give it a bounded time, then force.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let _ = child.try_wait();
        if !group_alive(pgid) {
            break;
        }
        if Instant::now() >= deadline {
            signal_group(pgid, libc::SIGKILL);
            std::thread::sleep(Duration::from_millis(50));
            if !group_alive(pgid) {
                break;
            }
        }
        if Instant::now() >= deadline + Duration::from_secs(5) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.wait();
}

pub(crate) fn signal_group(pgid: libc::pid_t, sig: libc::c_int) {
    if pgid > 1 {
        // SAFETY: plain syscall; a negative pid addresses the process group.
        unsafe { libc::kill(-pgid, sig) };
    }
}

/// True while any process of the group exists (zombies of our own child count
/// until reaped, so callers reap with `try_wait` first).
pub(crate) fn group_alive(pgid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks existence.
    let rc = unsafe { libc::kill(-pgid, 0) };
    if rc == 0 {
        // Only zombies left? A zombie leader of our own is reaped by try_wait;
        // any other member that is a zombie will be reaped by init.
        return group_members(pgid).iter().any(|&pid| !is_zombie(pid));
    }
    false
}

fn group_members(pgid: libc::pid_t) -> Vec<libc::pid_t> {
    crate::procfs::pids()
        .into_iter()
        .filter(|&pid| crate::procfs::stat(pid).is_some_and(|s| s.pgrp == pgid))
        .collect()
}

fn is_zombie(pid: libc::pid_t) -> bool {
    crate::procfs::stat(pid).is_none_or(|s| s.state == 'Z')
}

/// Tears down every live deployment of this process (for interrupt handlers).
pub fn teardown_all() {
    let all: Vec<Arc<Teardown>> =
        std::mem::take(&mut *live().lock().unwrap_or_else(|e| e.into_inner()));
    for t in all {
        let _ = t.run();
    }
}
