//! Servers for integration tests, shared by the crates whose tests need a
//! real one (`tare-http`'s exact counts, `tare-monitor`'s attribution); a
//! dev-dependency only.
//!
//! - [`Nginx`]: a throw-away native nginx on a free loopback port.
//! - [`machine::resources`]: what a test could leave behind, to compare
//!   before and after.

pub mod machine;
mod nginx;

pub use nginx::{Nginx, NginxOptions};
