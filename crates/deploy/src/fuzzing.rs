//! Thin wrappers over the parsers of what tools print and users write,
//! for the cargo-fuzz targets `podman_output`, `service_command`,
//! `image_config` and `docker_reply` (crates/deploy/fuzz, docs/fuzzing.md); hidden, so the
//! parsers stay private.

use crate::placements::{podman, podman_rootless, podman_user};

/// Reads `data` as every Podman-related output tare parses: `podman ps`,
/// `volume ls`, `images` and `info` JSON, `/etc/subuid` text (and the ids
/// mapped through its ranges), a pasta command line.
pub fn podman_output(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for key in ["Names", "Name"] {
        for l in podman::labelled(&text, key) {
            let _ = (l.id.len(), l.name.len(), l.owner);
        }
    }
    let _ = podman_rootless::images(&text);
    if let Ok(info) = serde_json::from_str::<serde_json::Value>(&text) {
        let _ = (
            podman::storage_driver(&info),
            podman::network_backend(&info),
        );
    }
    let ranges = podman_user::ranges(&text, "tare-rootless", 1000);
    for id in [0, 1, 65535, 65536, u32::MAX] {
        let _ = podman_user::host_id(1000, &ranges, id);
    }
    let args: Vec<String> = data
        .split(|&b| b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let _ = podman_rootless::pasta_deployment(&args);
}

/// Reads `text` as a service's command-line word: the placeholders it
/// names (or its mistake), and, when it is valid, the word a deployment
/// fills in.
pub fn service_command(text: &str) {
    if crate::targets::Service::placeholders(text).is_ok() {
        let _ = crate::targets::command::fill_for_fuzzing(text);
    }
}

/// Reads `json` as `docker image inspect` output: an image's config, or
/// why it cannot run.
pub fn image_config(json: &str) {
    if let Ok(c) = crate::targets::image::parse_inspect("fuzz:1", json) {
        let _ = (c.to_string(), c.argv.len(), c.ports.len());
    }
}

/// Reads `data` as the Docker engine's answer to a call: the HTTP head and
/// body (chunked or sized), the error message of a failed call, a log's
/// frames and an import's progress stream.
pub fn docker_reply(data: &[u8]) {
    use crate::docker::api;
    if let Ok((status, body)) = api::parse_reply(data) {
        let _ = (status, api::demux_log(&body), api::stream_error(&body));
        let _ = api::ApiError::Status {
            status,
            message: api::error_message(&body),
        }
        .to_string();
    }
    let _ = api::demux_log(data);
}
