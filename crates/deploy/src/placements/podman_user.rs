//! The unprivileged user rootless Podman runs as. A root tare runs `podman`
//! as that user (its uid and gid, its home, `XDG_RUNTIME_DIR=/run/user/UID`,
//! a clean environment), so the container, its user namespace and the
//! user-space network helpers (slirp4netns, rootlessport, pasta) are that
//! user's, as they are for anyone running rootless Podman by hand. A tare
//! that is not root is itself the rootless user.
//!
//! The default user, [`DEFAULT_USER`], is created on first use with
//! subordinate uid and gid ranges; another is named with the experiment key
//! `[target] rootless_user` and must exist. Every user tare ran rootless
//! Podman as is recorded in [`RECORD`], so `tare cleanup` finds its store.

use std::ffi::{CStr, CString};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The user tare creates when no other is named.
pub(crate) const DEFAULT_USER: &str = "tare-rootless";
/// The users tare has run rootless Podman as, one name a line (root only).
pub(crate) const RECORD: &str = "/var/lib/tare/rootless-users";
/// The subordinate ids a user needs: Podman maps container uids 1..65535
/// into this range (login.defs' SUB_UID_COUNT default; the images tare
/// builds own files as root and the targets' own users, e.g. postgres).
const MIN_RANGE: u64 = 65536;

/// What to install when a rootless part is missing.
pub(crate) const INSTALL: &str =
    "Debian: apt-get install podman uidmap slirp4netns passt; or scripts/setup.sh";

/// A resolved rootless user.
#[derive(Clone, Debug)]
pub(crate) struct RootlessUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub home: PathBuf,
    /// Subordinate uid and gid ranges (start, count), in file order: the
    /// container's ids 1, 2... map onto them in that order.
    subuids: Vec<(u64, u64)>,
    subgids: Vec<(u64, u64)>,
    /// tare runs as this user (not root): `podman` runs as is.
    is_self: bool,
}

fn euid() -> u32 {
    // SAFETY: plain syscall.
    unsafe { libc::geteuid() }
}

/// The passwd entry of `name`: (uid, gid, home).
fn passwd(name: &str) -> Option<(u32, u32, PathBuf)> {
    let cname = CString::new(name).ok()?;
    lookup(|pwd, buf: &mut [libc::c_char], result| {
        // SAFETY: every pointer is valid for the call; buf's length is passed.
        unsafe { libc::getpwnam_r(cname.as_ptr(), pwd, buf.as_mut_ptr(), buf.len(), result) }
    })
    .map(|(_, uid, gid, home)| (uid, gid, home))
}

/// The name of the user `uid`.
fn user_name(uid: u32) -> Option<String> {
    lookup(|pwd, buf: &mut [libc::c_char], result| {
        // SAFETY: as in `passwd`.
        unsafe { libc::getpwuid_r(uid, pwd, buf.as_mut_ptr(), buf.len(), result) }
    })
    .map(|(name, ..)| name)
}

/// Runs a `getpw*_r` call with its buffers: (name, uid, gid, home).
fn lookup(
    call: impl Fn(*mut libc::passwd, &mut [libc::c_char], *mut *mut libc::passwd) -> i32,
) -> Option<(String, u32, u32, PathBuf)> {
    let mut buf: Vec<libc::c_char> = vec![0; 16 * 1024];
    // SAFETY: an all-zero passwd is a valid value to be overwritten.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    if call(&mut pwd, &mut buf, &mut result) != 0 || result.is_null() {
        return None;
    }
    // SAFETY: on success the fields point into buf, NUL-terminated.
    let (name, home) = unsafe {
        (
            CStr::from_ptr(pwd.pw_name).to_string_lossy().into_owned(),
            CStr::from_ptr(pwd.pw_dir).to_string_lossy().into_owned(),
        )
    };
    Some((name, pwd.pw_uid, pwd.pw_gid, PathBuf::from(home)))
}

/// The ranges of `/etc/subuid` or `/etc/subgid` text for a user, named or
/// by uid (`name:start:count` lines).
pub(crate) fn ranges(text: &str, name: &str, uid: u32) -> Vec<(u64, u64)> {
    let uid = uid.to_string();
    text.lines()
        .filter_map(|l| {
            let mut f = l.trim().split(':');
            let (who, start, count) = (f.next()?, f.next()?, f.next()?);
            (who == name || who == uid)
                .then(|| Some((start.parse().ok()?, count.parse().ok()?)))
                .flatten()
        })
        .filter(|&(_, count)| count > 0)
        .collect()
}

