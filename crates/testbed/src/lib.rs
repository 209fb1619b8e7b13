//! Servers for integration tests, shared by the crates whose tests need a
//! real one (`tare-http`'s exact counts, `tare-monitor`'s attribution); a
//! dev-dependency only.
//!
//! - [`Nginx`]: a throw-away native nginx on a free loopback port.
//! - [`RedisServer`]: a throw-away native redis-server, persistence off.
//! - [`MariaDb`]: a throw-away native MariaDB with sysbench's database and user.
//! - [`machine::resources`]: what a test could leave behind, to compare
//!   before and after.
//! - [`rootless`]: users for rootless Podman, and what they leave.
//! - [`ssh_hosts::SshHosts`]: namespaces standing for other machines, each
//!   running sshd (remote-host tests).
//! - [`io_modes`]: the ways a worker can wait, to run a test under each.
//! - [`fuzz::run`]: a crate's cargo-fuzz target, run briefly by its tests.
//! - [`alone::in_child`]: a test run in a process of its own.
//! - [`free_port`]: a loopback port that was free a moment ago.
//! - [`assert_success`]: a command that exited 0, or a panic with its stderr.

// Functions a reader can hold: none over 100 lines (clippy.toml) outside tests.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod alone;
mod daemon;
pub mod fuzz;
pub mod machine;
mod mariadb;
mod nginx;
mod redis;
pub mod rootless;
pub mod ssh_hosts;

pub use mariadb::MariaDb;
pub use nginx::{Nginx, NginxOptions};
pub use redis::RedisServer;

/// The ways an engine's workers can wait that a test should cover on this
/// machine: epoll always, io_uring when the kernel allows it. With
/// `TARE_REQUIRE_URING=1` (the test script sets it where io_uring is not
/// disabled) a missing io_uring fails the test instead of narrowing it.
pub fn io_modes() -> Vec<tare_engine::IoMode> {
    let mut modes = vec![tare_engine::IoMode::Epoll];
    if tare_engine::Ring::available() {
        modes.push(tare_engine::IoMode::Uring);
    } else {
        assert!(
            std::env::var_os("TARE_REQUIRE_URING").is_none_or(|v| v != "1"),
            "TARE_REQUIRE_URING=1 but this kernel refuses io_uring"
        );
        eprintln!("io_uring not available here: testing epoll only");
    }
    modes
}

/// A loopback TCP port that was free when asked (bound, then let go): a
/// server a test starts can take it, and a client finds it closed until
/// then.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Asserts that the command that gave `out` exited 0, showing its stderr
/// otherwise.
pub fn assert_success(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
