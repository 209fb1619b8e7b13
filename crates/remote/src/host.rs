//! A host of an experiment (`[hosts.NAME]`) and the `ssh` command lines
//! that reach it. tare drives OpenSSH's own client rather than a library:
//! the user's keys, agent, known_hosts and `~/.ssh/config` work as they do
//! for `ssh`, and nothing new talks the protocol.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::RemoteError;

/// One remote host, as the experiment file describes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    /// Its name in the experiment (`[hosts.NAME]`).
    pub name: String,
    /// The login user (`user@` of `ssh`; empty: ssh's default).
    pub user: String,
    /// Where ssh connects (an address or a name ssh resolves).
    pub address: String,
    pub port: u16,
    /// `-i`: the private key; `None`: ssh's defaults and agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<PathBuf>,
    /// `UserKnownHostsFile`; `None`: ssh's default (`~/.ssh/known_hosts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_hosts: Option<PathBuf>,
    /// Refuse a host whose key is not already known (on by default:
    /// `StrictHostKeyChecking=yes`); off accepts any key, for throw-away
    /// hosts only.
    pub check_host_key: bool,
    /// Where tare keeps its files on the host: one directory per run under
    /// it, removed when the run ends (`tare cleanup` after a killed run).
    pub dir: PathBuf,
    /// The address load reaches it at, when not `address` (another
    /// interface); must be one of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_address: Option<String>,
}

/// The default `dir` on a host.
pub const DEFAULT_DIR: &str = "/tmp/tare-remote";

/// How long ssh may take to connect, and how long a silent connection
/// lives (`ServerAliveInterval` x `ServerAliveCountMax`): a host that drops
/// mid-run is noticed within about four seconds.
const CONNECT_TIMEOUT_S: u32 = 5;
const ALIVE_INTERVAL_S: u32 = 1;
const ALIVE_COUNT: u32 = 3;

impl Host {
    /// `user@address:port`, as errors and records name it.
    pub fn destination(&self) -> String {
        let at = if self.user.is_empty() {
            String::new()
        } else {
            format!("{}@", self.user)
        };
        format!("{at}{}:{}", self.address, self.port)
    }

    /// The directory of run `run_id` on the host.
    pub fn run_dir(&self, run_id: &str) -> PathBuf {
        self.dir.join(format!("tare-{run_id}"))
    }

    /// `ssh` with tare's options, ready for a remote command. It runs in a
    /// process group of its own: a Ctrl-C at the terminal is tare's to
    /// handle (it stops the agents through their lifelines), not ssh's.
    pub fn ssh(&self) -> Command {
        use std::os::unix::process::CommandExt;
        let mut c = Command::new("ssh");
        c.process_group(0);
        c.arg("-T")
            .args(["-o", "BatchMode=yes"])
            .args(["-o", &format!("ConnectTimeout={CONNECT_TIMEOUT_S}")])
            .args(["-o", &format!("ServerAliveInterval={ALIVE_INTERVAL_S}")])
            .args(["-o", &format!("ServerAliveCountMax={ALIVE_COUNT}")])
            .args(["-o", "LogLevel=ERROR"])
            .args(["-p", &self.port.to_string()]);
        if let Some(id) = &self.identity {
            c.arg("-i").arg(id).args(["-o", "IdentitiesOnly=yes"]);
        }
        if self.check_host_key {
            c.args(["-o", "StrictHostKeyChecking=yes"]);
            if let Some(k) = &self.known_hosts {
                c.arg("-o")
                    .arg(format!("UserKnownHostsFile={}", k.display()));
            }
        } else {
            c.args(["-o", "StrictHostKeyChecking=no"])
                .args(["-o", "UserKnownHostsFile=/dev/null"]);
        }
        let dest = if self.user.is_empty() {
            self.address.clone()
        } else {
            format!("{}@{}", self.user, self.address)
        };
        c.arg(dest).arg("--");
        c
    }

