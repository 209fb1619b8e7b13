//! tare-report's integration tests: one test binary, one module per area
//! (docs/testing.md). A new area is `tests/it/<area>.rs` and a `mod <area>;`
//! line here; one binary links once, where one per file linked each.

// Shared helpers, kept beside `it/` (tests/<helper>/mod.rs).
#[path = "../html_fixture/mod.rs"]
mod html_fixture;

mod cpu_html;
mod html_browser;
mod html_render;
mod noise;
mod text;
mod where_ran;
