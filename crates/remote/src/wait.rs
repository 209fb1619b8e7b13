//! Waiting for a child process with a time limit: every ssh command tare
//! runs is bounded, so an unreachable or hung host is an error, not a hang.

use std::process::{Child, Output};
use std::time::{Duration, Instant};

use tare_engine::child::{output_within, Waited};

/// Waits for `child` (stdout and stderr piped) at most `limit`, killing it
/// past that; its output either way.
pub(crate) fn with_limit(child: Child, limit: Duration) -> Result<Output, String> {
    output_within(child, limit).map_err(|w| match w {
        Waited::TimedOut => format!("no answer within {} s", limit.as_secs()),
        Waited::Failed(e) => format!("waiting for ssh: {e}"),
    })
}

/// Waits up to `limit` for `child` to exit: its exit code (`Some(-1)` for
/// a signal), or `None` while it still runs.
pub(crate) fn exit_within(child: &mut Child, limit: Duration) -> Option<i32> {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s.code().unwrap_or(-1)),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => return None,
        }
    }
}
