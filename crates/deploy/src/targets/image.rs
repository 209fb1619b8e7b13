//! `image`: the user's own service as a container image, a local one
//! (`image = "name:tag"`) or one tare builds from a Dockerfile context
//! (`build = "dir"`) with the local engine, nothing pulled
//! (docs/your-service.md, "Your image"). What runs, as whom, where and on
//! which port comes from the image's config (`docker image inspect`):
//! entrypoint and cmd, env, working directory, user, exposed port.
//!
//! Every placement runs the image's own files. Containers run the image;
//! a plain process (native, lab-*) runs the entrypoint chrooted into the
//! image's root filesystem, exported next to the deployment directory
//! (`placements::chroot`); a guest boots with it; Podman imports it. Each
//! deployment gets the tree and its hash (`image_export`, exported once a
//! run with an `ExportCache`), so the facts compare the files that ran,
//! not only the binary.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command as Cmd, Stdio};

use serde::{Deserialize, Serialize};

use super::image_export::{docker, last_lines};
use super::{Prepare, Protocol, Recipe, Server, Target, TargetKind};
use crate::error::DeployError;
use crate::teardown::{Resource, Teardown, Undo};

pub(crate) struct Image;

impl Recipe for Image {
    fn name(&self) -> &'static str {
        "image"
    }

    fn about(&self) -> &'static str {
        "your own service as a local image or a Dockerfile, run from its own files in every placement (docs/your-service.md)"
    }

    /// An HTTP service on the port its image exposes, read when it deploys.
    fn target(&self) -> Target {
        Target {
            oci: Some(Oci::default()),
            fills_own_content: true,
            ready: super::Ready::Tcp,
            ..Target::of(TargetKind(&Image), Protocol::Http, 0)
        }
    }

    /// The entrypoint's path in the image (it is not the host's).
    fn default_binary(&self, target: &Target) -> Result<PathBuf, DeployError> {
        oci(target)?
            .config
            .as_ref()
            .and_then(|c| c.argv.first())
            .map(PathBuf::from)
            .ok_or_else(|| DeployError::Invalid("the image's config was not read".into()))
    }

    /// Nothing is run to ask (the image's binary may not run on the host).
    fn version(&self, _binary: &Path) -> Option<String> {
        None
    }

    fn prepare(&self, cx: &Prepare<'_>) -> Result<Server, DeployError> {
        let o = oci(cx.target())?;
        let config = o
            .config
            .as_ref()
            .ok_or_else(|| DeployError::Invalid("the image's config was not read".into()))?;
        let ExportedRoot {
            dir: rootfs,
            tree_sha256: tree,
        } = o
            .exported
            .clone()
            .ok_or_else(|| DeployError::Invalid("the image's files were not exported".into()))?;
        let binary = in_root(&rootfs, &config.argv[0], &config.env);
        let binary_sha256 = binary
            .as_deref()
            .and_then(|b| crate::host::file_sha256(b).ok());
        let run_as = match config.user.as_str() {
            "" | "root" | "0" | "0:0" => None,
            user => Some(user_ids(&rootfs, user).map_err(|e| {
                DeployError::Invalid(format!("image {}: user {user:?}: {e}", config.tag))
            })?),
        };
        let text = config.to_string();
        Ok(Server {
            args: config.argv[1..].to_vec(),
            env: config.env.clone(),
            workdir: Some(PathBuf::from(if config.workdir.is_empty() {
                "/"
            } else {
                &config.workdir
            })),
            run_as,
            resource: o.path.clone(),
            root: Some(RootFs {
                dir: rootfs,
                tree_sha256: tree,
                binary_sha256,
            }),
            // What it runs on, as it sees it: its root filesystem.
            log_path: "/".into(),
            content_path: "/".into(),
            ..Server::new(cx, Vec::new(), text.as_bytes())
        })
    }
}

impl Target {
    /// A user's image as a target: an HTTP service on the port its image
    /// exposes, load asking for `/` (the caller sets what else it says).
    pub fn user_image(source: OciSource) -> Target {
        let mut t = Image.target();
        t.oci = Some(Oci {
            source,
            path: "/".into(),
            ..Oci::default()
        });
        t
    }
}

/// Where a deployment's exported root filesystem is: `<dir>-root/rootfs`,
/// removed with it (and found by `tare cleanup` by its owner file).
fn root_dir(dir: &Path) -> PathBuf {
    let mut name = dir.as_os_str().to_owned();
    name.push("-root");
    PathBuf::from(name)
}

impl Oci {
    /// The directory the user named (`build`), for messages.
    fn source_dir(&self) -> &Path {
        match &self.source {
            OciSource::Build(dir) => dir,
            _ => Path::new(""),
        }
    }
}

