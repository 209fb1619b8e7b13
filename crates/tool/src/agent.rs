//! `tare tool serve`: the agent that runs a job inside the placement. The
//! deployment starts it like any server (the same tare binary, in the
//! container or guest, with the tools and their libraries beside it); the
//! engine connects through the placement's path and asks it to run the job
//! in its data directory, which lives on the storage under test. One run at
//! a time; a client that goes away ends its run.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::exec::execute;
use crate::job::Job;
use crate::wire::{Reply, Request, MAX_LINE};

/// Where the agent listens.
#[derive(Clone, Debug)]
pub enum Listen {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// The agent's settings.
#[derive(Clone, Debug)]
pub struct AgentConfig {
    pub listen: Listen,
    pub job: Job,
    /// The job's working directory: where fio's test file is made.
    pub dir: PathBuf,
}

/// Serves until the process ends (the deployment stops it).
pub fn serve(cfg: AgentConfig) -> std::io::Result<()> {
    std::fs::create_dir_all(&cfg.dir)?;
    let shared = Arc::new((cfg.job.clone(), cfg.dir.clone(), Mutex::new(())));
    match &cfg.listen {
        Listen::Tcp(a) => {
            let l = TcpListener::bind(a)?;
            for s in l.incoming().flatten() {
                let _ = s.set_nodelay(true);
                let shared = shared.clone();
                std::thread::spawn(move || handle(s, &shared));
            }
        }
        Listen::Unix(p) => {
            let _ = std::fs::remove_file(p);
            let l = UnixListener::bind(p)?;
            for s in l.incoming().flatten() {
                let shared = shared.clone();
                std::thread::spawn(move || handle(s, &shared));
            }
        }
    }
    Ok(())
}

/// One connection: one request, one reply.
fn handle<S: Read + Write + AsRawFd>(mut s: S, shared: &(Job, PathBuf, Mutex<()>)) {
    let (job, dir, one_at_a_time) = shared;
    let fd = s.as_raw_fd();
    let line = {
        let mut r = BufReader::new((&mut s).take(MAX_LINE as u64 + 1));
        let mut line = Vec::new();
        if r.read_until(b'\n', &mut line).is_err() {
            return;
        }
        line
    };
    let line = line.strip_suffix(b"\n").unwrap_or(&line);
    let mut reply = Reply {
        job: job.clone(),
        outcome: None,
        error: None,
    };
    match Request::decode(line) {
        Err(e) => reply.error = Some(e),
        Ok(Request::Ping) => {}
        Ok(Request::Run { sizes, limit_s }) => {
            let _turn = one_at_a_time.lock().unwrap_or_else(|e| e.into_inner());
            let limit = Duration::from_secs_f64(limit_s);
            reply.outcome = Some(execute(job, &sizes, dir, limit, &mut || peer_gone(fd)));
        }
    }
    let _ = s.write_all(&reply.encode());
}

/// Whether the client closed its end (it was stopped or interrupted):
/// then the run it asked for ends.
fn peer_gone(fd: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN | libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    if n <= 0 {
        return false;
    }
    if p.revents & (libc::POLLHUP | libc::POLLRDHUP | libc::POLLERR) != 0 {
        return true;
    }
    let mut b = [0u8; 1];
    // SAFETY: b is valid for one byte; MSG_PEEK leaves it unread.
    let r = unsafe {
        libc::recv(
            fd,
            b.as_mut_ptr().cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    r == 0
}
