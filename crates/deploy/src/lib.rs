//! Targets (nginx, postgres, tare-serve) and placements (native, docker-*,
//! lab-*): starting, checking and stopping the server under test, and saying
//! how placements differ (the fairness check).
//!
//! - [`spec`]: what to deploy ([`DeploySpec`], [`TargetSpec`], [`PlacementKind`]…).
//! - [`deploy`] / [`Deployment`]: start, health-check, describe, stop.
//! - `targets`: nginx config variants, the postgres throw-away cluster, tare
//!   serve, nginx as a reverse proxy (`targets::proxy`).
//! - `backend`: nginx-proxy's `tare serve` backend, beside nginx in every placement.
//! - `placement`: a server as a plain process (native, lab namespaces).
//! - [`docker`]: containers and images through the Docker Engine API (bollard).
//! - [`lab`]: namespaces, veth, bridge, nftables NAT, netem (no Docker).
//! - [`facts`]: what a running deployment is, and [`fairness`] between cells.
//! - `teardown`: what to undo, and the registry an interrupt handler empties.
//! - [`cleanup`]: removing what a killed run left, by label and prefix.
//! - [`doctor`]: what this machine can run and what would make it noisy.

mod backend;
mod cgroup;
pub mod cleanup;
mod deployment;
pub mod docker;
pub mod doctor;
mod error;
pub mod facts;
mod health;
pub mod lab;
mod placement;
mod procfs;
pub mod spec;
mod targets;
mod teardown;

pub use cleanup::{cleanup, CleanupReport};
pub use deployment::{deploy, Deployment};
pub use docker::image::{build as build_image, ImageInfo};
pub use doctor::{doctor, DoctorReport};
pub use error::DeployError;
pub use facts::{fairness, BackendFacts, Facts, Finding};
pub use spec::{
    AccessLog, ContainerOptions, DeploySpec, ParseNameError, PlacementKind, Storage, TargetKind,
    TargetSpec, Transport,
};
pub use teardown::{install_interrupt_handler, teardown_all};

/// The host binary a target would run (and `tare image build` would copy).
pub fn target_binary(spec: &TargetSpec) -> Result<std::path::PathBuf, DeployError> {
    targets::binary(spec)
}

/// nginx-proxy: checks that the config file at `path` is a reverse proxy
/// tare can point at its backend (parses, has a `proxy_pass`, every backend
/// address can be rewritten), without deploying anything. The error is the
/// one `deploy` would give.
pub fn check_proxy_config(path: &std::path::Path) -> Result<(), DeployError> {
    targets::proxy::check(&path.display().to_string())
}
