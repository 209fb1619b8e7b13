//! A /proc (or cgroup, or sysfs) file kept open and re-read in place.
//!
//! Opening a file costs a path walk and an allocation in the kernel; reading
//! it again with `pread(fd, buf, len, 0)` regenerates its contents (seq_file
//! and kernfs both restart at offset 0) without either. The buffer is kept
//! between samples and parsing borrows from it, so a steady-state sample
//! opens no file and copies no text: this is what keeps the monitor's cost
//! negligible (measured in `bench/monitor-overhead.sh`).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

/// Largest file we are willing to buffer (a /proc/stat on a 1024-CPU machine
/// with every IRQ listed stays well under this).
const MAX_BYTES: usize = 4 << 20;

pub(crate) struct ProcFile {
    file: File,
    buf: Vec<u8>,
    len: usize,
}

impl ProcFile {
    pub(crate) fn open(path: impl AsRef<Path>) -> io::Result<ProcFile> {
        let file = File::open(path)?;
        Ok(ProcFile {
            file,
            buf: vec![0; 4096],
            len: 0,
        })
    }

    /// The file's current contents (lossy UTF-8 is never needed: these files
    /// are ASCII; a non-UTF-8 byte makes the text empty rather than panic).
    pub(crate) fn read(&mut self) -> io::Result<&str> {
        loop {
            // SAFETY: the pointer and length describe our own buffer.
            let n = unsafe {
                libc::pread(
                    self.file.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                    0,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            let n = n as usize;
            // A full buffer may mean a truncated file: grow and read again.
            if n == self.buf.len() && self.buf.len() < MAX_BYTES {
                let grown = self.buf.len() * 2;
                self.buf.resize(grown, 0);
                continue;
            }
            self.len = n;
            return Ok(std::str::from_utf8(&self.buf[..self.len]).unwrap_or(""));
        }
    }
}

/// The first whitespace-separated integer of a file such as `memory.current`
/// or `nf_conntrack_count`.
pub(crate) fn read_u64(f: &mut ProcFile) -> Option<u64> {
    f.read().ok()?.split_ascii_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rereads_fresh_contents_in_place() {
        let dir =
            std::env::temp_dir().join(format!("tare-monitor-procfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("f");
        std::fs::write(&p, "12 rest\n").unwrap();
        let mut f = ProcFile::open(&p).unwrap();
        assert_eq!(read_u64(&mut f), Some(12));
        // Same inode rewritten: a pread at 0 sees the new bytes.
        std::fs::write(&p, "345\n").unwrap();
        assert_eq!(read_u64(&mut f), Some(345));
        let big = "x".repeat(10_000);
        std::fs::write(&p, &big).unwrap();
        assert_eq!(f.read().unwrap().len(), 10_000);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn proc_self_stat_changes_between_reads() {
        let mut f = ProcFile::open("/proc/self/stat").unwrap();
        let a = f.read().unwrap().to_string();
        assert!(a.contains(')'), "{a}");
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_millis(30) {
            std::hint::black_box(t.elapsed());
        }
        let b = f.read().unwrap().to_string();
        assert!(b.starts_with(&a[..a.find(' ').unwrap()]));
    }
}