/// Container id `id` on the host, for a user `own` with `ranges`: 0 is
/// the user itself, 1.. the subordinate ranges in order.
pub(crate) fn host_id(own: u32, ranges: &[(u64, u64)], id: u32) -> Option<u32> {
    if id == 0 {
        return Some(own);
    }
    let mut left = u64::from(id) - 1;
    for &(start, count) in ranges {
        if left < count {
            return u32::try_from(start + left).ok();
        }
        left -= count;
    }
    None
}

impl RootlessUser {
    /// The user named `name`, or when `None` the default (tare's own user
    /// when tare is not root). `deploying`: make the default user when
    /// missing, and record the user for `tare cleanup`. `Err` is one line
    /// naming what is missing.
    pub(crate) fn resolve(name: Option<&str>, deploying: bool) -> Result<RootlessUser, String> {
        let root = euid() == 0;
        let name = match (name, root) {
            (Some(n), _) => n.to_string(),
            (None, true) => DEFAULT_USER.to_string(),
            (None, false) => {
                user_name(euid()).ok_or_else(|| format!("uid {} has no passwd entry", euid()))?
            }
        };
        if !root && user_name(euid()).as_deref() != Some(name.as_str()) {
            return Err(format!(
                "running rootless Podman as {name} needs root (tare runs as uid {})",
                euid()
            ));
        }
        for tool in ["newuidmap", "newgidmap"] {
            if which(tool).is_none() {
                return Err(format!("{tool} is not installed ({INSTALL})"));
            }
        }
        let (uid, gid, home) = match passwd(&name) {
            Some(p) => p,
            None if deploying && root && name == DEFAULT_USER => {
                create_default()?;
                passwd(&name).ok_or_else(|| format!("useradd made no user {name}"))?
            }
            None if name == DEFAULT_USER => {
                return Err(format!(
                    "the rootless user {name} does not exist yet (tare creates it on first use)"
                ))
            }
            None => {
                return Err(format!(
                "the rootless user {name} does not exist: create it (useradd --create-home {name}) or leave rootless_user unset for tare's own {DEFAULT_USER}"
            ))
            }
        };
        if uid == 0 {
            return Err(format!("{name} is root, not an unprivileged user"));
        }
        let subuids = ranges(&read("/etc/subuid"), &name, uid);
        let subgids = ranges(&read("/etc/subgid"), &name, uid);
        let missing: Vec<&str> = [("/etc/subuid", &subuids), ("/etc/subgid", &subgids)]
            .iter()
            .filter(|(_, r)| r.iter().map(|(_, c)| c).sum::<u64>() < MIN_RANGE)
            .map(|(f, _)| *f)
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "the rootless user {name} has fewer than {MIN_RANGE} subordinate ids in {} (add a range: usermod --add-subuids 200000-265535 --add-subgids 200000-265535 {name})",
                missing.join(" and ")
            ));
        }
        let user = RootlessUser {
            name,
            uid,
            gid,
            home,
            subuids,
            subgids,
            is_self: !root,
        };
        if root {
            user.prepare(deploying)?;
        }
        Ok(user)
    }

    /// Its runtime directory, which a login session would have made.
    pub(crate) fn runtime_dir(&self) -> PathBuf {
        PathBuf::from(format!("/run/user/{}", self.uid))
    }

    /// Makes the runtime directory, and records the user for cleanup.
    fn prepare(&self, record_it: bool) -> Result<(), String> {
        use std::os::unix::fs::PermissionsExt;
        let dir = self.runtime_dir();
        if !dir.is_dir() {
            std::fs::create_dir_all(&dir)
                .and_then(|()| std::os::unix::fs::chown(&dir, Some(self.uid), Some(self.gid)))
                .and_then(|()| {
                    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
                })
                .map_err(|e| format!("creating {}: {e}", dir.display()))?;
        }
        if !record_it {
            return Ok(());
        }
        record(&self.name).map_err(|e| format!("recording the rootless user in {RECORD}: {e}"))
    }

    /// `program` to run as this user: its ids, home, runtime directory
    /// and a clean environment (root's XDG and container settings would
    /// point Podman at root's store).
    pub(crate) fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        if self.is_self {
            return c;
        }
        let path =
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/sbin:/usr/bin:/sbin:/bin".into());
        c.uid(self.uid)
            .gid(self.gid)
            .env_clear()
            .env("PATH", path)
            .env("HOME", &self.home)
            .env("USER", &self.name)
            .env("LOGNAME", &self.name)
            .env("XDG_RUNTIME_DIR", self.runtime_dir())
            .env("LANG", "C.UTF-8")
            .current_dir(&self.home);
        c
    }

    /// The host uid and gid of the container's user `(uid, gid)`.
    pub(crate) fn host_ids(&self, (uid, gid): (u32, u32)) -> Option<(u32, u32)> {
        Some((
            host_id(self.uid, &self.subuids, uid)?,
            host_id(self.gid, &self.subgids, gid)?,
        ))
    }

    /// Its subordinate uid ranges, for doctor ("100000+65536").
    pub(crate) fn describe(&self) -> String {
        let r: Vec<String> = self
            .subuids
            .iter()
            .map(|(s, c)| format!("{s}+{c}"))
            .collect();
        format!("{} (uid {}, subuids {})", self.name, self.uid, r.join(","))
    }
}

