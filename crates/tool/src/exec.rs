//! Runs one job in a directory and says what happened: the command, its
//! output, its exit, its CPU time, the filesystem under the directory and
//! whether fio could bypass the page cache there. The agent (`tare tool
//! serve`, inside the placement) and a local `tare tool run` both call
//! [`execute`]; nothing here parses the output.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::job::{command, Direct, Job, Sizes, ToolKind};

/// What one run of a job did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The command line as run.
    pub command: Vec<String>,
    /// Exit code; `None` when a signal ended it (or it never started).
    pub status: Option<i32>,
    /// Why it did not run or did not finish (the binary is missing, the
    /// time limit struck, the client went away); `None` when it exited.
    pub error: Option<String>,
    /// The results: the output file (hpcc) or stdout (fio, sysbench).
    pub output: String,
    /// The last lines of stderr (and of stdout when it is not the
    /// results), for an error message.
    pub stderr_tail: String,
    pub wall_s: f64,
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    /// The filesystem of the working directory (`/proc/self/mountinfo`).
    pub data_fs: Option<String>,
    /// fio: whether it ran with O_DIRECT.
    pub direct: Option<bool>,
    pub notes: Vec<String>,
}

/// Lines of stderr an error message keeps.
const TAIL_LINES: usize = 12;

/// Runs `job` with `sizes` in `dir`, ending it after `limit` or when
/// `cancelled()` says so (checked every 50 ms).
pub fn execute(
    job: &Job,
    sizes: &Sizes,
    dir: &Path,
    limit: Duration,
    cancelled: &mut dyn FnMut() -> bool,
) -> Outcome {
    let mut out = Outcome {
        data_fs: fs_type(dir),
        ..Outcome::default()
    };
    let binary = match binary(job) {
        Ok(b) => b,
        Err(e) => {
            out.error = Some(e);
            return out;
        }
    };
    let direct = job.tool == ToolKind::Fio && direct(job, dir, &mut out);
    if job.tool == ToolKind::Fio {
        out.direct = Some(direct);
    }
    let cmd = command(job, &binary, sizes, dir, direct);
    out.command = cmd.argv.clone();
    for (name, text) in &cmd.inputs {
        if let Err(e) = std::fs::write(dir.join(name), text) {
            out.error = Some(format!("writing {name} in {}: {e}", dir.display()));
            return out;
        }
    }
    if let Some(f) = &cmd.output_file {
        // hpcc appends to its output file: start from none.
        let _ = std::fs::remove_file(dir.join(f));
    }
    let before = children_cpu();
    let t0 = Instant::now();
    let mut child = match std::process::Command::new(&cmd.argv[0])
        .args(&cmd.argv[1..])
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            out.error = Some(format!("starting {}: {e}", cmd.argv[0]));
            return out;
        }
    };
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = wait(&mut child, job, t0, limit, cancelled, &mut out);
    out.wall_s = t0.elapsed().as_secs_f64();
    let after = children_cpu();
    out.cpu_user_s = (after.0 - before.0).max(0.0);
    out.cpu_system_s = (after.1 - before.1).max(0.0);
    out.status = status.and_then(|s| s.code());
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    out.output = match &cmd.output_file {
        Some(f) => std::fs::read_to_string(dir.join(f)).unwrap_or_default(),
        None => stdout.clone(),
    };
    let mut tail = tail_lines(&stderr, TAIL_LINES);
    if cmd.output_file.is_some() && !stdout.trim().is_empty() {
        tail.push_str(&tail_lines(&stdout, TAIL_LINES));
    }
    out.stderr_tail = tail;
    if let Some(s) = status.filter(|s| s.code().is_none()) {
        out.error
            .get_or_insert(format!("{} was killed ({s})", job.tool.name()));
    }
    out
}

/// The job's binary: where it says, else found on this machine.
fn binary(job: &Job) -> Result<PathBuf, String> {
    match &job.binary {
        Some(b) if b.is_file() => Ok(b.clone()),
        Some(b) => Err(format!(
            "{} is not at {} here: {}",
            job.tool.name(),
            b.display(),
            job.tool.missing()
        )),
        None => job.tool.find(),
    }
}

/// fio's O_DIRECT: as the job says, or (auto) when the directory's
/// filesystem takes it, noted when it does not.
fn direct(job: &Job, dir: &Path, out: &mut Outcome) -> bool {
    match job.direct {
        Direct::On => true,
        Direct::Off => false,
        Direct::Auto => {
            let ok = direct_io_works(dir);
            if !ok {
                out.notes.push(format!(
                    "direct I/O refused by {}: fio ran buffered (the page cache takes part)",
                    out.data_fs.as_deref().unwrap_or("this filesystem")
                ));
            }
            ok
        }
    }
}