    /// Runs `script` with `sh -c` on the host, `input` on its stdin, and
    /// returns its stdout; a failure is one line naming the host.
    pub fn run(&self, script: &str, input: &[u8], limit: Duration) -> Result<String, RemoteError> {
        let mut cmd = self.ssh();
        // The login shell parses the line: `/bin/sh -c` and one quoted word
        // (a bare `sh` would need a PATH).
        cmd.arg(format!("/bin/sh -c {}", sh_quote(script)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| RemoteError::Ssh {
            host: self.name.clone(),
            message: format!("cannot start ssh: {e}"),
        })?;
        let stdin = child.stdin.take();
        let input = input.to_vec();
        let writer = std::thread::spawn(move || {
            if let Some(mut s) = stdin {
                use std::io::Write;
                let _ = s.write_all(&input);
            }
        });
        let out = crate::wait::with_limit(child, limit).map_err(|message| RemoteError::Ssh {
            host: self.name.clone(),
            message,
        })?;
        let _ = writer.join();
        if out.status.success() {
            return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        Err(self.failure(out.status.code(), &stderr))
    }

    /// One line for a failed ssh command: why ssh could not connect (exit
    /// 255), or what the remote command said.
    pub(crate) fn failure(&self, code: Option<i32>, stderr: &str) -> RemoteError {
        let last = stderr
            .lines()
            .map(str::trim)
            .rfind(|l| !l.is_empty())
            .unwrap_or("no message")
            .to_string();
        if code == Some(255) {
            let hint = if last.contains("Permission denied") {
                " (the key is not accepted: check identity and the host's authorized_keys)"
            } else if last.contains("Host key verification failed")
                || last.contains("No ED25519 host key")
                || last.contains("host key")
            {
                " (its host key is not in known_hosts: add it, or set check_host_key = false for a throw-away host)"
            } else {
                ""
            };
            return RemoteError::Ssh {
                host: self.name.clone(),
                message: format!("cannot reach {}: {last}{hint}", self.destination()),
            };
        }
        RemoteError::Ssh {
            host: self.name.clone(),
            message: last,
        }
    }
}

/// `s` as one word for a POSIX shell (ssh joins its arguments with spaces
/// and hands them to the login shell).
pub(crate) fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A path as one shell word.
pub(crate) fn sh_path(p: &Path) -> String {
    sh_quote(&p.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Host {
        Host {
            name: "gen".into(),
            user: "root".into(),
            address: "10.1.2.3".into(),
            port: 2222,
            identity: Some("/k/id".into()),
            known_hosts: Some("/k/known".into()),
            check_host_key: true,
            dir: DEFAULT_DIR.into(),
            load_address: None,
        }
    }

    #[test]
    fn the_ssh_command_checks_host_keys_and_never_prompts() {
        let c = host().ssh();
        let args: Vec<String> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let line = args.join(" ");
        assert!(line.contains("BatchMode=yes"), "{line}");
        assert!(line.contains("StrictHostKeyChecking=yes"), "{line}");
        assert!(line.contains("UserKnownHostsFile=/k/known"), "{line}");
        assert!(line.contains("-p 2222"), "{line}");
        assert!(line.contains("-i /k/id"), "{line}");
        assert!(line.ends_with("root@10.1.2.3 --"), "{line}");
        let mut h = host();
        h.check_host_key = false;
        let line: Vec<String> = h
            .ssh()
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(line.join(" ").contains("StrictHostKeyChecking=no"));
    }

    #[test]
    fn quoting_survives_quotes() {
        assert_eq!(sh_quote("a'b"), r"'a'\''b'");
        assert_eq!(host().destination(), "root@10.1.2.3:2222");
        assert_eq!(
            host().run_dir("rabc"),
            PathBuf::from("/tmp/tare-remote/tare-rabc")
        );
    }

    #[test]
    fn ssh_failures_are_one_line_with_a_hint() {
        let e = host().failure(Some(255), "root@10.1.2.3: Permission denied (publickey).\n");
        let s = e.to_string();
        assert!(
            !s.contains('\n') && s.contains("key is not accepted"),
            "{s}"
        );
        let e = host().failure(Some(255), "Host key verification failed.\n");
        assert!(e.to_string().contains("known_hosts"), "{e}");
        let e = host().failure(Some(1), "sh: 1: nope: not found\n");
        assert_eq!(e.to_string(), "host gen: sh: 1: nope: not found");
    }
}
