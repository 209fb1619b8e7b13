//! `tare image build`: a local image made from the host's own server binary,
//! so native and container runs use the identical binary, with no registry.
//!
//! The image is one layer imported from a root filesystem tar (the engine's
//! `docker import`, with the labels as changes): the binary with its
//! shared-library closure (from `ldd`), the loader, and the few files the
//! server reads (passwd/group, nginx mime.types, postgres share files). Files
//! keep their host paths. The tag carries a hash of the binary and of this
//! recipe, so the same binary is built once and reused.
//!
//! Import, not `/build`: the legacy builder commits each step through an
//! intermediate container, and a tare killed mid-build left that container
//! behind (under a random name `tare cleanup` cannot know). An import makes no
//! container at all.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::api::{label_filter, query_escape, stream_error};
use super::{connect, LABEL};
use crate::error::DeployError;
use crate::host::{sha256_hex, shared_libraries};
use crate::targets::Target;

/// Bump when the image layout below changes, so old tags are not reused.
const RECIPE: &str = "tare-image-2";

/// What `tare image build` made (or found already built).
#[derive(Clone, Debug, serde::Serialize)]
pub struct ImageInfo {
    pub tag: String,
    pub binary: PathBuf,
    pub binary_sha256: String,
    /// Files copied into the image.
    pub files: usize,
    /// Size of the root filesystem tar sent to the engine.
    pub context_bytes: u64,
    /// false: an image with this tag already existed and was reused.
    pub built: bool,
}

/// The tag for a binary: `tare/<target>:<hash of recipe, binary and path>`.
/// The path is part of the image (files keep their host paths, and the
/// container runs the binary by it): the same build in two checkouts must
/// not share an image whose binary sits at the other one's path.
pub(crate) fn tag_for(target: &Target, binary: &Path) -> Result<(String, String), DeployError> {
    let bin_hash = crate::host::file_sha256(binary)?;
    // A target with more to its image than tare's binary (the tool
    // target's programs) adds its key; the others' tags stay as they were.
    let mut recipe = format!("{RECIPE}\n{bin_hash}\n{}", binary.display());
    let key = target.kind.get().image_key(target);
    if !key.is_empty() {
        recipe.push_str(&format!("\n{key}"));
    }
    let h = sha256_hex(recipe.as_bytes());
    Ok((format!("tare/{}:{}", target.image, &h[..16]), bin_hash))
}

/// Builds the image for `kind` from `binary` unless its tag exists (or `force`).
/// A target that runs another's binary shares that one's image
/// (`Target::image`).
pub fn build(target: &Target, binary: &Path, force: bool) -> Result<ImageInfo, DeployError> {
    let image = target.image.as_str();
    let (tag, binary_sha256) = tag_for(target, binary)?;
    let failed = |reason: String| DeployError::ImageBuild {
        target: image.into(),
        reason,
    };
    if !force && exists(&tag)? {
        return Ok(ImageInfo {
            tag,
            binary: binary.to_path_buf(),
            binary_sha256,
            files: 0,
            context_bytes: 0,
            built: false,
        });
    }
    let Recipe {
        files,
        context,
        changes,
    } = recipe(target, binary, &binary_sha256).map_err(&failed)?;
    let context_bytes = context.len() as u64;
    let (repo, version) = tag.split_once(':').expect("tags are repo:version");
    // `docker import -`: the tar in the body, the labels as changes.
    let mut path = format!(
        "/images/create?fromSrc=-&repo={}&tag={}",
        query_escape(repo),
        query_escape(version)
    );
    for change in &changes {
        path.push_str(&format!("&changes={}", query_escape(change)));
    }
    let progress = connect()?
        .send_tar("POST", &path, &context, Duration::from_secs(600))
        .map_err(|e| failed(e.to_string()))?;
    if let Some(error) = stream_error(&progress) {
        return Err(failed(error));
    }
    if !exists(&tag)? {
        return Err(failed(
            "the engine reported success but the tag is missing".into(),
        ));
    }
    prune_superseded(image, &tag);
    Ok(ImageInfo {
        tag,
        binary: binary.to_path_buf(),
        binary_sha256,
        files: files.len(),
        context_bytes,
        built: true,
    })
}

/// What an image is made of: the files, their root filesystem tar, and
/// the import changes (tare's labels). Podman imports the same recipe under
/// the same tag (`placements::podman`), so both stores run one image.
pub(crate) struct Recipe {
    pub files: BTreeSet<PathBuf>,
    pub context: Vec<u8>,
    /// Dockerfile instructions (`LABEL k="v"`) applied on import.
    pub changes: Vec<String>,
}

