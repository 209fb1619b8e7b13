//! The `podman` command line every Podman placement drives ([`Cli`]: as root, or as the rootless user).
//! Podman has no daemon; tare runs `podman` and reads its `--format json`.
//! Its store holds the image tare builds for Docker from the host's binary,
//! imported under the same content tag ([`ensure_image`]), and a user's
//! image imported from its exported files ([`import_rootfs`]). The containers
//! themselves are `podman_site`'s.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;

use serde_json::Value;

use super::podman_user::RootlessUser;
use crate::docker::{image, LABEL_OWNER};
use crate::error::DeployError;
use crate::owner::CleanupReport;
use crate::procfs;

/// What to install when the binary is missing.
const INSTALL: &str =
    "install it (Debian: apt-get install podman netavark aardvark-dns; or scripts/setup.sh)";

/// Removes the containers and volumes labelled with a dead tare owner from
/// one Podman store (`what` names the store in the report).
pub(super) fn clean_labelled(cli: &Cli, what: &str, report: &mut CleanupReport) {
    let owner_filter = format!("label={LABEL_OWNER}");
    let containers = match cli.run(&["ps", "-a", "--filter", &owner_filter, "--format", "json"]) {
        Ok(out) => out,
        Err(e) => return report.notes.push(e.to_string()),
    };
    for c in labelled(&containers, "Names") {
        if c.owner.as_deref().is_some_and(procfs::owner_alive) {
            report.live.push(format!("{what} container {}", c.name));
            continue;
        }
        match remove_container(cli, &c.id) {
            Ok(()) => report.removed.push(format!("{what} container {}", c.name)),
            Err(e) => report
                .notes
                .push(format!("{what} container {}: {e}", c.name)),
        }
    }
    let volumes = match cli.run(&[
        "volume",
        "ls",
        "--filter",
        &owner_filter,
        "--format",
        "json",
    ]) {
        Ok(out) => out,
        Err(e) => return report.notes.push(e.to_string()),
    };
    for v in labelled(&volumes, "Name") {
        if v.owner.as_deref().is_some_and(procfs::owner_alive) {
            report.live.push(format!("{what} volume {}", v.name));
            continue;
        }
        match remove_volume(cli, &v.name) {
            Ok(()) => report.removed.push(format!("{what} volume {}", v.name)),
            Err(e) => report.notes.push(format!("{what} volume {}: {e}", v.name)),
        }
    }
    // A user's image imported for a deployment (`import_rootfs`); tare's
    // own image cache carries no owner and stays.
    let images = match cli.run(&["images", "--filter", &owner_filter, "--format", "json"]) {
        Ok(out) => out,
        Err(e) => return report.notes.push(e.to_string()),
    };
    for i in labelled(&images, "Names") {
        if i.owner.as_deref().is_some_and(procfs::owner_alive) {
            report.live.push(format!("{what} image {}", i.name));
            continue;
        }
        match remove_image(cli, &i.id) {
            Ok(()) => report.removed.push(format!("{what} image {}", i.name)),
            Err(e) => report.notes.push(format!("{what} image {}: {e}", i.name)),
        }
    }
}

/// Who runs `podman`: tare itself as root (rootful), or the rootless user.
#[derive(Clone)]
pub(super) enum Cli {
    Rootful,
    Rootless(Arc<RootlessUser>),
}

impl Cli {
    /// `podman`, as root or as the rootless user, killed when the tare
    /// thread that runs it dies: a `podman start` that outlives a killed
    /// `tare run` races `tare cleanup`'s `podman rm` and can leave a
    /// running container with no record (`podman_orphans`). Every `podman`
    /// tare runs is waited for by the thread that started it.
    pub(super) fn command(&self) -> Command {
        use std::os::unix::process::CommandExt;
        let mut c = match self {
            Cli::Rootful => Command::new("podman"),
            Cli::Rootless(u) => u.command("podman"),
        };
        // SAFETY: prctl is async-signal-safe; it runs in the child after
        // fork (and after its uid change, which would clear it) and
        // before exec.
        unsafe {
            c.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        c
    }

    /// Runs `podman ARGS`; its stdout, or an error with its last stderr line.
    pub(super) fn run(&self, args: &[&str]) -> Result<String, DeployError> {
        self.run_with(args, None)
    }

    /// As `run`, with `input` on stdin.
    pub(super) fn run_with(
        &self,
        args: &[&str],
        input: Option<&[u8]>,
    ) -> Result<String, DeployError> {
        let what = format!("podman {}", args.first().copied().unwrap_or(""));
        let mut cmd = self.command();
        cmd.args(args)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                DeployError::Podman(format!("the podman command is not installed: {INSTALL}"))
            }
            _ => DeployError::io(format!("running {what}"), e),
        })?;
        if let (Some(data), Some(mut stdin)) = (input, child.stdin.take()) {
            // A write error shows up as podman's own failure below.
            let _ = stdin.write_all(data);
        }
        let out = child
            .wait_with_output()
            .map_err(|e| DeployError::io(format!("running {what}"), e))?;
        if !out.status.success() {
            let last = last_error(&out.stderr, "level=warning");
            return Err(DeployError::Podman(format!("{what}: {last}")));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `podman ARGS`' whole output, whatever its exit status.
    pub(super) fn output(&self, args: &[&str]) -> std::io::Result<std::process::Output> {
        self.command().args(args).stdin(Stdio::null()).output()
    }
}

