//! Injected delay: tc netem where the kernel has it, and a userspace delay
//! line where it does not (kernels built without CONFIG_NET_SCH_NETEM, such
//! as many microVM kernels).
//!
//! Both delay what the server sends, on the server's end of its veth: one
//! direction only, so every request/response round trip and the TCP
//! handshake take `delay` longer.
//!
//! The delay line takes the same packets with tc: a clsact egress filter on
//! the server's veth end (u32 matching everything) redirects them with mirred
//! to a tap device in the server namespace; a thread of the process that owns
//! the lab network reads each frame from the tap, holds it for `delay`, and
//! sends it out of the veth with an AF_PACKET socket that bypasses the qdisc
//! layer (PACKET_QDISC_BYPASS, packet(7)), so the filter does not see it again.
//! The tap is not persistent: it vanishes with the thread's file descriptor,
//! even if the process is killed. Cost of the stand-in: one copy per packet
//! through userspace, and a wakeup latency of a few tens of µs on top of
//! `delay` (measured by the lab tests), which netem does not have.

use std::collections::VecDeque;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::command;
use super::LabError;

/// netem's queue limit in packets. Its default, 1000 (tc-netem(8), LIMIT),
/// holds only 50k packets/s at 20 ms: a load test would see drops, not delay.
/// The queue holds rate × delay packets, so 200k covers 1M packets/s at 200 ms.
/// The delay line holds the same number of frames.
const QUEUE_LIMIT: usize = 200_000;

/// How early the line wakes before a frame is due, then spins: a ppoll
/// timeout ends 42-50 µs late on the 2-core VM these tests run on (p0-p50 of
/// 50 sleeps, timer slack 1 ns; 111 µs at p90), which would add to `delay`.
const WAKEUP_MARGIN: Duration = Duration::from_micros(60);

/// linux/if_packet.h; not in the libc crate.
const PACKET_QDISC_BYPASS: libc::c_int = 20;

/// How the delay was injected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DelayMechanism {
    /// tc qdisc netem on the server's veth end.
    Netem,
    /// The userspace delay line (this module), where netem is missing.
    DelayLine,
}

/// Adds `delay` to what leaves `link` in the namespace `ns`: netem if the
/// kernel has it, else a delay line (returned, to be stopped at teardown).
pub(crate) fn inject(
    ns: &str,
    link: &str,
    tap: &str,
    delay: Duration,
) -> Result<(DelayMechanism, Option<DelayLine>), LabError> {
    let delay_text = format!("{}us", delay.as_micros());
    let limit = QUEUE_LIMIT.to_string();
    let netem = [
        "-n",
        ns,
        "qdisc",
        "add",
        "dev",
        link,
        "root",
        "netem",
        "delay",
        &delay_text,
        "limit",
        &limit,
    ];
    match command::run("tc", &netem) {
        Ok(_) => Ok((DelayMechanism::Netem, None)),
        Err(LabError::Command { stderr, .. }) if stderr.contains("qdisc kind is unknown") => {
            let line = DelayLine::start(ns, link, tap, delay)?;
            Ok((DelayMechanism::DelayLine, Some(line)))
        }
        Err(e) => Err(e),
    }
}

/// A running delay line; `stop` (or drop) ends its thread and its tap.
pub(crate) struct DelayLine {
    tap: String,
    /// eventfd the thread polls beside the tap: written once to stop it.
    stop: OwnedFd,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl fmt::Debug for DelayLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DelayLine({})", self.tap)
    }
}

impl DelayLine {
    fn start(ns: &str, link: &str, tap: &str, delay: Duration) -> Result<DelayLine, LabError> {
        // SAFETY: plain syscall; the fd is owned right away.
        let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if raw < 0 {
            return Err(io_error(
                "eventfd for the delay line",
                io::Error::last_os_error(),
            ));
        }
        // SAFETY: raw is a fresh fd nobody else owns.
        let stop = unsafe { OwnedFd::from_raw_fd(raw) };
        let stop_raw = stop.as_raw_fd();
        let (ready_tx, ready_rx) = mpsc::channel();
        let netns = PathBuf::from("/run/netns").join(ns);
        let (link_name, tap_name) = (link.to_string(), tap.to_string());
        let thread = std::thread::Builder::new()
            .name(format!("tare-delay-{tap}"))
            .spawn(move || {
                let opened = open_ends(&netns, &tap_name, &link_name);
                let (tap_file, sender) = match opened {
                    Ok(ends) => {
                        let _ = ready_tx.send(Ok(()));
                        ends
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return Ok(());
                    }
                };
                relay(tap_file, &sender, stop_raw, delay)
            })
            .map_err(|e| io_error("starting the delay line thread", e))?;
        let mut line = DelayLine {
            tap: tap.to_string(),
            stop,
            thread: Some(thread),
        };
        match ready_rx.recv_timeout(Duration::from_secs(5)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(io_error(&format!("delay line tap {tap} in {ns}"), e)),
            Err(_) => return Err(io_error("delay line start", io::ErrorKind::TimedOut.into())),
        }
        // No IPv6 address on the tap: it would send its own neighbour
        // discovery, which the line would then relay to the host.
        let steps: [&[&str]; 4] = [
            &["ip", "-n", ns, "link", "set", tap, "addrgenmode", "none"],
            &["ip", "-n", ns, "link", "set", tap, "up"],
            &["tc", "-n", ns, "qdisc", "add", "dev", link, "clsact"],
            &[
                "tc", "-n", ns, "filter", "add", "dev", link, "egress", "protocol", "all", "u32",
                "match", "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", tap,
            ],
        ];
        for step in steps {
            if let Err(e) = command::run(step[0], &step[1..]) {
                let _ = line.stop();
                return Err(e);
            }
        }
        Ok(line)
    }