pub(crate) fn recipe(
    target: &Target,
    binary: &Path,
    binary_sha256: &str,
) -> Result<Recipe, String> {
    let image = target.image.as_str();
    let files = closure(target, binary)?;
    let context = rootfs_tar(&files).map_err(|e| format!("root filesystem: {e}"))?;
    let labels = [
        (LABEL, "1".to_string()),
        ("tare.target", image.to_string()),
        ("tare.binary", binary.display().to_string()),
        ("tare.binary_sha256", binary_sha256.to_string()),
    ];
    let changes = labels
        .iter()
        .map(|(k, v)| format!("LABEL {k}={}", dockerfile_quote(v)))
        .collect();
    Ok(Recipe {
        files,
        context,
        changes,
    })
}

/// Removes this target's older tare images (a rebuilt binary supersedes
/// them: every `cargo build` of tare makes a new tare-serve binary). Images a
/// container still uses stay: removal without force fails for them.
fn prune_superseded(image: &str, keep: &str) {
    let Ok(d) = connect() else { return };
    let filter = label_filter(&format!("tare.target={image}"));
    let Ok(images) = d.get(&format!("/images/json?filters={filter}")) else {
        return;
    };
    for img in images.as_array().into_iter().flatten() {
        let tags = img.get("RepoTags").and_then(|t| t.as_array());
        if tags.is_some_and(|t| t.iter().any(|t| t.as_str() == Some(keep))) {
            continue;
        }
        if let Some(id) = img.get("Id").and_then(|i| i.as_str()) {
            let _ = d.delete(&format!("/images/{}?force=false", query_escape(id)));
        }
    }
}

pub(crate) fn exists(tag: &str) -> Result<bool, DeployError> {
    match connect()?.get(&format!("/images/{tag}/json")) {
        Ok(_) => Ok(true),
        Err(e) if e.is_not_found() => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Every host file the image needs, by absolute path.
pub(crate) fn closure(target: &Target, binary: &Path) -> Result<BTreeSet<PathBuf>, String> {
    let mut files = BTreeSet::new();
    files.insert(binary.to_path_buf());
    files.extend(shared_libraries(binary)?);
    for f in [
        "/etc/passwd",
        "/etc/group",
        "/etc/nsswitch.conf",
        "/etc/ld.so.cache",
    ] {
        if Path::new(f).exists() {
            files.insert(f.into());
        }
    }
    files.extend(target.kind.get().image_files(target, binary)?);
    Ok(files)
}

/// A Dockerfile string literal: the engine parses import changes as
/// Dockerfile instructions, so a path with a space stays one value.
pub(crate) fn dockerfile_quote(v: &str) -> String {
    format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The image's root filesystem: each file at its host path (symlinks
/// followed: the image gets the file under the name the loader asks for).
fn rootfs_tar(files: &BTreeSet<PathBuf>) -> std::io::Result<Vec<u8>> {
    let mut b = tar::Builder::new(Vec::new());
    // Directories servers expect to exist (tmp is world-writable, sticky).
    for (dir, mode) in [
        ("tmp", 0o1777),
        ("run", 0o755),
        ("var/log/nginx", 0o755),
        ("var/lib/nginx", 0o755),
    ] {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_mode(mode);
        h.set_size(0);
        h.set_cksum();
        b.append_data(&mut h, format!("{dir}/"), std::io::empty())?;
    }
    for f in files {
        let rel = f.strip_prefix("/").unwrap_or(f);
        super::api::append_regular(&mut b, rel, f)?;
    }
    b.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rootfs_has_the_files_at_their_host_paths() {
        let files = BTreeSet::from([PathBuf::from("/etc/passwd")]);
        let tar = rootfs_tar(&files).unwrap();
        let mut a = tar::Archive::new(&tar[..]);
        let names: Vec<String> = a
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        assert!(names.contains(&"etc/passwd".to_string()), "{names:?}");
        assert!(names.contains(&"tmp/".to_string()), "{names:?}");
    }

    /// Regression: a clean clone built a byte-identical tare at another path,
    /// reused the first checkout's image, and the container found no binary.
    #[test]
    fn the_same_binary_at_two_paths_gets_two_tags() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        for p in [&a, &b] {
            std::fs::create_dir(p).unwrap();
            std::fs::write(p.join("tare"), b"same bytes").unwrap();
        }
        let target = crate::TargetKind::default_target().target();
        let ta = tag_for(&target, &a.join("tare")).unwrap();
        let tb = tag_for(&target, &b.join("tare")).unwrap();
        assert_eq!(ta.1, tb.1, "same content hash");
        assert_ne!(ta.0, tb.0);
        assert_eq!(ta, tag_for(&target, &a.join("tare")).unwrap());
    }

    #[test]
    fn label_values_are_quoted_for_the_dockerfile_parser() {
        assert_eq!(dockerfile_quote("/usr/sbin/nginx"), "\"/usr/sbin/nginx\"");
        assert_eq!(dockerfile_quote("a b\"c"), "\"a b\\\"c\"");
    }
}