fn oci(target: &Target) -> Result<&Oci, DeployError> {
    target
        .oci
        .as_ref()
        .ok_or_else(|| DeployError::Invalid("kind = \"image\" needs `image` or `build`".into()))
}

/// What `[target]` says with `kind = "image"`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Oci {
    pub source: OciSource,
    /// The HTTP path load asks for.
    pub path: String,
    /// The port it listens on, when the image exposes none or several.
    #[serde(default)]
    pub port: Option<u16>,
    /// With `Build`: host files put into the build context at their host
    /// paths (`/bin/busybox` as `bin/busybox`) before it is built.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_files: Vec<PathBuf>,
    /// Its config, read from the engine when it deploys.
    #[serde(default)]
    pub config: Option<OciConfig>,
    /// Its files on the host, exported when it deploys.
    #[serde(skip)]
    pub exported: Option<ExportedRoot>,
}

/// An image's root filesystem exported for one deployment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportedRoot {
    /// The tree (`<deployment dir>-root/rootfs`).
    pub dir: PathBuf,
    /// [`tree_sha256`](crate::tree_sha256) of it as exported.
    pub tree_sha256: String,
}

/// Where the image comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OciSource {
    /// A local image, by name or id.
    Image(String),
    /// A Dockerfile context built for each deployment, removed after.
    Build(PathBuf),
    /// Not said yet.
    #[default]
    Unset,
}

/// What the image's config says, as tare runs it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OciConfig {
    /// What the engine knows it as (tag or id).
    pub tag: String,
    /// Its files' identity: a digest of its layers' content digests
    /// (`RootFS.Layers`), the same for the same files under any tag or
    /// rebuild (a build's labels give each build its own image id); its
    /// image id when the engine lists no layers.
    #[serde(default)]
    pub id: String,
    /// Entrypoint then cmd.
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub workdir: String,
    pub user: String,
    /// Its exposed TCP ports, lowest first.
    pub ports: Vec<u16>,
}

/// The config as run (the config hash's text): the same in every placement.
impl std::fmt::Display for OciConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "argv {:?}", self.argv)?;
        for (k, v) in &self.env {
            write!(f, "\nenv {k}={v:?}")?;
        }
        write!(f, "\nworkdir {:?}\nuser {:?}", self.workdir, self.user)
    }
}

/// The part of `docker image inspect` tare reads.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Inspected {
    #[serde(default)]
    id: String,
    #[serde(rename = "RootFS", default)]
    root_fs: Option<InspectedRootFs>,
    config: Option<InspectedConfig>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectedRootFs {
    layers: Option<Vec<String>>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectedConfig {
    entrypoint: Option<Vec<String>>,
    cmd: Option<Vec<String>>,
    env: Option<Vec<String>>,
    working_dir: Option<String>,
    user: Option<String>,
    exposed_ports: Option<BTreeMap<String, serde_json::Value>>,
}

/// Reads an image's config from `docker image inspect` JSON (one image).
pub(crate) fn parse_inspect(tag: &str, json: &str) -> Result<OciConfig, String> {
    let list: Vec<Inspected> =
        serde_json::from_str(json).map_err(|e| format!("docker image inspect: {e}"))?;
    let image = list
        .into_iter()
        .next()
        .ok_or("docker image inspect printed no image")?;
    let layers = image
        .root_fs
        .and_then(|r| r.layers)
        .filter(|l| !l.is_empty());
    let id = match layers {
        Some(l) => format!(
            "layers:{}",
            crate::host::sha256_hex(l.join("\n").as_bytes())
        ),
        None => image.id,
    };
    let c = image.config.unwrap_or_default();
    let mut argv = c.entrypoint.unwrap_or_default();
    argv.extend(c.cmd.unwrap_or_default());
    if argv.first().is_none_or(|p| p.is_empty()) {
        return Err(format!(
            "image {tag} has no entrypoint or cmd: nothing to run (give it ENTRYPOINT or CMD)"
        ));
    }
    let env = c
        .env
        .unwrap_or_default()
        .into_iter()
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (kv, String::new()),
        })
        .collect();
    let mut ports: Vec<u16> = c
        .exposed_ports
        .unwrap_or_default()
        .keys()
        .filter_map(|k| match k.split_once('/') {
            Some((p, "tcp")) => p.parse().ok(),
            Some(_) => None,
            None => k.parse().ok(),
        })
        .collect();
    ports.sort_unstable();
    Ok(OciConfig {
        tag: tag.to_string(),
        id,
        argv,
        env,
        workdir: c.working_dir.unwrap_or_default(),
        user: c.user.unwrap_or_default(),
        ports,
    })
}

