//! tare-cli's integration tests: one test binary, one module per area
//! (docs/testing.md). A new area is `tests/it/<area>.rs` and a `mod <area>;`
//! line here; one binary links once, where one per file linked each.

// Shared helpers, kept beside `it/` (tests/<helper>/mod.rs).
#[path = "../../../deploy/tests/guests/mod.rs"]
mod guests;
#[path = "../../../pg/tests/pgserver/mod.rs"]
mod pgserver;
#[path = "../support/mod.rs"]
mod support;

mod cleanup;
mod debug_mode;
mod examples;
mod external;
mod faults;
mod http_cli;
mod image;
mod messages;
mod mysql_cli;
mod net_cli;
mod peer_redis_benchmark;
mod peer_sysbench;
mod pg_cli;
mod pgbench_tap;
mod podman;
mod proxy;
mod readme;
mod redis_cli;
mod remote;
mod remote_docker;
mod service;
mod starters;
mod tool;
mod tune_proxy;
mod vm;
