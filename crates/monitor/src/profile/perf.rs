//! One `cpu-clock` sampling event per online CPU, opened with
//! perf_event_open(2) on every process (`pid = -1, cpu = N`), each with its
//! ring buffer mapped; [`Rings::drain`] copies out what the kernel wrote.
//!
//! The attribute is written as bytes at the offsets of `struct
//! perf_event_attr` (include/uapi/linux/perf_event.h, size
//! `PERF_ATTR_SIZE_VER5` = 112), which every kernel since 4.1 accepts.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;
const SAMPLE_IP: u64 = 1 << 0;
const SAMPLE_TID: u64 = 1 << 1;
const SAMPLE_TIME: u64 = 1 << 2;
const SAMPLE_CALLCHAIN: u64 = 1 << 5;
/// `exclude_callchain_user`: user stacks are not walked (the process names
/// user-space time; walking them costs per sample).
const FLAG_EXCLUDE_CALLCHAIN_USER: u64 = 1 << 22;
const FLAG_USE_CLOCKID: u64 = 1 << 25;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
const ATTR_SIZE: u32 = 112;
/// Frames kept of a kernel stack: enough to reach the syscall entry from
/// the deepest network path.
const MAX_STACK: u16 = 64;
/// Data pages per CPU (a power of two): 64 pages hold ~1 s of samples at
/// the default rate with deep stacks; the sampler drains every interval.
const DATA_PAGES: usize = 64;

fn attr(period_ns: u64) -> [u8; ATTR_SIZE as usize] {
    let mut a = [0u8; ATTR_SIZE as usize];
    let mut put = |at: usize, b: &[u8]| a[at..at + b.len()].copy_from_slice(b);
    put(0, &PERF_TYPE_SOFTWARE.to_ne_bytes());
    put(4, &ATTR_SIZE.to_ne_bytes());
    put(8, &PERF_COUNT_SW_CPU_CLOCK.to_ne_bytes());
    put(16, &period_ns.to_ne_bytes());
    put(
        24,
        &(SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_CALLCHAIN).to_ne_bytes(),
    );
    put(
        40,
        &(FLAG_EXCLUDE_CALLCHAIN_USER | FLAG_USE_CLOCKID).to_ne_bytes(),
    );
    put(92, &libc::CLOCK_MONOTONIC.to_ne_bytes());
    put(108, &MAX_STACK.to_ne_bytes());
    a
}

struct Ring {
    _fd: OwnedFd,
    base: *mut u8,
    len: usize,
    data_offset: usize,
    data_size: usize,
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: base/len are the mapping made in `open_ring`, unmapped once.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// The per-CPU events and their rings; dropping it closes them.
pub(super) struct Rings {
    rings: Vec<Ring>,
}

// SAFETY: the mappings are owned by this value alone and only touched
// through `&mut self`.
unsafe impl Send for Rings {}

fn online_cpus() -> Vec<i32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let mut v = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.parse::<i32>(), b.parse::<i32>()) {
            v.extend(a..=b.min(a + 4095));
        }
    }
    if v.is_empty() {
        // SAFETY: sysconf has no preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as i32;
        v.extend(0..n);
    }
    v
}

fn open_ring(cpu: i32, period_ns: u64, page: usize) -> io::Result<Ring> {
    let a = attr(period_ns);
    // SAFETY: a valid attr buffer of the size it declares; pid -1 with a cpu
    // is a per-CPU event (perf_event_open(2)).
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            a.as_ptr(),
            -1 as libc::pid_t,
            cpu,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    let len = page * (1 + DATA_PAGES);
    // SAFETY: mapping the event's ring as perf_event_open(2) documents.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let base = base.cast::<u8>();
    // SAFETY: the metadata page's data_offset (1040) and data_size (1048),
    // set by kernels since 4.1; zero before: the data follow the first page.
    let (off, size) = unsafe {
        (
            std::ptr::read_volatile(base.add(1040).cast::<u64>()) as usize,
            std::ptr::read_volatile(base.add(1048).cast::<u64>()) as usize,
        )
    };
    let (data_offset, data_size) = if size == 0 || off + size > len {
        (page, len - page)
    } else {
        (off, size)
    };
    Ok(Ring {
        _fd: fd,
        base,
        len,
        data_offset,
        data_size,
    })
}

impl Rings {
    /// Opens one event per online CPU sampling every `period_ns` of CPU
    /// time. Fails as a whole (the first CPU's error) when any CPU's fails.
    pub(super) fn open(period_ns: u64) -> io::Result<Rings> {
        let page = crate::proc_stat::page_size() as usize;
        let rings = online_cpus()
            .into_iter()
            .map(|cpu| open_ring(cpu, period_ns, page))
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Rings { rings })
    }

    /// Appends every record written since the last drain to `out`, whole
    /// (a record wrapping the ring's end is joined), and frees their space.
    pub(super) fn drain(&mut self, out: &mut Vec<u8>) {
        for r in &mut self.rings {
            // SAFETY: data_head (offset 1024) is written by the kernel and
            // read with acquire ordering; data_tail (1032) is ours, published
            // with release ordering once the bytes are copied
            // (perf_event_open(2), "data_head", "data_tail").
            unsafe {
                let head_p = &*(r.base.add(1024) as *const AtomicU64);
                let tail_p = &*(r.base.add(1032) as *const AtomicU64);
                let head = head_p.load(Ordering::Acquire);
                let tail = tail_p.load(Ordering::Relaxed);
                let n = head.wrapping_sub(tail) as usize;
                let n = n.min(r.data_size);
                let data = std::slice::from_raw_parts(r.base.add(r.data_offset), r.data_size);
                let start = (tail as usize) % r.data_size;
                let first = n.min(r.data_size - start);
                out.extend_from_slice(&data[start..start + first]);
                out.extend_from_slice(&data[..n - first]);
                tail_p.store(head, Ordering::Release);
            }
        }
    }
}
