//! How JMeter is started: the `jmeter` found as is, or, for Debian 12's
//! JMeter 2.13, through tare's launcher (`TareJMeter.java` beside this
//! file), which gives JMeter's XStream the type permission Debian's newer
//! libxstream-java withholds (docs/external.md, "JMeter").
//!
//! The launcher is compiled by `javac` once into a cache
//! (`/var/tmp/tare-jmeter-cache/<sha256 of its source>`, `TARE_JMETER_CACHE`
//! overrides; `tare cleanup` leaves it, as it leaves the vm cache) and run
//! by the `java` beside that `javac`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

/// The launcher's source, compiled as it is shipped.
const SOURCE: &str = include_str!("TareJMeter.java");

/// Where Debian's package puts JMeter (its `/usr/bin/jmeter` links here).
const DEBIAN_HOME: &str = "/usr/share/jmeter";

/// Where the compiled launcher is kept.
fn cache_dir() -> PathBuf {
    std::env::var_os("TARE_JMETER_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/tmp/tare-jmeter-cache"))
}

/// The command that starts `binary` (the `jmeter` found on PATH or named
/// by `binary`): `[binary]` for any JMeter but Debian's 2.13, which gets
/// `java -Djmeter.home=... -cp CACHE:ApacheJMeter.jar TareJMeter`.
pub fn command(binary: &Path) -> Result<Vec<String>, String> {
    match debian_home(binary) {
        Some(home) => launcher(&home),
        None => Ok(vec![binary.display().to_string()]),
    }
}

/// Debian's JMeter home when `binary` is Debian's `jmeter` script and the
/// installed package is 2.13 (the one XStream's list stops), else `None`.
fn debian_home(binary: &Path) -> Option<PathBuf> {
    let home = Path::new(DEBIAN_HOME);
    let real = std::fs::canonicalize(binary).ok()?;
    if real != home.join("bin/jmeter") {
        return None;
    }
    let out = std::process::Command::new("dpkg-query")
        .args(["-W", "-f=${Version}", "jmeter"])
        .output()
        .ok()?;
    let version = String::from_utf8_lossy(&out.stdout);
    (out.status.success() && version.starts_with("2.13")).then(|| home.to_path_buf())
}

/// The launcher's command for the JMeter in `home`, compiling it first
/// when the cache lacks this source's build.
fn launcher(home: &Path) -> Result<Vec<String>, String> {
    let javac = crate::on_path("javac").ok_or(
        "Debian's JMeter 2.13 needs tare's launcher, compiled by javac, which is not installed: \
         install the Debian package default-jdk-headless (apt-get install default-jdk-headless; \
         scripts/setup.sh does)",
    )?;
    // The `java` of the same JDK runs what its `javac` compiled.
    let javac = std::fs::canonicalize(&javac).unwrap_or(javac);
    let java = javac.with_file_name("java");
    let classes = compiled(&javac)?;
    Ok(vec![
        java.display().to_string(),
        format!("-Djmeter.home={}", home.display()),
        "-Djava.awt.headless=true".into(),
        "-cp".into(),
        format!(
            "{}:{}",
            classes.display(),
            home.join("bin/ApacheJMeter.jar").display()
        ),
        "TareJMeter".into(),
    ])
}

/// The directory holding `TareJMeter.class` for this source, compiled
/// into a directory of its own and renamed into place (two runs compiling
/// at once both end with one whole build).
fn compiled(javac: &Path) -> Result<PathBuf, String> {
    let hash = Sha256::digest(SOURCE.as_bytes());
    let key: String = hash[..8].iter().map(|b| format!("{b:02x}")).collect();
    let cache = cache_dir();
    let dir = cache.join(format!("launcher-{key}"));
    if dir.join("TareJMeter.class").is_file() {
        return Ok(dir);
    }
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let tmp = cache.join(format!(
        ".tmp-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| format!("making {}: {e}", tmp.display()))?;
    let result = compile(javac, &tmp).and_then(|()| {
        match std::fs::rename(&tmp, &dir) {
            Ok(()) => Ok(()),
            // Another run put its build there first.
            Err(_) if dir.join("TareJMeter.class").is_file() => Ok(()),
            Err(e) => Err(format!(
                "keeping tare's JMeter launcher in {}: {e}",
                dir.display()
            )),
        }
    });
    let _ = std::fs::remove_dir_all(&tmp);
    result.map(|()| dir)
}

fn compile(javac: &Path, dir: &Path) -> Result<(), String> {
    let src = dir.join("TareJMeter.java");
    std::fs::write(&src, SOURCE).map_err(|e| format!("writing {}: {e}", src.display()))?;
    let out = std::process::Command::new(javac)
        .arg("-d")
        .arg(dir)
        .arg(&src)
        .output()
        .map_err(|e| format!("starting {}: {e}", javac.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let line: String = err
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .chars()
            .take(300)
            .collect();
        return Err(format!(
            "javac could not compile tare's JMeter launcher ({}): {line}",
            out.status
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// A JMeter that is not Debian's (another path) runs as it is.
    #[test]
    fn a_jmeter_of_its_own_runs_as_is() {
        let cmd = super::command(std::path::Path::new("/bin/sh")).unwrap();
        assert_eq!(cmd, ["/bin/sh"]);
    }
}
