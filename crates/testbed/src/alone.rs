//! A test that needs its process to itself: it changes what the whole
//! process sees (an environment variable), or counts the process's own
//! threads. Each crate's integration tests are one binary whose tests share
//! a process under `cargo test` (docs/testing.md), so such a test runs its
//! body again in a child process of the same binary, alone.

use std::process::Command;

/// Set in the child; its value is the test's name.
const CHILD: &str = "TARE_TEST_ALONE";

/// Returns `true` in the child, where the caller goes on with the test.
/// In the test's own process, runs `test` (its path in the binary,
/// `module::name`) in a child of this binary with `env` set, panics unless
/// the child ran exactly that test and it passed, and returns `false`: the
/// caller then returns.
pub fn in_child(test: &str, env: &[(&str, &str)]) -> bool {
    if std::env::var(CHILD).is_ok_and(|t| t == test) {
        return true;
    }
    let out = Command::new(std::env::current_exe().expect("this test binary"))
        .args([test, "--exact", "--nocapture", "--test-threads", "1"])
        .envs(env.iter().copied())
        .env(CHILD, test)
        .output()
        .expect("running this test binary again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // A filter that matches nothing passes too: the child must have run one.
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{test} in a child process ({}):\n{stdout}\n{stderr}",
        out.status
    );
    false
}