/// `target` with its image built (when it has a Dockerfile) and its config
/// read: the port it listens on and what it runs. A built image is
/// removed with the deployment (`teardown`).
pub(crate) fn resolve(
    target: &Target,
    dir: &Path,
    teardown: &Teardown,
    owner: &str,
    run_id: &str,
) -> Result<Target, DeployError> {
    let mut target = target.clone();
    let o = target
        .oci
        .as_mut()
        .ok_or_else(|| DeployError::Invalid("not an image target".into()))?;
    // Beside the deployment directory, not in it: a container given the
    // directory (storage = image) would get the exported tree too.
    let outer = root_dir(dir);
    std::fs::create_dir(&outer)
        .map_err(|e| DeployError::io(format!("creating {}", outer.display()), e))?;
    teardown.push(Resource::Dir(outer.clone()));
    std::fs::write(outer.join(crate::owner::OWNER_FILE), owner)
        .map_err(|e| DeployError::io("writing the owner file", e))?;
    let tag = match &o.source {
        OciSource::Image(name) => name.clone(),
        OciSource::Build(context) => {
            let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("tare");
            let tag = format!("tare/built:{name}");
            let context = match o.context_files.as_slice() {
                [] => context.clone(),
                files => with_host_files(context, files, &outer.join("context"))?,
            };
            build(&context, o.source_dir(), &tag, owner, teardown)?;
            tag
        }
        OciSource::Unset => return Err(DeployError::Invalid(
            "kind = \"image\" needs `image` (a local image) or `build` (a Dockerfile directory)"
                .into(),
        )),
    };
    let out = docker(&["image", "inspect", &tag])?;
    if !out.status.success() {
        return Err(DeployError::Invalid(format!(
            "image {tag}: not in the local engine (nothing is pulled: build it, or give `build`): {}",
            last_lines(&out.stderr, 2)
        )));
    }
    let config =
        parse_inspect(&tag, &String::from_utf8_lossy(&out.stdout)).map_err(DeployError::Invalid)?;
    target.port = match (o.port, config.ports.as_slice()) {
        (Some(p), _) => p,
        (None, [p]) => *p,
        (None, []) => {
            return Err(DeployError::Invalid(format!(
                "image {tag} exposes no port: give `port` (the one it listens on)"
            )))
        }
        (None, many) => {
            return Err(DeployError::Invalid(format!(
                "image {tag} exposes ports {many:?}: give `port` (the one load goes to)"
            )))
        }
    };
    // Every placement's facts say the tree's hash; a chroot, a guest and
    // Podman run from it.
    let rootfs = outer.join("rootfs");
    let tree_sha256 = super::image_export::rootfs(&tag, &config.id, &rootfs, dir, run_id)?;
    o.exported = Some(ExportedRoot {
        dir: rootfs,
        tree_sha256,
    });
    target.binary = Some(PathBuf::from(&config.argv[0]));
    target.image = tag;
    o.config = Some(config);
    Ok(target)
}

/// `context` copied to `to` with each of `files` (host files) added at
/// its host path, as the Dockerfile's `COPY` finds them; removed with the
/// deployment (it is under its `-root` directory).
fn with_host_files(context: &Path, files: &[PathBuf], to: &Path) -> Result<PathBuf, DeployError> {
    let out = Cmd::new("cp")
        .args(["-a"])
        .arg(context)
        .arg(to)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| DeployError::io("running cp", e))?;
    if !out.status.success() {
        return Err(DeployError::Invalid(format!(
            "copying the build context {}: {}",
            context.display(),
            last_lines(&out.stderr, 1)
        )));
    }
    for f in files {
        let at = to.join(f.strip_prefix("/").unwrap_or(f));
        if let Some(parent) = at.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| DeployError::io(format!("creating {}", parent.display()), e))?;
        }
        std::fs::copy(f, &at).map_err(|e| {
            DeployError::io(format!("copying {} into the build context", f.display()), e)
        })?;
    }
    Ok(to.to_path_buf())
}

