//! tare-http's integration tests: one test binary, one module per area
//! (docs/testing.md). A new area is `tests/it/<area>.rs` and a `mod <area>;`
//! line here; one binary links once, where one per file linked each.

mod coalesce;
mod connections;
mod faults;
mod fuzz_smoke;
mod mix;
mod nginx_count;
mod open_loop;
mod serve;