    /// Stops the thread; the tap goes with its file descriptor.
    pub(crate) fn stop(&mut self) -> Result<(), LabError> {
        let Some(thread) = self.thread.take() else {
            return Ok(());
        };
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our own eventfd.
        unsafe { libc::write(self.stop.as_raw_fd(), (&one as *const u64).cast(), 8) };
        match thread.join() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(io_error(&format!("delay line {}", self.tap), e)),
            Err(_) => Err(io_error(
                &format!("delay line {}", self.tap),
                io::Error::other("thread panicked"),
            )),
        }
    }

    pub(crate) fn describe(&self) -> String {
        format!("delay line {}", self.tap)
    }
}

impl Drop for DelayLine {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// In the server namespace: the tap (read side) and a packet socket on the
/// veth end (send side).
fn open_ends(netns: &Path, tap: &str, link: &str) -> io::Result<(File, OwnedFd)> {
    tare_engine::netns::enter(netns)?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open("/dev/net/tun")?;
    // SAFETY: ifreq is plain data; all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req
        .ifr_name
        .iter_mut()
        .zip(tap.bytes().take(libc::IFNAMSIZ - 1))
    {
        *dst = src as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF reads an ifreq we own, on an fd we own.
    if unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETIFF, &mut req) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let c_link = std::ffi::CString::new(link).map_err(io::Error::other)?;
    // SAFETY: a NUL-terminated name.
    let index = unsafe { libc::if_nametoindex(c_link.as_ptr()) };
    if index == 0 {
        return Err(io::Error::last_os_error());
    }
    // Protocol 0: the socket only sends, it never receives a copy of traffic.
    // SAFETY: plain syscall; the fd is owned right away.
    let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: raw is a fresh fd nobody else owns.
    let sock = unsafe { OwnedFd::from_raw_fd(raw) };
    let on: libc::c_int = 1;
    // SAFETY: an int option from a live int.
    let rc = unsafe {
        libc::setsockopt(
            raw,
            libc::SOL_PACKET,
            PACKET_QDISC_BYPASS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: sockaddr_ll is plain data; all-zero is valid.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_ifindex = index as libc::c_int;
    // SAFETY: binds to a sockaddr_ll we own, with its size.
    let rc = unsafe {
        libc::bind(
            raw,
            (&addr as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((file, sock))
}

/// Reads frames from the tap, sends each `delay` after it arrived, until the
/// stop eventfd is written. Frames over QUEUE_LIMIT are dropped, as netem drops.
fn relay(mut tap: File, sender: &OwnedFd, stop: libc::c_int, delay: Duration) -> io::Result<()> {
    // Timer slack defaults to 50 µs (prctl(2), PR_SET_TIMERSLACK): every
    // sleep until a frame is due could end that late. 1 ns asks for the
    // hrtimer's own precision, for this thread only.
    // SAFETY: plain prctl on the calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let mut queue: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    let mut buf = vec![0u8; 65_536];
    loop {
        let now = Instant::now();
        while let Some((due, _)) = queue.front() {
            if *due > now {
                break;
            }
            let (_, frame) = queue.pop_front().expect("front exists");
            // SAFETY: sends a live buffer on our bound packet socket.
            // A full device queue (ENOBUFS) drops the frame, as a NIC would.
            unsafe { libc::send(sender.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        }
        if let Some((due, _)) = queue.front() {
            if due.saturating_duration_since(now) <= WAKEUP_MARGIN {
                // Closer than a timer can wake us on time: spin to the due
                // time (at most WAKEUP_MARGIN), then send.
                while Instant::now() < *due {
                    std::hint::spin_loop();
                }
                continue;
            }
        }
        let timeout = queue
            .front()
            .map(|(due, _)| due.saturating_duration_since(now) - WAKEUP_MARGIN);
        let ts = timeout.map(|t| libc::timespec {
            tv_sec: t.as_secs() as libc::time_t,
            tv_nsec: t.subsec_nanos() as libc::c_long,
        });
        let mut fds = [
            libc::pollfd {
                fd: tap.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: stop,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let ts_ptr = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: two live pollfds, an optional live timespec, no signal mask.
        let rc = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, ts_ptr, std::ptr::null()) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if fds[1].revents != 0 {
            return Ok(());
        }
        if fds[0].revents & libc::POLLIN != 0 {
            // Bounded, so a flood cannot starve the sending side.
            for _ in 0..256 {
                match tap.read(&mut buf) {
                    Ok(n) => {
                        let due = Instant::now() + delay;
                        if queue.len() < QUEUE_LIMIT {
                            queue.push_back((due, buf[..n].to_vec()));
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }
}

fn io_error(what: &str, source: io::Error) -> LabError {
    LabError::Io {
        what: what.to_string(),
        source,
    }
}
