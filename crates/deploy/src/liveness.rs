//! Whether a deployment still serves, asked before and after each trial
//! (docs/experiments.md, "Failed trials"): its process (or container) is
//! alive, not stopped (state `T` in `/proc/PID/stat`: SIGSTOP), and still
//! answers the probe it answered when it was deployed. A server killed or
//! frozen during a trial is then named as the reason the trial failed,
//! never measured as a server that answers nothing.

use std::path::PathBuf;
use std::time::Duration;

use tare_engine::Endpoint;

use crate::health;
use crate::placements::{Role, Running};
use crate::procfs;
use crate::targets::Server;

/// Tries of the probe before the server is called unresponsive: one slow
/// answer just after a heavy load is not a dead server.
const PROBE_TRIES: u32 = 3;
/// Each probe's time limit.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// What a liveness check needs of a started deployment.
pub(crate) struct Liveness {
    pub(crate) running: Box<dyn Running>,
    /// The deployment's other servers (a target's companion).
    pub(crate) companions: Vec<Box<dyn Running>>,
    pub(crate) server: Server,
    pub(crate) endpoint: Endpoint,
    pub(crate) netns: Option<PathBuf>,
}

impl Liveness {
    /// `Ok` while it serves; else why not, as one line
    /// (`server exited with signal 9`, `server stopped (SIGSTOP)`).
    pub(crate) fn check(&self) -> Result<(), String> {
        state(self.running.as_ref()).map_err(|e| format!("server {e}"))?;
        for c in &self.companions {
            state(c.as_ref()).map_err(|e| format!("its {} {e}", Role::Companion.name()))?;
        }
        let probe = |timeout| self.server.probe(&self.endpoint, timeout);
        let mut last = String::new();
        for _ in 0..PROBE_TRIES {
            match health::probe_once(&probe, self.netns.as_deref(), PROBE_TIMEOUT) {
                Ok(()) => return Ok(()),
                Err(e) => last = e.reason,
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Err(format!(
            "server no longer answers its readiness probe: {last}"
        ))
    }
}

/// Alive and running: a stopped process is alive to its placement (a
/// container stays "running") but serves nothing.
fn state(r: &dyn Running) -> Result<(), String> {
    r.alive()?;
    match procfs::stat(r.pid()) {
        Some(s) if s.state == 'T' || s.state == 't' => Err("stopped (SIGSTOP)".into()),
        _ => Ok(()),
    }
}