/// The last line of a tool's stderr that says something: not blank, not
/// containing `noise` (Podman's warnings, pasta's syslog complaints).
pub(super) fn last_error(stderr: &[u8], noise: &str) -> String {
    String::from_utf8_lossy(stderr)
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty() && !l.contains(noise))
        .unwrap_or("")
        .trim()
        .trim_start_matches("Error: ")
        .to_string()
}

/// Podman's version, or the one line naming what to install.
pub(super) fn version() -> Result<String, String> {
    match Cli::Rootful.run(&["version", "--format", "{{.Client.Version}}"]) {
        Ok(v) => Ok(v.trim().to_string()),
        Err(e) => Err(e.to_string()),
    }
}

pub(super) fn info(cli: &Cli) -> Result<Value, DeployError> {
    let out = cli.run(&["info", "--format", "json"])?;
    serde_json::from_str(&out)
        .map_err(|e| DeployError::Podman(format!("podman info: unreadable JSON: {e}")))
}

/// `netavark` or `cni`.
pub(crate) fn network_backend(info: &Value) -> String {
    info.pointer("/host/networkBackend")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_string()
}

/// `overlay`, `vfs`... (with `fuse-overlayfs` when overlay runs through it).
pub(crate) fn storage_driver(info: &Value) -> String {
    let driver = info
        .pointer("/store/graphDriverName")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let fuse = info
        .pointer("/store/graphOptions/overlay.mount_program/Executable")
        .and_then(Value::as_str)
        .is_some_and(|p| p.contains("fuse-overlayfs"));
    if driver == "overlay" && fuse {
        "fuse-overlayfs".into()
    } else {
        driver.into()
    }
}

/// A tare container or volume in Podman's store.
pub(crate) struct Labelled {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) owner: Option<String>,
}

/// Entries of a `podman ps/volume ls --format json` listing; `name_key` is
/// `Names` (a list) for containers, `Name` for volumes.
pub(crate) fn labelled(json: &str, name_key: &str) -> Vec<Labelled> {
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(json) else {
        return Vec::new();
    };
    items
        .iter()
        .map(|i| {
            let name = match &i[name_key] {
                Value::Array(n) => n.first().and_then(Value::as_str).unwrap_or(""),
                v => v.as_str().unwrap_or(""),
            }
            .to_string();
            Labelled {
                id: i["Id"].as_str().unwrap_or(&name).to_string(),
                owner: i["Labels"][LABEL_OWNER].as_str().map(str::to_string),
                name,
            }
        })
        .collect()
}

pub(super) fn remove_container(cli: &Cli, id: &str) -> Result<(), DeployError> {
    cli.run(&["rm", "--force", "--volumes", "--ignore", "--time", "2", id])
        .map(drop)
}

/// Removes an image tare imported, if it is still there.
pub(super) fn remove_image(cli: &Cli, image: &str) -> Result<(), DeployError> {
    match cli.run(&["rmi", "--force", image]) {
        Err(DeployError::Podman(e)) if e.contains("image not known") => Ok(()),
        r => r.map(drop),
    }
}

