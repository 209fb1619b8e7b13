//! Which process owns a lab network, so `cleanup_all` removes what a dead run
//! left behind but never pulls a namespace out from under a live one (`tare
//! cleanup` typed in another terminal while `tare run` is measuring).
//!
//! The owner binds an abstract Unix socket named after the lab id for as long
//! as the network lives. Abstract sockets leave no file and vanish when the
//! process dies, even by SIGKILL (unix(7), "Abstract sockets"), so "the name
//! can be bound" means "no live owner". They are per network namespace, so
//! every bind here must happen on a thread in the host namespace, which is
//! where lab networks are created and cleaned up.
//!
//! The same mechanism serialises subnet allocation across processes.

use std::collections::BTreeSet;
use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::LabError;

/// Lab ids of networks this process created and has not torn down. A net
/// leaked with `mem::forget` stays here, so this process's own `cleanup_all`
/// may remove it even though its owner socket is still bound.
static MINE: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

fn mine() -> MutexGuard<'static, BTreeSet<String>> {
    MINE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Proof that this process owns a lab id. Dropping it frees the id.
#[derive(Debug)]
pub(crate) struct OwnerLock {
    id: String,
    _socket: UnixListener,
}

impl OwnerLock {
    /// Claims `id`; `Ok(None)` if a live process already holds it.
    pub(crate) fn claim(id: &str) -> io::Result<Option<OwnerLock>> {
        Ok(bind(&format!("tare-lab-{id}"))?.map(|socket| {
            mine().insert(id.to_string());
            OwnerLock {
                id: id.to_string(),
                _socket: socket,
            }
        }))
    }
}

impl Drop for OwnerLock {
    fn drop(&mut self) {
        mine().remove(&self.id);
    }
}

/// Forgets that this process owns `id` (after `cleanup_all` removed it).
pub(crate) fn release(id: &str) {
    mine().remove(id);
}

/// True when a live process other than this one owns the lab network `id`.
pub(crate) fn owned_elsewhere(id: &str) -> bool {
    if mine().contains(id) {
        return false;
    }
    // A failed probe (other than "in use") says nothing about an owner;
    // treat it as no owner, since the alternative is never cleaning up.
    matches!(bind(&format!("tare-lab-{id}")), Ok(None))
}

/// Held while choosing a subnet and assigning its host-side addresses, so two
/// processes never pick the same block (the overlap check reads the host's
/// addresses, which are only there once assigned).
pub(crate) struct AllocationLock(#[allow(dead_code)] UnixListener);

impl AllocationLock {
    /// Waits up to `patience` for other tare processes to finish allocating.
    pub(crate) fn acquire(patience: Duration) -> Result<AllocationLock, LabError> {
        let deadline = Instant::now() + patience;
        loop {
            match bind("tare-lab-alloc") {
                Ok(Some(socket)) => return Ok(AllocationLock(socket)),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                Ok(None) => return Err(LabError::LockTimeout),
                Err(source) => {
                    return Err(LabError::Io {
                        what: "binding the lab allocation lock (abstract unix socket)".into(),
                        source,
                    })
                }
            }
        }
    }
}

/// Binds the abstract socket `name`; `Ok(None)` if it is taken.
fn bind(name: &str) -> io::Result<Option<UnixListener>> {
    let addr = SocketAddr::from_abstract_name(name.as_bytes())?;
    match UnixListener::bind_addr(&addr) {
        Ok(socket) => Ok(Some(socket)),
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claimed_id_cannot_be_claimed_twice_and_is_free_after_drop() {
        let id = format!("{:08x}", std::process::id() ^ 0x5a5a_0001);
        let lock = OwnerLock::claim(&id).unwrap().expect("free id");
        assert!(OwnerLock::claim(&id).unwrap().is_none());
        // Owned by this process, so this process may clean it up.
        assert!(!owned_elsewhere(&id));
        drop(lock);
        assert!(!owned_elsewhere(&id));
        assert!(OwnerLock::claim(&id).unwrap().is_some());
    }

    #[test]
    fn an_id_bound_outside_the_registry_counts_as_another_owner() {
        // Stands for another process: the name is bound, but not by OwnerLock.
        let id = format!("{:08x}", std::process::id() ^ 0x5a5a_0002);
        let other = bind(&format!("tare-lab-{id}")).unwrap().unwrap();
        assert!(owned_elsewhere(&id));
        drop(other);
        assert!(!owned_elsewhere(&id));
    }
}
