//! Targets and placements: starting, checking and stopping the server under
//! test, and saying how placements differ (the fairness check).
//!
//! - `spec`: what to deploy ([`DeploySpec`]: a [`TargetSpec`], a
//!   [`PlacementKind`]), and `options`: the settings it varies
//!   ([`Transport`], [`Storage`], [`ContainerOptions`]…).
//! - `targets`: the server under test as a value ([`Target`]), made by a
//!   recipe (one file each, in one registry: [`TargetKind`] names an
//!   entry), or from a user's command line ([`Service`]).
//! - `placements`: one file per placement behind the `Placement` trait, in
//!   one registry ([`PlacementKind`]), on six mechanisms: plain processes
//!   (and a chroot, for an image's files natively), tare's namespace
//!   [`lab`], [`docker`], rootful Podman, rootless Podman (a user of its
//!   own), and QEMU guests ([`vm`]).
//! - [`deploy`] / [`Deployment`]: start, health-check, describe, stop.
//! - [`lab`]: namespaces, veth, bridge, nftables NAT, netem (no Docker).
//! - [`vm`]: QEMU guests from the host's kernel and an initramfs tare builds.
//! - [`docker`]: containers and images through the Docker Engine API (its Unix socket).
//! - [`facts`]: what a running deployment is (plain data), measured by
//!   `measure`, and [`fairness`] between cells.
//! - `teardown`: what to undo, and the registry an interrupt handler empties.
//! - `host`: what this host has (a program on PATH, its version, a file's
//!   sha256, an ELF file's shared libraries).
//! - [`cleanup()`]: removing what a killed run left, by label and prefix.
//! - [`doctor()`]: what this machine can run and what would make it noisy.

// Functions a reader can hold: none over 100 lines (clippy.toml) outside tests.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod cgroup;
pub mod cleanup;
mod deployment;
pub mod docker;
pub mod doctor;
mod error;
pub mod facts;
mod fairness;
#[doc(hidden)]
pub mod fuzzing;
mod health;
mod helpers;
mod host;
pub mod lab;
mod liveness;
mod measure;
mod options;
mod owner;
mod placements;
mod procfs;
mod registry;
mod spec;
mod targets;
mod teardown;
pub mod vm;

pub use cleanup::cleanup;
pub use deployment::{deploy, image_runs_in, Deployment, Watch};
pub use docker::image::{build as build_image, ImageInfo};
pub use doctor::{doctor, DoctorReport};
pub use error::DeployError;
pub use facts::{BackendFacts, Facts, Finding, GuestDisk, GuestFacts, HelperFacts, ProcessFacts};
pub use fairness::fairness;
pub use options::{AccessLog, ContainerOptions, Storage, Transport, VmOptions, VmPin};
pub use owner::CleanupReport;
pub use placements::{Scope, SpecOption};
pub use registry::ParseNameError;
pub use spec::{DeploySpec, PlacementKind};
pub use targets::{
    app_path, ExportCache, ExportedRoot, Oci, OciConfig, OciSource, Placeholder, Protocol, Ready,
    Service, ServiceError, Target, TargetKind, TargetSpec, Variant,
};
pub use teardown::teardown_all;

/// The host binary a target would run (and `tare image build` would copy).
pub fn target_binary(spec: &TargetSpec) -> Result<std::path::PathBuf, DeployError> {
    targets::binary(&spec.target)
}

/// Whether this machine can deploy `spec`, without deploying it: its
/// placement's mechanism, the options it asks for, the target's binary
/// (a user's image: the Docker engine that holds it).
/// `Err` is one line saying what is missing.
pub fn check(spec: &DeploySpec) -> Result<(), String> {
    spec.placement.available()?;
    if spec.netem.is_some() {
        lab::delay_available()?;
    }
    if spec.target.target.oci.is_some() {
        // Every placement reads, builds or exports a user's image with Docker.
        docker::engine_version().map_err(|e| format!("kind = \"image\" needs Docker: {e}"))?;
    } else {
        targets::binary(&spec.target.target).map_err(|e| e.to_string())?;
    }
    if let Some(c) = &spec.target.target.companion {
        targets::binary(c).map_err(|e| format!("{}: {e}", c.kind))?;
    }
    Ok(())
}

/// nginx-proxy: checks that the config file at `path` is a reverse proxy
/// tare can point at its backend (parses, has a `proxy_pass`, every backend
/// address can be rewritten), without deploying anything. The error is the
/// one `deploy` would give.
pub fn check_proxy_config(path: &std::path::Path) -> Result<(), DeployError> {
    targets::nginx_proxy::check(&path.display().to_string())
}
