//! A level-triggered epoll set, one per worker thread.
//!
//! Level-triggered on purpose: a closed-loop connection reads its whole
//! response in one `read` and then writes the next request, so it never needs
//! the extra `read` returning `EAGAIN` that edge-triggered readiness demands.
//! `EPOLLOUT` is armed only while a connect or a short write is pending, so a
//! keep-alive request costs one `write`, one `read` and a share of one
//! `epoll_wait` (wrk adds two `epoll_ctl` per request to toggle writability).

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// Which readiness a registration asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interest {
    Read,
    Write,
    ReadWrite,
}

impl Interest {
    fn bits(self) -> u32 {
        let rd = (libc::EPOLLIN | libc::EPOLLRDHUP) as u32;
        match self {
            Interest::Read => rd,
            Interest::Write => libc::EPOLLOUT as u32,
            Interest::ReadWrite => rd | libc::EPOLLOUT as u32,
        }
    }
}

/// One ready event: the registration's token and what it is ready for.
#[derive(Clone, Copy, Debug)]
pub struct Ready {
    pub token: u64,
    pub readable: bool,
    pub writable: bool,
    /// Error or hang-up: the next read or write will say which.
    pub hangup: bool,
}

pub struct Poller {
    epfd: RawFd,
    events: Vec<libc::epoll_event>,
}

impl Poller {
    /// `capacity`: most events returned by one wait.
    pub fn new(capacity: usize) -> io::Result<Self> {
        // SAFETY: plain syscall; the fd is owned by the Poller and closed in Drop.
        let epfd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if epfd < 0 {
            return Err(io::Error::last_os_error());
        }
        let events = vec![libc::epoll_event { events: 0, u64: 0 }; capacity.max(1)];
        Ok(Self { epfd, events })
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, token: u64, interest: Interest) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: interest.bits(),
            u64: token,
        };
        // SAFETY: `ev` lives across the call; epoll copies it.
        let rc = unsafe { libc::epoll_ctl(self.epfd, op, fd, &mut ev) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    pub fn add(&self, fd: RawFd, token: u64, interest: Interest) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, token, interest)
    }

    /// Registers a listening socket shared by several pollers: `EPOLLEXCLUSIVE`
    /// wakes one waiting thread per new connection instead of all of them.
    pub fn add_listener(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLEXCLUSIVE) as u32,
            u64: token,
        };
        // SAFETY: `ev` lives across the call; epoll copies it.
        let rc = unsafe { libc::epoll_ctl(self.epfd, libc::EPOLL_CTL_ADD, fd, &mut ev) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    pub fn modify(&self, fd: RawFd, token: u64, interest: Interest) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, token, interest)
    }

    /// Closing an fd removes it from the set; call this only for fds kept open.
    pub fn delete(&self, fd: RawFd) -> io::Result<()> {
        // SAFETY: a null event pointer is allowed for EPOLL_CTL_DEL since 2.6.9.
        let rc =
            unsafe { libc::epoll_ctl(self.epfd, libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Waits up to `timeout` (`None` blocks) and calls `f` for each ready
    /// registration. Returns how many were ready. Uses `epoll_pwait2`, whose
    /// timeout is in nanoseconds: an open-loop schedule sending every 100 us
    /// cannot live with `epoll_wait`'s whole milliseconds.
    pub fn wait(
        &mut self,
        timeout: Option<Duration>,
        mut f: impl FnMut(Ready),
    ) -> io::Result<usize> {
        let ts = timeout.map(|d| libc::timespec {
            tv_sec: d.as_secs().min(i32::MAX as u64) as libc::time_t,
            tv_nsec: d.subsec_nanos() as libc::c_long,
        });
        let ts_ptr = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: the buffer holds `len` initialised events and outlives the
        // call; `ts_ptr` is null or points at `ts`, alive for the call.
        let n = unsafe {
            libc::epoll_pwait2(
                self.epfd,
                self.events.as_mut_ptr(),
                self.events.len() as i32,
                ts_ptr,
                std::ptr::null(),
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                return Ok(0);
            }
            return Err(err);
        }
        for ev in &self.events[..n as usize] {
            let bits = ev.events;
            f(Ready {
                token: ev.u64,
                readable: bits & (libc::EPOLLIN | libc::EPOLLRDHUP) as u32 != 0,
                writable: bits & libc::EPOLLOUT as u32 != 0,
                hangup: bits & (libc::EPOLLERR | libc::EPOLLHUP) as u32 != 0,
            });
        }
        Ok(n as usize)
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        // SAFETY: we own the fd.
        unsafe { libc::close(self.epfd) };
    }
}
