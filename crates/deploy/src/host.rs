//! What this host has, read without starting anything: a program on
//! PATH, the line it says its version in, the running tare, a file's
//! sha256, an ELF file's shared libraries, the files under a directory.
//! A leaf: targets, images and guests all read the host through it, so it
//! imports nothing of the crate but the error type.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use sha2::{Digest, Sha256};

use crate::error::DeployError;

/// `name` on PATH (and the sbin directories a root shell has).
pub(crate) fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/sbin:/usr/bin:/sbin:/bin".into());
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/local/sbin".into()])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The running tare (tare-serve, net, tool and nginx-proxy's backend run it).
pub(crate) fn running_tare() -> Result<PathBuf, DeployError> {
    std::env::current_exe().map_err(|e| DeployError::io("locating the running tare executable", e))
}

/// The first line `binary flag` prints (on stdout, or stderr if stdout is empty).
pub(crate) fn version_line(binary: &Path, flag: &str) -> Option<String> {
    let out = std::process::Command::new(binary).arg(flag).output().ok()?;
    let text = if out.stdout.is_empty() {
        out.stderr
    } else {
        out.stdout
    };
    let line = String::from_utf8_lossy(&text)
        .lines()
        .next()?
        .trim()
        .to_string();
    Some(line)
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// sha256 of a file, cached by path, size and mtime (binaries are tens of MB).
pub(crate) fn file_sha256(path: &Path) -> Result<String, DeployError> {
    type Key = (PathBuf, u64, i64);
    static CACHE: OnceLock<Mutex<Vec<(Key, String)>>> = OnceLock::new();
    use std::os::unix::fs::MetadataExt;
    let md =
        std::fs::metadata(path).map_err(|e| DeployError::io(format!("{}", path.display()), e))?;
    let key = (path.to_path_buf(), md.size(), md.mtime());
    let cache = CACHE.get_or_init(Default::default);
    if let Some((_, h)) = cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(k, _)| *k == key)
    {
        return Ok(h.clone());
    }
    let bytes = std::fs::read(path)
        .map_err(|e| DeployError::io(format!("reading {}", path.display()), e))?;
    let h = sha256_hex(&bytes);
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((key, h.clone()));
    Ok(h)
}

/// Every file under `dir`, recursively.
pub(crate) fn walk(dir: &Path, out: &mut BTreeSet<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.is_file() {
            out.insert(p);
        }
    }
}

/// The shared libraries and loader of an ELF file, as `ldd` resolves them.
pub(crate) fn shared_libraries(binary: &Path) -> Result<Vec<PathBuf>, String> {
    let out = std::process::Command::new("ldd")
        .arg(binary)
        .output()
        .map_err(|e| format!("running ldd: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        // A static binary: nothing to add.
        if text.contains("not a dynamic executable")
            || String::from_utf8_lossy(&out.stderr).contains("not a dynamic")
        {
            return Ok(Vec::new());
        }
        return Err(format!(
            "ldd {}: {}",
            binary.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    parse_ldd(&text)
}

fn parse_ldd(text: &str) -> Result<Vec<PathBuf>, String> {
    let mut libs = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.contains("=> not found") {
            return Err(format!("missing shared library: {line}"));
        }
        let path = match line.split_once("=>") {
            Some((_, rhs)) => rhs.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        if let Some(p) = path.filter(|p| p.starts_with('/')) {
            libs.push(PathBuf::from(p));
        }
    }
    Ok(libs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ldd_output() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x7f)\n\t/lib64/ld-linux-x86-64.so.2 (0x7f)\n";
        let libs = parse_ldd(text).unwrap();
        assert_eq!(
            libs,
            vec![
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2")
            ]
        );
        assert!(parse_ldd("\tlibfoo.so => not found\n").is_err());
    }
}