/// A user's image in this store as `tag`: the root filesystem tare
/// exported from Docker's store for the deployment (`rootfs`, the files
/// every other placement runs), streamed into `podman import` with tare's
/// labels and `owner` (found by `tare cleanup` if tare is killed). The
/// image's entrypoint, env, working directory and user are given to the
/// container when it is created, as Docker's are.
pub(super) fn import_rootfs(
    cli: &Cli,
    rootfs: &std::path::Path,
    tag: &str,
    labels: &[(&str, &str)],
) -> Result<(), DeployError> {
    let failed = |reason: String| DeployError::ImageBuild {
        target: tag.to_string(),
        reason,
    };
    let mut tar = Command::new("tar")
        .args(["--numeric-owner", "-C"])
        .arg(rootfs)
        .args(["-c", "."])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| DeployError::io("running tar", e))?;
    let stream = tar.stdout.take().expect("piped");
    let mut import = cli.command();
    import.args(["import", "--quiet"]);
    for (k, v) in labels {
        import.arg("--change").arg(format!(
            "LABEL {k}={}",
            crate::docker::image::dockerfile_quote(v)
        ));
    }
    let imported = import
        .args(["-", tag])
        .stdin(stream)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output();
    let packed = tar
        .wait_with_output()
        .map_err(|e| DeployError::io("running tar", e))?;
    let imported = imported.map_err(|e| DeployError::io("running podman import", e))?;
    if !imported.status.success() {
        return Err(failed(format!(
            "podman import: {}",
            last_error(&imported.stderr, "level=warning")
        )));
    }
    if !packed.status.success() {
        return Err(failed(format!(
            "tar of {}: {}",
            rootfs.display(),
            last_error(&packed.stderr, "\0")
        )));
    }
    Ok(())
}

pub(super) fn remove_volume(cli: &Cli, name: &str) -> Result<(), DeployError> {
    match cli.run(&["volume", "rm", "--force", name]) {
        Err(DeployError::Podman(e)) if e.contains("no such volume") => Ok(()),
        r => r.map(drop),
    }
}

/// The image for `server` in Podman's store: the recipe `tare image build`
/// uses for Docker, imported under the same content tag (built once per
/// binary; the tag says which binary, so a cached tag is the same image).
pub(super) fn ensure_image(
    cli: &Cli,
    target: &crate::targets::Target,
    binary: &std::path::Path,
) -> Result<String, DeployError> {
    let (tag, sha) = image::tag_for(target, binary)?;
    if cli.run(&["image", "exists", &tag]).is_ok() {
        return Ok(tag);
    }
    let failed = |reason: String| DeployError::ImageBuild {
        target: target.image.clone(),
        reason,
    };
    let recipe = image::recipe(target, binary, &sha).map_err(failed)?;
    let mut args: Vec<String> = vec!["import".into(), "--quiet".into()];
    for c in &recipe.changes {
        args.push("--change".into());
        args.push(c.clone());
    }
    args.push("-".into());
    args.push(tag.clone());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    cli.run_with(&args, Some(&recipe.context))
        .map_err(|e| failed(e.to_string()))?;
    Ok(tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listings_name_owner_and_id() {
        let ps = r#"[{"Id":"abc","Names":["tare-x-1-0"],"Labels":{"tare.owner":"12:34"}},
                     {"Id":"def","Names":["other"],"Labels":null}]"#;
        let l = labelled(ps, "Names");
        assert_eq!(l.len(), 2);
        assert_eq!(
            (l[0].id.as_str(), l[0].name.as_str()),
            ("abc", "tare-x-1-0")
        );
        assert_eq!(l[0].owner.as_deref(), Some("12:34"));
        assert_eq!(l[1].owner, None);
        let vols = r#"[{"Name":"tare-x-1-0","Labels":{"tare.owner":"1:2"}}]"#;
        let v = labelled(vols, "Name");
        assert_eq!(
            (v[0].id.as_str(), v[0].name.as_str()),
            ("tare-x-1-0", "tare-x-1-0")
        );
        assert!(labelled("not json", "Name").is_empty());
    }

    #[test]
    fn storage_driver_says_fuse_overlayfs() {
        let info: Value = serde_json::from_str(
            r#"{"store":{"graphDriverName":"overlay","graphOptions":{"overlay.mount_program":{"Executable":"/usr/bin/fuse-overlayfs"}}}}"#,
        )
        .unwrap();
        assert_eq!(storage_driver(&info), "fuse-overlayfs");
        let info: Value = serde_json::from_str(r#"{"store":{"graphDriverName":"vfs"}}"#).unwrap();
        assert_eq!(storage_driver(&info), "vfs");
    }
}
