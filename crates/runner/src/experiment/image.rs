//! `[target] kind = "image"`: a user's own service as a local image or a
//! Dockerfile directory (docs/your-service.md, "Your image"), read into
//! the target value tare-deploy deploys ([`tare_deploy::Oci`] on a
//! `tare_deploy::Target`). Its command line, environment and working
//! directory are the image's own, so the keys that set them for a command
//! are refused (`files` with `build` are host files for its build
//! context); every cell must reach it over TCP.

use std::path::PathBuf;

use tare_deploy::{Oci, OciSource, Target};
use toml::Spanned;

use super::error::{ExperimentError, Locator};
use super::raw::{RawExperiment, RawTarget};
use super::{Cell, ConfigSource};

type Result<T> = std::result::Result<T, ExperimentError>;

/// `target` with the image `t` describes, when its recipe takes one
/// (`Target::oci` is set); a target that is not an image refuses `build`.
pub(super) fn apply(
    loc: &Locator,
    t: &RawTarget,
    target: Target,
    source: &ConfigSource,
) -> Result<Target> {
    if target.oci.is_none() {
        return match &t.build {
            Some(b) => Err(loc.error(
                b.span(),
                "target.build",
                "`build` is for kind = \"image\" (your own image from a Dockerfile)",
            )),
            None => Ok(target),
        };
    }
    // `files` with `build` are host files put into the build context.
    let files_span = t
        .files
        .as_ref()
        .filter(|_| t.build.is_none())
        .map(Spanned::span);
    let own: [(&str, Option<std::ops::Range<usize>>); 5] = [
        ("command", t.command.as_ref().map(Spanned::span)),
        ("env", t.env.as_ref().map(Spanned::span)),
        ("workdir", t.workdir.as_ref().map(Spanned::span)),
        ("files", files_span),
        ("binary", t.binary.as_ref().map(Spanned::span)),
    ];
    if let Some((key, Some(span))) = own.into_iter().find(|(_, s)| s.is_some()) {
        return Err(loc.error(
            span,
            &format!("target.{key}"),
            format!("an image runs its own entrypoint, env and workdir: leave `{key}` out (or use kind = \"command\")"),
        ));
    }
    let source = match (&t.image, &t.build) {
        (Some(i), None) if !i.get_ref().trim().is_empty() => {
            OciSource::Image(i.get_ref().clone())
        }
        (None, Some(b)) => OciSource::Build(context(loc, b, source)?),
        (Some(i), Some(_)) => {
            return Err(loc.error(
                i.span(),
                "target.image",
                "give one of `image` (a local image) or `build` (a Dockerfile directory), not both",
            ))
        }
        _ => {
            return Err(loc.error(
                t.kind.span(),
                "target.image",
                "kind = \"image\" needs `image = \"name:tag\"` (a local image) or `build = \"dir\"` (a Dockerfile directory)",
            ))
        }
    };
    let mut target = target;
    super::service::settings(loc, t, &mut target)?;
    target.oci = Some(Oci {
        source,
        path: super::service::path(loc, t)?,
        port: t.port.as_ref().map(|_| target.port),
        context_files: context_files(loc, t)?,
        config: None,
        exported: None,
    });
    Ok(target)
}

/// `files` with `build`: host files (absolute paths) the build context
/// gets at their host paths, so a `FROM scratch` Dockerfile can `COPY`
/// them without a copy made by hand.
fn context_files(loc: &Locator, t: &RawTarget) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for f in t.files.iter().flat_map(|f| f.get_ref()) {
        let path = PathBuf::from(f.get_ref());
        let bad = |m: String| loc.error(f.span(), "target.files", m);
        if !path.is_absolute() {
            return Err(bad(format!(
                "{}: with `build`, files are host files by their absolute paths (put your own in the build directory)",
                path.display()
            )));
        }
        if !path.is_file() {
            return Err(bad(format!("{}: no such file here", path.display())));
        }
        out.push(path);
    }
    Ok(out)
}

/// `build`: a directory with a Dockerfile, relative to this file.
fn context(loc: &Locator, b: &Spanned<String>, source: &ConfigSource) -> Result<PathBuf> {
    let ConfigSource::RelativeTo(base) = source else {
        // Read again from a run directory: the build ran when it was made.
        return Ok(PathBuf::from(b.get_ref()));
    };
    let dir = base.join(b.get_ref());
    if !dir.join("Dockerfile").is_file() {
        return Err(loc.error(
            b.span(),
            "target.build",
            format!("{}: no Dockerfile there", dir.display()),
        ));
    }
    Ok(dir)
}

/// Every cell reaches the image over TCP (every placement runs one).
pub(super) fn check_cells(
    loc: &Locator,
    raw: &RawExperiment,
    target: &Target,
    cells: &[Cell],
) -> Result<()> {
    if target.oci.is_none() {
        return Ok(());
    }
    for cell in cells {
        if let Err(m) = tare_deploy::image_runs_in(cell.setup.transport) {
            return Err(loc.error(
                raw.target.get_ref().kind.span(),
                "target.kind",
                format!("cell `{}`: {m}", cell.id),
            ));
        }
    }
    Ok(())
}
