//! tare-deploy's integration tests: one test binary, one module per area
//! (docs/testing.md). A new area is `tests/it/<area>.rs` and a `mod <area>;`
//! line here; one binary links once, where one per file linked each.

// Shared helpers, kept beside `it/` (tests/<helper>/mod.rs).
#[path = "../guests/mod.rs"]
mod guests;
#[path = "../support/mod.rs"]
mod support;

mod docker;
mod fuzz_smoke;
mod image;
mod lab;
mod lab_placements;
mod mariadb;
mod native;
mod no_docker;
mod podman;
mod podman_rootless;
mod redis;
mod service;
mod vm;
