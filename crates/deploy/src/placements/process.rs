//! The process mechanism: a server as a plain process on the host, or inside
//! a network namespace tare made (the lab's). Its own process group, so
//! stopping it stops its workers too.

use std::fs::File;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use tare_engine::Endpoint;

use super::{Context, Mechanism, Role, Running, Site};
use crate::error::DeployError;
use crate::facts::Described;
use crate::options::Storage;
use crate::owner::CleanupReport;
use crate::procfs;
use crate::targets::{Listen, Server};
use crate::teardown::Resource;

/// Plain processes: always available; their leftovers are found through
/// the deployment directories (`cleanup`), which list every process started.
pub(crate) struct Processes;

pub(crate) static PROCESSES: Processes = Processes;

impl Mechanism for Processes {
    fn name(&self) -> &'static str {
        "process"
    }

    fn available(&self) -> Result<String, String> {
        Ok("plain processes on the host".into())
    }

    fn cleanup(&self, _report: &mut CleanupReport) {
        // Deployment directories name their processes; `cleanup` stops them
        // with the directory, whatever placement made it.
    }
}

/// Processes on the host's network or in one network namespace.
pub(crate) struct HostSite {
    /// The namespace servers run in (`None`: the host's).
    pub netns: Option<PathBuf>,
    /// The address a server binds; `None`: loopback with a free port (the
    /// host's loopback is shared with everything else).
    pub bind: Option<IpAddr>,
    /// Where the generator reaches a server's port; `None`: where it binds.
    pub front: Option<IpAddr>,
    /// The namespace the generator runs in, if not the host's.
    pub client_netns: Option<PathBuf>,
}

impl HostSite {
    /// The host itself: loopback, free ports.
    pub(crate) fn host() -> HostSite {
        HostSite {
            netns: None,
            bind: None,
            front: None,
            client_netns: None,
        }
    }
}

impl Site for HostSite {
    fn listen(&mut self, port: u16) -> Result<SocketAddr, DeployError> {
        match (self.bind, &self.netns) {
            // A namespace of its own: the conventional port.
            (Some(ip), Some(_)) => Ok(SocketAddr::new(ip, port)),
            // The host's address, shared with everything else: a free port.
            (Some(ip), None) => Ok(SocketAddr::new(ip, free_port_on(ip)?)),
            (None, _) => Ok(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), free_port()?)),
        }
    }

    fn companion(&mut self, port: u16) -> Result<SocketAddr, DeployError> {
        let port = match self.netns {
            // A namespace of its own: the conventional port.
            Some(_) => port,
            None => free_port()?,
        };
        Ok(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port))
    }

    fn start(
        &mut self,
        cx: &Context<'_>,
        server: &Server,
        _listen: &Listen,
        role: Role,
    ) -> Result<Box<dyn Running>, DeployError> {
        let child = spawn(
            server,
            cx.dir,
            role.name(),
            self.netns.as_deref(),
            cx.spec.server_cpus.as_deref(),
        )?;
        let pid = child.id() as i32;
        cx.teardown.push(Resource::Process(child));
        Ok(Box::new(ProcessRun {
            pid,
            log: cx.dir.join("log").join(format!("{}.out", role.name())),
        }))
    }

    fn endpoint(&self, listen: &Listen, _server: &dyn Running) -> Result<Endpoint, DeployError> {
        Ok(match listen {
            Listen::Unix(p) => Endpoint::Unix(p.clone()),
            Listen::Tcp(a) => {
                Endpoint::Tcp(SocketAddr::new(self.front.unwrap_or(a.ip()), a.port()))
            }
        })
    }

    fn client_netns(&self) -> Option<&Path> {
        self.client_netns.as_deref()
    }
}

/// A started process.
struct ProcessRun {
    pid: i32,
    /// Its stdout and stderr.
    log: PathBuf,
}

impl Running for ProcessRun {
    fn pid(&self) -> i32 {
        self.pid
    }

    fn alive(&self) -> Result<(), String> {
        match procfs::stat(self.pid) {
            Some(s) if s.state != 'Z' => Ok(()),
            _ => Err(exit_status(self.pid)),
        }
    }

    fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    fn scope(&self) -> super::Scope {
        super::Scope::Pids(vec![self.pid as u32])
    }

    fn described(&self) -> Described {
        Described {
            storage: Storage::HostPath.to_string(),
            ..Described::default()
        }
    }
}

