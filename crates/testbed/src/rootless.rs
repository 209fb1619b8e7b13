//! Rootless Podman users for tests: one the test makes (and removes with
//! everything it ran, failed test or not), `podman` run as a user, and the
//! user-space forwarders a user runs.

use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

/// The user tare makes when told none (crates/deploy, podman_user.rs).
pub const DEFAULT_USER: &str = "tare-rootless";
/// Where tare records the users it ran rootless Podman as.
const RECORD: &str = "/var/lib/tare/rootless-users";

/// A user's uid, gid and home, from /etc/passwd.
pub fn user(name: &str) -> Option<(u32, u32, String)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() >= 6 && f[0] == name)
            .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?, f[5].to_string())))?
    })
}

/// `podman ARGS` as `name`, as tare runs it: stdout, or `None` on failure.
/// Its runtime directory is made first, as tare makes it: run with a
/// missing `XDG_RUNTIME_DIR`, Podman puts the store's run state in
/// `/tmp/containers-user-UID` and `/tmp/podman-run-UID` and records that in
/// the store, so every later `podman` of the user (tare's too) kept it
/// there, and a removed user's state outlived it for the next user given
/// its uid.
pub fn podman_as(name: &str, args: &[&str]) -> Option<String> {
    let (uid, gid, home) = user(name)?;
    runtime_dir(uid, gid);
    let out = Command::new("podman")
        .args(args)
        .uid(uid)
        .gid(gid)
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("HOME", &home)
        .env("XDG_RUNTIME_DIR", format!("/run/user/{uid}"))
        .current_dir(&home)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `/run/user/UID`, the user's and private, as a login session makes it.
fn runtime_dir(uid: u32, gid: u32) {
    use std::os::unix::fs::PermissionsExt;
    let dir = format!("/run/user/{uid}");
    if std::path::Path::new(&dir).is_dir() {
        return;
    }
    let _ = std::fs::create_dir_all(&dir)
        .and_then(|()| std::os::unix::fs::chown(&dir, Some(uid), Some(gid)))
        .and_then(|()| std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)));
}

/// What `name` has in its Podman store and runs, as lines (`container X`,
/// `volume X`, `image X`, `process slirp4netns` ...): compared before and
/// after a test.
pub fn things(name: &str) -> Vec<String> {
    let mut v = Vec::new();
    let list = |args: &[&str]| podman_as(name, args).unwrap_or_default();
    for l in list(&["ps", "-a", "--format", "{{.Names}}"]).lines() {
        v.push(format!("container {l}"));
    }
    for l in list(&["volume", "ls", "-q"]).lines() {
        v.push(format!("volume {l}"));
    }
    for l in list(&["images", "--format", "{{.Repository}}:{{.Tag}}"]).lines() {
        v.push(format!("image {l}"));
    }
    if let Some((uid, ..)) = user(name) {
        for (pid, exe) in processes(uid) {
            if FORWARDERS.contains(&exe.as_str()) {
                v.push(format!("process {exe} {pid}"));
            }
        }
    }
    v.sort();
    v
}

/// The forwarders' program names, as /proc/PID/exe gives them.
pub(crate) const FORWARDERS: [&str; 5] = [
    "slirp4netns",
    "rootlessport",
    "pasta",
    "passt",
    "passt.avx2",
];

/// (pid, program name) of every process of `uid`.
pub fn processes(uid: u32) -> Vec<(i32, String)> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            (e.metadata().ok()?.uid() == uid).then_some(())?;
            let exe = std::fs::read_link(e.path().join("exe")).ok()?;
            Some((pid, exe.file_name()?.to_string_lossy().into_owned()))
        })
        .collect()
}

/// A user a test uses: made by the test (or by tare, for
/// [`DEFAULT_USER`]) and removed on drop with its processes, home, runtime
/// directory and record line, unless it existed before the test.
pub struct TestUser {
    pub name: String,
    existed: bool,
    record_existed: bool,
}

impl TestUser {
    /// A fresh user named `name` with subordinate ids (useradd gives a
    /// normal account a range).
    pub fn create(name: &str) -> TestUser {
        let u = TestUser::adopt(name);
        if !u.existed {
            let out = Command::new("useradd")
                .args(["--create-home", "--shell", "/usr/sbin/nologin", name])
                .output()
                .expect("useradd");
            assert!(
                out.status.success(),
                "useradd {name}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        u
    }

    /// `name`, which tare may create during the test: removed on drop if
    /// it did not exist now.
    pub fn adopt(name: &str) -> TestUser {
        TestUser {
            name: name.to_string(),
            existed: user(name).is_some(),
            record_existed: std::path::Path::new(RECORD).exists(),
        }
    }
}

impl Drop for TestUser {
    fn drop(&mut self) {
        if !self.existed {
            if let Some((uid, ..)) = user(&self.name) {
                // Podman's pause process and anything else the user runs;
                // all were started for this test, under this user alone.
                let deadline = Instant::now() + Duration::from_secs(5);
                loop {
                    let left = processes(uid);
                    if left.is_empty() || Instant::now() > deadline {
                        break;
                    }
                    for (pid, _) in left {
                        // SAFETY: plain syscall on a process of the test's user.
                        unsafe { libc::kill(pid, libc::SIGKILL) };
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                let _ = Command::new("userdel")
                    .args(["--remove", &self.name])
                    .output();
                // Podman's run state, wherever it was put (see `podman_as`).
                for dir in [
                    format!("/run/user/{uid}"),
                    format!("/tmp/containers-user-{uid}"),
                    format!("/tmp/podman-run-{uid}"),
                ] {
                    let _ = std::fs::remove_dir_all(dir);
                }
            }
        }
        if let Ok(text) = std::fs::read_to_string(RECORD) {
            let kept: Vec<&str> = text
                .lines()
                .filter(|l| self.existed || l.trim() != self.name)
                .collect();
            if kept.is_empty() && !self.record_existed {
                let _ = std::fs::remove_file(RECORD);
                let _ = std::fs::remove_dir("/var/lib/tare");
            } else {
                let _ = std::fs::write(
                    RECORD,
                    kept.iter().map(|l| format!("{l}\n")).collect::<String>(),
                );
            }
        }
    }
}
