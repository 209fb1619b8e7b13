//! The Docker Engine API, behind a synchronous face (`api`).
//!
//! Each call connects to the engine's socket, asks, and closes: cheap next
//! to a container start, and safe to call from any thread, including an
//! interrupt handler while another call is under way.

pub(crate) mod api;
pub(crate) mod container;
pub(crate) mod image;

use api::{label_filter, query_escape, Docker};
use serde_json::Value;

use crate::error::DeployError;

/// Label on everything tare creates in Docker (containers, volumes, images).
pub(crate) const LABEL: &str = "tare";
/// Label naming the run that created a container or volume.
pub(crate) const LABEL_RUN: &str = "tare.run";
/// Label naming the owning process ("pid:starttime"): `tare cleanup` removes
/// only what belongs to processes that no longer run.
pub(crate) const LABEL_OWNER: &str = "tare.owner";

/// A connected client, or why Docker is not reachable.
pub(crate) fn connect() -> Result<Docker, DeployError> {
    Docker::connect().map_err(|reason| DeployError::DockerUnavailable { reason })
}

fn text(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The engine's version if Docker is reachable.
pub fn engine_version() -> Result<String, DeployError> {
    let v = connect()?.get("/version")?;
    Ok(format!(
        "{} (API {})",
        text(&v, "Version"),
        text(&v, "ApiVersion")
    ))
}

/// The engine's storage driver (`overlay2`, `fuse-overlayfs`, `vfs`...):
/// what a container's own filesystem (the `image` storage) runs on.
pub(crate) fn storage_driver() -> Result<String, DeployError> {
    Ok(text(&connect()?.get("/info")?, "Driver"))
}

pub(crate) fn remove_container(id: &str) -> Result<(), DeployError> {
    let d = connect()?;
    let path = format!("/containers/{}?force=true&v=true", query_escape(id));
    match d.delete(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.is_not_found() => Ok(()),
        // A killed run may have asked for the removal already; the engine
        // finishes it on its own. Wait for it (bounded) so "removed" is true.
        Err(api::ApiError::Status {
            status: 409,
            message,
        }) if message.contains("already in progress") => {
            let inspect = format!("/containers/{}/json", query_escape(id));
            for _ in 0..300 {
                std::thread::sleep(std::time::Duration::from_millis(100));
                if d.get(&inspect).is_err_and(|e| e.is_not_found()) {
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
    match connect()?.delete(&format!("/volumes/{}?force=true", query_escape(name))) {
        Ok(()) => Ok(()),
        Err(e) if e.is_not_found() => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// A tare container or volume found by label.
#[derive(Debug, Clone)]
pub(crate) struct Labelled {
    pub id: String,
    pub name: String,
    pub owner: Option<String>,
}

fn owner_label(v: &Value) -> Option<String> {
    v.get("Labels")
        .and_then(|l| l.get(LABEL_OWNER))
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn array(v: Value) -> Vec<Value> {
    match v {
        Value::Array(items) => items,
        _ => Vec::new(),
    }
}

/// Containers and volumes tare created (they carry the `tare.owner` label).
pub(crate) fn list_labelled() -> Result<(Vec<Labelled>, Vec<Labelled>), DeployError> {
    let d = connect()?;
    // By the owner label, which only `deploy` sets when it creates a
    // container or volume: a user's container made from a tare image
    // inherits the image's `tare` label but is not tare's to remove.
    let filter = label_filter(LABEL_OWNER);
    let containers = array(d.get(&format!("/containers/json?all=true&filters={filter}"))?)
        .into_iter()
        .map(|c| Labelled {
            id: text(&c, "Id"),
            name: c
                .pointer("/Names/0")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .trim_start_matches('/')
                .to_string(),
            owner: owner_label(&c),
        })
        .collect();
    let volumes = d.get(&format!("/volumes?filters={filter}"))?;
    let volumes = array(volumes.get("Volumes").cloned().unwrap_or_default())
        .into_iter()
        .map(|v| Labelled {
            id: text(&v, "Name"),
            name: text(&v, "Name"),
            owner: owner_label(&v),
        })
        .collect();
    Ok((containers, volumes))
}

/// Images tare built from a user's Dockerfile for one deployment (the only
/// images with the `tare.owner` label; the images `tare image build`
/// makes are a cache and carry none).
pub(crate) fn list_built_images() -> Result<Vec<Labelled>, DeployError> {
    let d = connect()?;
    let images = d.get(&format!(
        "/images/json?filters={}",
        label_filter(LABEL_OWNER)
    ))?;
    Ok(array(images)
        .into_iter()
        .map(|i| Labelled {
            name: i
                .pointer("/RepoTags/0")
                .and_then(Value::as_str)
                .map_or_else(|| text(&i, "Id"), str::to_string),
            owner: owner_label(&i),
            id: text(&i, "Id"),
        })
        .collect())
}
