//! tare-monitor's integration tests: one test binary, one module per area
//! (docs/testing.md). A new area is `tests/it/<area>.rs` and a `mod <area>;`
//! line here; one binary links once, where one per file linked each.

// Shared helpers, kept beside `it/` (tests/<helper>/mod.rs).
#[path = "../support/mod.rs"]
mod support;

mod access_log;
mod docker;
mod fuzz_smoke;
mod generator_bound;
mod generator_program;
mod profile;
mod where_it_ran;