/// Whether this machine can run rootless Podman as the default user: who
/// that is, or one line naming what is missing.
pub(crate) fn availability() -> Result<String, String> {
    if std::fs::read_to_string("/proc/sys/user/max_user_namespaces").is_ok_and(|s| s.trim() == "0")
    {
        return Err("user namespaces are disabled (sysctl user.max_user_namespaces=0)".into());
    }
    if euid() == 0 && passwd(DEFAULT_USER).is_none() {
        for tool in ["newuidmap", "newgidmap", "useradd"] {
            if which(tool).is_none() {
                return Err(format!("{tool} is not installed ({INSTALL})"));
            }
        }
        return Ok(format!(
            "as {DEFAULT_USER}, which tare creates on first use"
        ));
    }
    RootlessUser::resolve(None, false).map(|u| format!("as {}", u.describe()))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

pub(crate) fn which(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/sbin:/usr/bin:/sbin:/bin".into());
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")])
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// `useradd` for the default user: a system account with no login shell,
/// a home for its Podman store, and subordinate ids (`-F`: system accounts
/// get none otherwise).
fn create_default() -> Result<(), String> {
    let home = format!("/var/lib/{DEFAULT_USER}");
    let out = Command::new("useradd")
        .args([
            "--system",
            "--create-home",
            "--home-dir",
            &home,
            "--shell",
            "/usr/sbin/nologin",
            "--add-subids-for-system",
            "--comment",
            "tare rootless Podman",
            DEFAULT_USER,
        ])
        .output()
        .map_err(|e| format!("creating the rootless user {DEFAULT_USER} (useradd): {e}"))?;
    // 9: the name is taken (another tare created it a moment ago).
    if !out.status.success() && out.status.code() != Some(9) {
        return Err(format!(
            "creating the rootless user {DEFAULT_USER}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// Adds `name` to [`RECORD`] unless it is there.
fn record(name: &str) -> std::io::Result<()> {
    let path = Path::new(RECORD);
    let text = std::fs::read_to_string(path).unwrap_or_default();
    if text.lines().any(|l| l.trim() == name) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    writeln!(f, "{name}")
}

/// The users tare has run rootless Podman as and that still exist (for
/// cleanup): the record's, or this user when tare is not root.
pub(crate) fn recorded() -> Vec<RootlessUser> {
    if euid() != 0 {
        return RootlessUser::resolve(None, false).into_iter().collect();
    }
    read(RECORD)
        .lines()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .filter_map(|n| RootlessUser::resolve(Some(n), false).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_by_name_or_uid() {
        let text = "alice:100000:65536\n1001:200000:10\nbob:300000:65536\nalice:400000:5\n";
        assert_eq!(
            ranges(text, "alice", 1000),
            vec![(100000, 65536), (400000, 5)]
        );
        assert_eq!(ranges(text, "carol", 1001), vec![(200000, 10)]);
        assert!(ranges("garbage\n::\n", "alice", 1).is_empty());
    }

    #[test]
    fn container_ids_map_onto_the_ranges_in_order() {
        let r = [(100000, 2), (500000, 10)];
        assert_eq!(host_id(1000, &r, 0), Some(1000));
        assert_eq!(host_id(1000, &r, 1), Some(100000));
        assert_eq!(host_id(1000, &r, 2), Some(100001));
        assert_eq!(host_id(1000, &r, 3), Some(500000));
        assert_eq!(host_id(1000, &r, 13), None);
    }
}
