//! Waiting for a child process with a time limit: every ssh command tare
//! runs is bounded, so an unreachable or hung host is an error, not a hang.

use std::io::Read;
use std::process::{Child, ExitStatus, Output};
use std::time::{Duration, Instant};

/// Waits for `child` (stdout and stderr piped) at most `limit`, killing it
/// past that; its output either way.
pub(crate) fn with_limit(mut child: Child, limit: Duration) -> Result<Output, String> {
    let out = child.stdout.take().map(drain);
    let err = child.stderr.take().map(drain);
    let deadline = Instant::now() + limit;
    let status: ExitStatus = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer within {} s", limit.as_secs()));
            }
            Err(e) => return Err(format!("waiting for ssh: {e}")),
        }
    };
    let join = |h: Option<std::thread::JoinHandle<Vec<u8>>>| {
        h.and_then(|h| h.join().ok()).unwrap_or_default()
    };
    Ok(Output {
        status,
        stdout: join(out),
        stderr: join(err),
    })
}

fn drain<R: Read + Send + 'static>(mut r: R) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        buf
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