/// Builds `context` as `tag` with the local engine, labelled with its
/// owner so `tare cleanup` finds it if tare is killed; removed with the
/// deployment.
fn build(
    context: &Path,
    shown: &Path,
    tag: &str,
    owner: &str,
    teardown: &Teardown,
) -> Result<(), DeployError> {
    use crate::docker::{LABEL, LABEL_OWNER};
    let ctx = context.display().to_string();
    let labels = [format!("{LABEL}=1"), format!("{LABEL_OWNER}={owner}")];
    let args = [
        "build",
        "--force-rm",
        "--label",
        &labels[0],
        "--label",
        &labels[1],
        "-t",
        tag,
        &ctx,
    ];
    // The legacy builder shares cached layers between builds; removing an
    // image prunes its untagged parents, so another run's (or test's)
    // removal can delete a cached layer in the middle of this build. The
    // build then fails on a missing digest; a second build recomputes the
    // layer. Bounded: three builds at most.
    let mut out = docker(&args)?;
    for _ in 0..2 {
        if out.status.success() || !lost_a_cached_layer(&out.stdout, &out.stderr) {
            break;
        }
        out = docker(&args)?;
    }
    // Registered before it is known to exist: a half-built tag is removed too.
    teardown.push(Resource::Undo(Box::new(BuiltImage(tag.to_string()))));
    if !out.status.success() {
        let mut all = out.stdout.clone();
        all.extend_from_slice(&out.stderr);
        // The legacy builder's notice about BuildKit is not the cause.
        let all: Vec<u8> = String::from_utf8_lossy(&all)
            .lines()
            .filter(|l| {
                !l.contains("BuildKit")
                    && !l.contains("docs.docker.com/go/buildx")
                    && !l.contains("legacy builder is deprecated")
            })
            .flat_map(|l| l.bytes().chain([b'\n']))
            .collect();
        return Err(DeployError::ImageBuild {
            target: format!("build = {:?}", shown.display().to_string()),
            reason: format!("docker build failed: {}", last_lines(&all, 3)),
        });
    }
    Ok(())
}

/// Whether a failed build lost a layer it had taken from the cache (see
/// `build`): the engine's words for an image removed under it.
fn lost_a_cached_layer(stdout: &[u8], stderr: &[u8]) -> bool {
    [stdout, stderr].iter().any(|o| {
        let e = String::from_utf8_lossy(o);
        e.contains("failed to get digest")
            || e.contains("No such image")
            || e.contains("unknown parent image ID")
    })
}

/// An image tare built from a Dockerfile.
struct BuiltImage(String);

impl Undo for BuiltImage {
    fn undo(self: Box<Self>) -> Result<(), DeployError> {
        remove_image(&self.0)
    }
}

/// Removes an image tare built (and its untagged parents), if it exists.
pub(crate) fn remove_image(tag: &str) -> Result<(), DeployError> {
    let out = docker(&["image", "rm", "-f", tag])?;
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.success() || err.contains("No such image") {
        return Ok(());
    }
    Err(DeployError::Docker(format!(
        "removing image {tag}: {}",
        err.trim()
    )))
}

/// The host path of `program` in `rootfs`: a path as is, a bare name on
/// the image's PATH (links followed inside the tree).
fn in_root(rootfs: &Path, program: &str, env: &[(String, String)]) -> Option<PathBuf> {
    let candidates: Vec<PathBuf> = if program.contains('/') {
        vec![PathBuf::from(program)]
    } else {
        let path = env.iter().find(|(k, _)| k == "PATH").map_or(
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            |(_, v)| v.as_str(),
        );
        path.split(':')
            .map(|d| Path::new(d).join(program))
            .collect()
    };
    candidates
        .into_iter()
        .find_map(|c| resolve_in(rootfs, &c, 0))
}

/// `path` inside `rootfs` with its links resolved inside it (bounded).
fn resolve_in(rootfs: &Path, path: &Path, depth: u32) -> Option<PathBuf> {
    let rel = path.strip_prefix("/").unwrap_or(path);
    let host = rootfs.join(rel);
    let md = std::fs::symlink_metadata(&host).ok()?;
    if md.file_type().is_symlink() && depth < 16 {
        let to = std::fs::read_link(&host).ok()?;
        let next = if to.is_absolute() {
            to
        } else {
            path.parent().unwrap_or(Path::new("/")).join(to)
        };
        return resolve_in(rootfs, &next, depth + 1);
    }
    md.is_file().then_some(host)
}

