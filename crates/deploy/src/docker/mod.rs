//! The Docker Engine API (bollard), behind a synchronous face.
//!
//! bollard is async; the library's API is not. Each call builds a
//! current-thread tokio runtime and a client, runs one operation set, and
//! drops both: cheap next to a container start, and safe to call from any
//! thread, including an interrupt handler while another runtime is blocked.

pub(crate) mod container;
pub(crate) mod image;

use std::collections::HashMap;
use std::future::Future;

use bollard::container::{ListContainersOptions, RemoveContainerOptions};
use bollard::volume::{ListVolumesOptions, RemoveVolumeOptions};
use bollard::Docker;

use crate::error::DeployError;

/// Label on everything tare creates in Docker (containers, volumes, images).
pub(crate) const LABEL: &str = "tare";
/// Label naming the run that created a container or volume.
pub(crate) const LABEL_RUN: &str = "tare.run";
/// Label naming the owning process ("pid:starttime"): `tare cleanup` removes
/// only what belongs to processes that no longer run.
pub(crate) const LABEL_OWNER: &str = "tare.owner";

/// Runs `f` with a connected client on a fresh current-thread runtime.
pub(crate) fn with<T, Fut>(f: impl FnOnce(Docker) -> Fut) -> Result<T, DeployError>
where
    Fut: Future<Output = Result<T, DeployError>>,
{
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| DeployError::io("starting the Docker client runtime", e))?;
    rt.block_on(async move {
        let docker = connect().await?;
        f(docker).await
    })
}

async fn connect() -> Result<Docker, DeployError> {
    let unavailable = |e: bollard::errors::Error| DeployError::DockerUnavailable {
        reason: e.to_string(),
    };
    let docker = Docker::connect_with_local_defaults().map_err(unavailable)?;
    // The engine here may speak an older API than bollard's default (Docker
    // 20.10 speaks 1.41): agree on the highest both know.
    let docker = docker.negotiate_version().await.map_err(unavailable)?;
    docker.ping().await.map_err(unavailable)?;
    Ok(docker)
}

/// The engine's version if Docker is reachable.
pub fn engine_version() -> Result<String, DeployError> {
    with(|d| async move {
        let v = d.version().await?;
        Ok(format!(
            "{} (API {})",
            v.version.unwrap_or_default(),
            v.api_version.unwrap_or_default()
        ))
    })
}

/// The engine's storage driver (`overlay2`, `fuse-overlayfs`, `vfs`...):
/// what a container's own filesystem (the `image` storage) runs on.
pub(crate) fn storage_driver() -> Result<String, DeployError> {
    with(|d| async move { Ok(d.info().await?.driver.unwrap_or_default()) })
}

pub(crate) fn remove_container(id: &str) -> Result<(), DeployError> {
    let id = id.to_string();
    with(|d| async move { remove_container_async(&d, &id).await })
}

pub(crate) async fn remove_container_async(d: &Docker, id: &str) -> Result<(), DeployError> {
    let opts = RemoveContainerOptions {
        force: true,
        v: true,
        ..Default::default()
    };
    match d.remove_container(id, Some(opts)).await {
        Ok(()) => Ok(()),
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        }) => Ok(()),
        // A killed run may have asked for the removal already; the engine
        // finishes it on its own. Wait for it (bounded) so "removed" is true.
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 409,
            message,
        }) if message.contains("already in progress") => {
            for _ in 0..300 {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                if let Err(bollard::errors::Error::DockerResponseServerError {
                    status_code: 404,
                    ..
                }) = d.inspect_container(id, None).await
                {
                    return Ok(());
                }
            }
            Err(DeployError::Docker(format!(
                "container {id}: removal did not finish in 30 s"
            )))
        }
        Err(e) => Err(e.into()),
    }
}

pub(crate) fn remove_volume(name: &str) -> Result<(), DeployError> {
    let name = name.to_string();
    with(|d| async move {
        match d
            .remove_volume(&name, Some(RemoveVolumeOptions { force: true }))
            .await
        {
            Ok(()) => Ok(()),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    })
}

/// A tare container or volume found by label.
#[derive(Debug, Clone)]
pub(crate) struct Labelled {
    pub id: String,
    pub name: String,
    pub owner: Option<String>,
}

/// Containers and volumes tare created (they carry the `tare.owner` label).
pub(crate) fn list_labelled() -> Result<(Vec<Labelled>, Vec<Labelled>), DeployError> {
    with(|d| async move {
        // By the owner label, which only `deploy` sets when it creates a
        // container or volume: a user's container made from a tare image
        // inherits the image's `tare` label but is not tare's to remove.
        let filter = HashMap::from([("label".to_string(), vec![LABEL_OWNER.to_string()])]);
        let containers = d
            .list_containers(Some(ListContainersOptions {
                all: true,
                filters: filter.clone(),
                ..Default::default()
            }))
            .await?
            .into_iter()
            .map(|c| Labelled {
                id: c.id.clone().unwrap_or_default(),
                name: c
                    .names
                    .and_then(|n| n.first().cloned())
                    .unwrap_or_default()
                    .trim_start_matches('/')
                    .to_string(),
                owner: c.labels.and_then(|l| l.get(LABEL_OWNER).cloned()),
            })
            .collect();
        let volumes = d
            .list_volumes(Some(ListVolumesOptions { filters: filter }))
            .await?
            .volumes
            .unwrap_or_default()
            .into_iter()
            .map(|v| Labelled {
                id: v.name.clone(),
                name: v.name,
                owner: v.labels.get(LABEL_OWNER).cloned(),
            })
            .collect();
        Ok((containers, volumes))
    })
}

/// Images tare built from a user's Dockerfile for one deployment (the only
/// images with the `tare.owner` label; the images `tare image build`
/// makes are a cache and carry none).
pub(crate) fn list_built_images() -> Result<Vec<Labelled>, DeployError> {
    with(|d| async move {
        let filters = HashMap::from([("label".to_string(), vec![LABEL_OWNER.to_string()])]);
        let images = d
            .list_images(Some(bollard::image::ListImagesOptions {
                filters,
                ..Default::default()
            }))
            .await?;
        Ok(images
            .into_iter()
            .map(|i| Labelled {
                name: i.repo_tags.first().cloned().unwrap_or_else(|| i.id.clone()),
                owner: i.labels.get(LABEL_OWNER).cloned(),
                id: i.id,
            })
            .collect())
    })
}

/// Appends `src` as a plain regular-file entry named `name`, keeping mode,
/// owner and mtime. Written by hand because the tar crate emits GNU sparse
/// entries for files with holes (linkers leave them), which the engine's
/// extractor rejects ("unhandled tar header type 83").
pub(crate) fn append_regular(
    b: &mut tar::Builder<Vec<u8>>,
    name: &std::path::Path,
    src: &std::path::Path,
) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let file = std::fs::File::open(src)?;
    let md = file.metadata()?;
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Regular);
    h.set_size(md.len());
    h.set_mode(md.mode() & 0o7777);
    h.set_uid(md.uid().into());
    h.set_gid(md.gid().into());
    h.set_mtime(md.mtime().max(0) as u64);
    b.append_data(&mut h, name, file)
}
