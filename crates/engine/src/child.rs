//! Waiting for a child process with a time limit: every helper program
//! tare runs (ssh to a remote host, mkfs for a guest's disk) is bounded,
//! so a hung one is an error, not a hang.

use std::io::Read;
use std::process::{Child, ExitStatus, Output};
use std::time::{Duration, Instant};

/// Why [`output_within`] has no output.
#[derive(Debug)]
pub enum Waited {
    /// Still running at the limit: killed.
    TimedOut,
    /// Waiting for it failed.
    Failed(std::io::Error),
}

/// Waits for `child` (stdout and stderr piped, both read while it runs) at
/// most `limit`, killing it past that; its output either way.
pub fn output_within(mut child: Child, limit: Duration) -> Result<Output, Waited> {
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
                return Err(Waited::TimedOut);
            }
            Err(e) => return Err(Waited::Failed(e)),
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
