//! What the peer tests share (`peer_redis_benchmark`, `peer_sysbench`):
//! each replays a peer tool's own cases with the peer (to prove the case)
//! and with tare, and checks the exit status, the lines printed and the
//! server-side effect.

use std::process::{Command, Output};
use std::time::Duration;

/// A case's verdict: what went wrong, if anything.
pub(crate) type Check = Result<(), String>;

/// A case: its name and its check, with the context `C` of its server.
pub(crate) type Case<C> = (&'static str, fn(&C, Tool) -> Check);

/// The two programs every case runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tool {
    Peer,
    Tare,
}

impl Tool {
    /// The program `peer`, or tare's `sub` command (of the binary
    /// `TARE_BIN` names, when set: an older build, to count what it passed).
    pub(crate) fn command(self, peer: &str, sub: &str) -> Command {
        match self {
            Tool::Peer => Command::new(peer),
            Tool::Tare => {
                let bin = std::env::var("TARE_BIN")
                    .unwrap_or_else(|_| env!("CARGO_BIN_EXE_tare").to_string());
                let mut c = Command::new(bin);
                c.arg(sub);
                c
            }
        }
    }
}

pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs a command, killed (its whole process group) after `limit`: a hung
/// tool fails its case.
pub(crate) fn bounded(mut c: Command, limit: Duration) -> Output {
    use std::os::unix::process::CommandExt;
    c.process_group(0)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().expect("the tool starts");
    let pid = child.id() as i32;
    let tick = Duration::from_millis(100);
    let ticks = limit.as_millis() / tick.as_millis();
    let guard = std::thread::spawn(move || {
        for _ in 0..ticks {
            std::thread::sleep(tick);
            // SAFETY: signal 0 only probes our child's process group.
            if unsafe { libc::kill(-pid, 0) } != 0 {
                return;
            }
        }
        // SAFETY: killing our own child's process group.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    });
    let out = child.wait_with_output().expect("the tool ends");
    // SAFETY: as above; the group is gone or ours.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let _ = guard.join();
    out
}

/// Every line of `want` (`*` matching any run of characters) is in
/// `out`, in this order; a carriage return ends a line too (progress
/// lines overwrite themselves with one).
pub(crate) fn has_lines<S: AsRef<str>>(out: &str, want: &[S]) -> Check {
    let mut lines = out.split(['\n', '\r']);
    for w in want {
        let w = w.as_ref();
        if !lines.any(|l| glob(w, l)) {
            return Err(format!("no line {w:?} (in order) in:\n{out}"));
        }
    }
    Ok(())
}

/// Whether `text` matches `pattern`, where `*` is any run of characters.
fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if text.len() < first.len() + last.len() || !text.starts_with(first) || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for p in &parts[1..parts.len() - 1] {
        match rest.find(p) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    true
}

/// Runs every case with the peer and with tare, `reset` before each and
/// once after the last; asserts that all passed, having said how many
/// each tool passed.
pub(crate) fn assert_cases_pass<C>(ctx: &C, cases: &[Case<C>], reset: fn(&C), peer: &str) {
    let mut failed = Vec::new();
    let mut passed = [0usize; 2];
    for (name, case) in cases {
        for (i, tool) in [Tool::Peer, Tool::Tare].into_iter().enumerate() {
            reset(ctx);
            match case(ctx, tool) {
                Ok(()) => passed[i] += 1,
                Err(e) => failed.push(format!("{tool:?}: {name}: {e}")),
            }
        }
    }
    reset(ctx);
    eprintln!(
        "{peer} cases: {peer} passed {}/{n}, tare passed {}/{n}",
        passed[0],
        passed[1],
        n = cases.len()
    );
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