/// How a child that ended did (`exited with signal 9`, `exited with
/// code 3`), read without reaping it (`WNOWAIT`): its `Child` in the
/// teardown still waits for it.
fn exit_status(pid: i32) -> String {
    // SAFETY: a zeroed siginfo_t is valid; waitid only writes into it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
    // SAFETY: `info` outlives the call.
    let r = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) };
    // SAFETY: waitid filled `info` for a child that changed state.
    let (code, status) = unsafe { (info.si_code, info.si_status()) };
    match code {
        _ if r != 0 || unsafe { info.si_pid() } == 0 => "exited".into(),
        libc::CLD_EXITED => format!("exited with code {status}"),
        libc::CLD_KILLED | libc::CLD_DUMPED => format!("exited with signal {status}"),
        _ => "exited".into(),
    }
}

/// A free TCP port on loopback (bound, read, released).
pub(crate) fn free_port() -> Result<u16, DeployError> {
    free_port_on(Ipv4Addr::LOCALHOST.into())
}

/// A free TCP port on `ip`, one of this host's addresses.
pub(crate) fn free_port_on(ip: IpAddr) -> Result<u16, DeployError> {
    std::net::TcpListener::bind((ip, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| DeployError::io(format!("finding a free port on {ip}"), e))
}

/// Name of the file in a deployment directory listing its processes
/// ("pid:starttime" per line), for `tare cleanup` after a SIGKILL.
pub(crate) const PIDS_FILE: &str = ".tare-pids";

/// Starts the server, its output in `dir/log/NAME.out`. `netns`: enter this
/// network namespace first (lab placements); `cpus`: pin to this CPU list
/// (taskset-style).
pub(crate) fn spawn(
    server: &Server,
    dir: &Path,
    name: &str,
    netns: Option<&Path>,
    cpus: Option<&str>,
) -> Result<Child, DeployError> {
    let log_dir = dir.join("log");
    std::fs::create_dir_all(&log_dir)
        .map_err(|e| DeployError::io("creating the log directory", e))?;
    let out = File::create(log_dir.join(format!("{name}.out")))
        .map_err(|e| DeployError::io("creating the server output file", e))?;
    let err = out
        .try_clone()
        .map_err(|e| DeployError::io("server output file", e))?;
    let ns = netns
        .map(|p| {
            File::open(p)
                .map_err(|e| DeployError::io(format!("network namespace {}", p.display()), e))
        })
        .transpose()?;
    let cpu_set = cpus
        .map(|c| c.parse::<tare_engine::cpu::CpuList>())
        .transpose()
        .map_err(DeployError::Invalid)?
        .map(|l| l.to_cpu_set());
    let run_as = server.run_as;
    // An image's files: its entrypoint runs chrooted into them, starting
    // in its working directory there.
    let chroot = server
        .root
        .as_ref()
        .map(|r| {
            super::chroot::Chroot::new(&r.dir, server.workdir.as_deref().unwrap_or(Path::new("/")))
        })
        .transpose()
        .map_err(|e| DeployError::io("preparing the image's root filesystem", e))?;
    let cwd = match chroot {
        Some(_) => dir,
        None => server.workdir.as_deref().unwrap_or(dir),
    };

    let mut cmd = Command::new(&server.binary);
    if chroot.is_some() {
        // Only the image's environment, as in its container.
        cmd.env_clear();
    }
    cmd.args(&server.args)
        .envs(server.env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    let ns_fd = ns.as_ref().map(|f| f.as_raw_fd());
    // SAFETY: only async-signal-safe syscalls between fork and exec. The order
    // matters: setns and affinity need root, so identity changes come last.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(fd) = ns_fd {
                if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if let Some(set) = &cpu_set {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if let Some(c) = &chroot {
                c.enter()?;
            }
            if let Some((uid, gid)) = run_as {
                let groups = [gid];
                if libc::setgroups(1, groups.as_ptr()) != 0
                    || libc::setgid(gid) != 0
                    || libc::setuid(uid) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        })
    };
    let child = cmd.spawn().map_err(|e| {
        let place = if server.root.is_some() {
            " in the image's root filesystem (chroot)"
        } else {
            ""
        };
        DeployError::io(format!("starting {}{place}", server.binary.display()), e)
    })?;
    if let Some(id) = procfs::identity(child.id() as libc::pid_t) {
        use std::io::Write;
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(PIDS_FILE))
            .and_then(|mut f| writeln!(f, "{id}"));
    }
    Ok(child)
}
