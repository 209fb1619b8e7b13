//! Writing a cpio archive in the "newc" format, the one the kernel unpacks
//! as an initramfs (Documentation/driver-api/early-userspace/
//! buffer-format.rst): per entry a 110-byte ASCII header, the NUL-terminated
//! name padded to 4 bytes, the data padded to 4 bytes; `TRAILER!!!` ends it.
//! Several archives concatenated are one initramfs, later entries winning.

use std::collections::BTreeSet;
use std::io::{self, Write};

/// File-type bits of `st_mode` (inode(7)).
const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;

/// An archive being written to `W`.
pub(crate) struct Cpio<W: Write> {
    out: W,
    /// Next inode number: unique per entry, so no two files read as hard links.
    ino: u32,
    /// Directories written so far (parents are written before children).
    dirs: BTreeSet<String>,
    written: u64,
}

impl<W: Write> Cpio<W> {
    pub(crate) fn new(out: W) -> Cpio<W> {
        Cpio {
            out,
            ino: 1,
            dirs: BTreeSet::new(),
            written: 0,
        }
    }

    /// A directory and any missing parents (mode 0755, root-owned parents).
    pub(crate) fn dir(&mut self, path: &str, mode: u32, uid: u32, gid: u32) -> io::Result<()> {
        let path = path.trim_matches('/');
        if path.is_empty() || self.dirs.contains(path) {
            return Ok(());
        }
        self.parents(path)?;
        self.dirs.insert(path.to_string());
        self.entry(path, S_IFDIR | (mode & 0o7777), uid, gid, 2, &[])
    }

    /// A regular file with `data`.
    pub(crate) fn file(
        &mut self,
        path: &str,
        mode: u32,
        uid: u32,
        gid: u32,
        data: &[u8],
    ) -> io::Result<()> {
        let path = path.trim_start_matches('/');
        self.parents(path)?;
        self.entry(path, S_IFREG | (mode & 0o7777), uid, gid, 1, data)
    }

    /// A symbolic link at `path` pointing to `target`.
    pub(crate) fn symlink(&mut self, path: &str, target: &str) -> io::Result<()> {
        let path = path.trim_start_matches('/');
        self.parents(path)?;
        self.entry(path, S_IFLNK | 0o777, 0, 0, 1, target.as_bytes())
    }

    /// Writes the trailer and returns the writer and the bytes written.
    pub(crate) fn finish(mut self) -> io::Result<(W, u64)> {
        self.entry("TRAILER!!!", 0, 0, 0, 1, &[])?;
        self.out.flush()?;
        Ok((self.out, self.written))
    }

    fn parents(&mut self, path: &str) -> io::Result<()> {
        if let Some((parent, _)) = path.rsplit_once('/') {
            if !self.dirs.contains(parent) {
                self.dir(parent, 0o755, 0, 0)?;
            }
        }
        Ok(())
    }

    fn entry(
        &mut self,
        name: &str,
        mode: u32,
        uid: u32,
        gid: u32,
        nlink: u32,
        data: &[u8],
    ) -> io::Result<()> {
        let size = u32::try_from(data.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file over 4 GiB"))?;
        let ino = if name == "TRAILER!!!" { 0 } else { self.ino };
        self.ino += 1;
        // magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor,
        // devminor, rdevmajor, rdevminor, namesize, check.
        let header = format!(
            "070701{ino:08x}{mode:08x}{uid:08x}{gid:08x}{nlink:08x}{:08x}{size:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
            0,
            0,
            0,
            0,
            0,
            name.len() + 1,
            0
        );
        self.put(header.as_bytes())?;
        self.put(name.as_bytes())?;
        self.put(&[0])?;
        self.pad()?;
        self.put(data)?;
        self.pad()
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn pad(&mut self) -> io::Result<()> {
        let n = (4 - (self.written % 4) as usize) % 4;
        self.put(&[0; 3][..n])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host's own `cpio` reads back what we write, names, modes and data.
    #[test]
    fn cpio_lists_and_extracts_the_archive() {
        let mut c = Cpio::new(Vec::new());
        c.file("/a/b/hello.txt", 0o640, 0, 0, b"hello\n").unwrap();
        c.dir("/a/empty", 0o700, 0, 0).unwrap();
        c.symlink("/a/link", "b/hello.txt").unwrap();
        let (bytes, n) = c.finish().unwrap();
        assert_eq!(bytes.len() as u64, n);
        assert_eq!(bytes.len() % 4, 0);
        let Some(cpio) = crate::host::which("cpio") else {
            eprintln!("skipped: no cpio on this machine");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new(cpio)
            .args(["-idm", "--quiet", "--no-absolute-filenames"])
            .current_dir(dir.path())
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&bytes).unwrap();
        assert!(child.wait().unwrap().success());
        let p = dir.path();
        assert_eq!(std::fs::read(p.join("a/b/hello.txt")).unwrap(), b"hello\n");
        assert_eq!(std::fs::read(p.join("a/link")).unwrap(), b"hello\n");
        use std::os::unix::fs::PermissionsExt;
        let mode = |f: &str| std::fs::metadata(p.join(f)).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode("a/b/hello.txt"), 0o640);
        assert_eq!(mode("a/empty"), 0o700);
    }
}