/// Waits for `child` to exit, killing it when `limit` has passed since
/// `t0` or `cancelled()` says so; why it did not exit goes to `out.error`.
fn wait(
    child: &mut Child,
    job: &Job,
    t0: Instant,
    limit: Duration,
    cancelled: &mut dyn FnMut() -> bool,
    out: &mut Outcome,
) -> Option<ExitStatus> {
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) => {}
            Err(e) => {
                out.error = Some(format!("waiting for {}: {e}", job.tool.name()));
                return None;
            }
        }
        let why = if t0.elapsed() > limit {
            Some(format!(
                "{} did not finish within {:.0} s",
                job.tool.name(),
                limit.as_secs_f64()
            ))
        } else if cancelled() {
            Some("cancelled".to_string())
        } else {
            None
        };
        if let Some(why) = why {
            let _ = child.kill();
            let _ = child.wait();
            out.error = Some(why);
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A pipe read to its end on its own thread (a full pipe would stall the
/// program); at most 16 MiB is kept.
fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(p) = pipe {
            let _ = p.take(16 << 20).read_to_end(&mut buf);
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
}

fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut s = lines[lines.len().saturating_sub(n)..].join("\n");
    if !s.is_empty() {
        s.push('\n');
    }
    s
}

/// User and system CPU seconds of this process's waited-for children.
fn children_cpu() -> (f64, f64) {
    // SAFETY: an all-zero rusage is valid, and getrusage only writes it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is valid for writes.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (s(ru.ru_utime), s(ru.ru_stime))
}

/// Whether a file in `dir` can be opened with O_DIRECT and written with
/// one aligned 4 KiB block (FUSE filesystems and some overlays refuse).
pub fn direct_io_works(dir: &Path) -> bool {
    let path = dir.join(".tare-direct-probe");
    let result = (|| -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(&path)?;
        // A 4 KiB block at a 4 KiB-aligned address, as O_DIRECT requires.
        let mut buf = vec![0u8; 8192];
        let off = buf.as_ptr().align_offset(4096);
        std::io::Write::write_all(&mut f, &buf[off..off + 4096])?;
        buf.clear();
        Ok(())
    })();
    let _ = std::fs::remove_file(&path);
    result.is_ok()
}

/// The filesystem type `path` is on, from `/proc/self/mountinfo`.
pub fn fs_type(path: &Path) -> Option<String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    fs_type_in(&info, path)
}

/// The type of the longest mount point `path` lies under in a mountinfo
/// text (mount points escape space, tab, newline and backslash as `\NNN`).
pub fn fs_type_in(mountinfo: &str, path: &Path) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for line in mountinfo.lines() {
        let Some((pre, post)) = line.split_once(" - ") else {
            continue;
        };
        let (Some(mp), Some(fstype)) = (
            pre.split_whitespace().nth(4),
            post.split_whitespace().next(),
        ) else {
            continue;
        };
        let mp = unescape(mp);
        if path.starts_with(&mp) && best.as_ref().is_none_or(|(l, _)| mp.len() >= *l) {
            best = Some((mp.len(), fstype.to_string()));
        }
    }
    best.map(|(_, t)| t)
}

fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)))
            .map(|d| d.iter().fold(0u32, |n, c| n * 8 + u32::from(c - b'0')))
            .and_then(|n| u8::try_from(n).ok());
        if let Some(byte) = octal {
            out.push(byte);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::builtin;

    #[test]
    fn an_escape_above_a_byte_is_kept_as_written() {
        // Found by the `wire` fuzz target: `\615` overflowed a u8.
        assert_eq!(unescape("/a\\615b\\040c"), "/a\\615b c");
        assert_eq!(unescape("/x\\37"), "/x\\37");
    }

    #[test]
    fn the_longest_mount_point_names_the_filesystem() {
        let info = "22 1 8:1 / / rw - ext4 /dev/vda rw\n\
                    40 22 0:5 / /data\\040x rw - tmpfs tmpfs rw\n\
                    41 22 0:6 / /var/lib/docker/x rw - fuse.fuse-overlayfs f rw\n";
        assert_eq!(
            fs_type_in(info, Path::new("/data x/f")).as_deref(),
            Some("tmpfs")
        );
        assert_eq!(fs_type_in(info, Path::new("/srv")).as_deref(), Some("ext4"));
        assert_eq!(fs_type_in("garbage", Path::new("/")), None);
    }

    /// A job whose binary is missing is an outcome with the package named,
    /// not a panic.
    #[test]
    fn a_missing_binary_names_the_package() {
        let mut job = builtin("hpcc").unwrap();
        job.binary = Some("/nonexistent/hpcc".into());
        let dir = std::env::temp_dir();
        let o = execute(
            &job,
            &Sizes::default(),
            &dir,
            Duration::from_secs(1),
            &mut || false,
        );
        let e = o.error.unwrap();
        assert!(e.contains("install the Debian package hpcc"), "{e}");
    }
}