/// `user` (`name`, `uid`, `name:group`, `uid:gid`) as ids, names looked
/// up in the image's own /etc/passwd and /etc/group.
fn user_ids(rootfs: &Path, user: &str) -> Result<(u32, u32), String> {
    let (u, g) = match user.split_once(':') {
        Some((u, g)) => (u, Some(g)),
        None => (user, None),
    };
    let read = |f: &str| std::fs::read_to_string(rootfs.join("etc").join(f)).unwrap_or_default();
    let passwd = read("passwd");
    let entry = |text: &str, name: &str| -> Option<Vec<String>> {
        text.lines()
            .map(|l| l.split(':').map(String::from).collect::<Vec<_>>())
            .find(|f| f.len() >= 4 && (f[0] == name || f[2] == name))
    };
    let (uid, primary) = match u.parse::<u32>() {
        Ok(n) => (n, entry(&passwd, u).and_then(|f| f[3].parse().ok())),
        Err(_) => {
            let f = entry(&passwd, u).ok_or("not in the image's /etc/passwd")?;
            (f[2].parse().map_err(|_| "a bad uid")?, f[3].parse().ok())
        }
    };
    let gid = match g {
        None => primary.unwrap_or(uid),
        Some(g) => match g.parse::<u32>() {
            Ok(n) => n,
            Err(_) => entry(&read("group"), g)
                .and_then(|f| f[2].parse().ok())
                .ok_or("its group is not in the image's /etc/group")?,
        },
    };
    Ok((uid, gid))
}

/// An exported root filesystem a server runs from.
#[derive(Clone, Debug)]
pub(crate) struct RootFs {
    /// The tree on the host (a chroot's root).
    pub dir: PathBuf,
    /// [`tree_sha256`] of it as exported.
    pub tree_sha256: String,
    /// sha256 of its entrypoint's binary, if it is a file in the tree.
    pub binary_sha256: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layer_removed_under_a_build_is_told_from_a_failed_build() {
        // Docker 20.10's words when another removal pruned a cached layer.
        let lost = b"Removing intermediate container 1beb57236b4f\nfailed to get digest \
            sha256:0bb7: open /var/lib/docker/image/overlay2/imagedb/content/sha256/0bb7: \
            no such file or directory\n";
        assert!(lost_a_cached_layer(b"Step 5/6 : EXPOSE 80\n", lost));
        let parent = b"Step 3/8 : COPY www /www\nfailed to export image: failed to set parent \
            sha256:dddb: unknown parent image ID sha256:dddb\n";
        assert!(lost_a_cached_layer(b"", parent));
        let copy = b"COPY failed: file not found in build context: stat x: file does not exist\n";
        assert!(!lost_a_cached_layer(b"", copy));
    }

    #[test]
    fn an_image_config_is_read_or_refused() {
        let json = r#"[{"Id":"sha256:ab","Config":{"Entrypoint":["/bin/httpd","-f"],"Cmd":["-p","8080"],
            "Env":["PATH=/bin","X"],"WorkingDir":"/www","User":"www:www",
            "ExposedPorts":{"8080/tcp":{},"53/udp":{},"9000/tcp":{}}}}]"#;
        let c = parse_inspect("t:1", json).unwrap();
        assert_eq!(c.argv, ["/bin/httpd", "-f", "-p", "8080"]);
        assert_eq!(
            c.env,
            [("PATH".into(), "/bin".into()), ("X".into(), String::new())]
        );
        assert_eq!((c.workdir.as_str(), c.user.as_str()), ("/www", "www:www"));
        assert_eq!(c.ports, [8080, 9000]);
        let e = parse_inspect("t:1", r#"[{"Config":{"Env":[]}}]"#).unwrap_err();
        assert!(e.contains("no entrypoint or cmd"), "{e}");
        assert!(parse_inspect("t:1", "[]").is_err());
        assert!(parse_inspect("t:1", "{").is_err());
    }

    #[test]
    fn users_are_found_in_the_image() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("etc")).unwrap();
        std::fs::write(dir.path().join("etc/passwd"), "www:x:33:34::/:/bin/sh\n").unwrap();
        std::fs::write(dir.path().join("etc/group"), "web:x:70:\n").unwrap();
        assert_eq!(user_ids(dir.path(), "www"), Ok((33, 34)));
        assert_eq!(user_ids(dir.path(), "www:web"), Ok((33, 70)));
        assert_eq!(user_ids(dir.path(), "1000:5"), Ok((1000, 5)));
        assert_eq!(user_ids(dir.path(), "1000"), Ok((1000, 1000)));
        assert!(user_ids(dir.path(), "nobody").is_err());
    }

    #[test]
    fn a_tree_hash_sees_content_modes_and_links() {
        use crate::targets::image_export::tree_sha256;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("bin")).unwrap();
        std::fs::write(root.join("bin/a"), "one").unwrap();
        std::os::unix::fs::symlink("a", root.join("bin/b")).unwrap();
        let first = tree_sha256(root).unwrap();
        assert_eq!(first, tree_sha256(root).unwrap());
        assert_eq!(
            in_root(root, "b", &[("PATH".into(), "/bin".into())]),
            Some(root.join("bin/a"))
        );
        std::fs::write(root.join("bin/a"), "two").unwrap();
        assert_ne!(first, tree_sha256(root).unwrap());
    }
}
