//! [`RedisConfig`]: everything one `tare redis` run needs, whether it comes
//! from the command line (one run per `-t` test, as redis-benchmark runs
//! them one after another) or from the experiment runner.

use std::time::Duration;

use tare_engine::{Endpoint, Load};

use crate::command::{Test, Workload};

/// redis-benchmark's defaults (`-c 50 -n 100000 -d 3`).
pub const DEFAULT_CLIENTS: usize = 50;
pub const DEFAULT_REQUESTS: u64 = 100_000;
pub const DEFAULT_DATA_SIZE: usize = 3;
/// Largest `-d` accepted (redis-benchmark's own limit is 1 GiB; a value
/// this big is already far from a key-value benchmark).
pub const MAX_DATA_SIZE: usize = 64 * 1024 * 1024;
/// Most commands one connection keeps in flight (`-P`).
pub const MAX_PIPELINE: usize = 10_000;

#[derive(Clone, Debug)]
pub struct RedisConfig {
    pub endpoint: Endpoint,
    /// Connections (`-c`), threads (`--threads`), `-T` (`load.duration`),
    /// pacing... `load.timeout` bounds connecting and each command's reply.
    pub load: Load,
    /// What is sent: several workloads take turns on every connection
    /// (an experiment's `tests = ["get", "set"]`); the CLI runs one each.
    pub workloads: Vec<Workload>,
    /// `-n`: commands in total when `load.duration` is `None`.
    pub requests: u64,
    /// `-d`: bytes of each value.
    pub data_size: usize,
    /// `-r`: keys are drawn from `0..keyspace` (`None`: `__rand_int__` is
    /// sent as it is, one key).
    pub keyspace: Option<u64>,
    /// `-P`: commands each connection sends at once (closed loop) or keeps
    /// in flight at most (open loop).
    pub pipeline: usize,
    /// `-a`: `AUTH` on every connection; `--user`: with an ACL user.
    pub password: Option<String>,
    pub user: Option<String>,
    /// `--dbnum`: `SELECT` on every connection when not 0.
    pub dbnum: u32,
    /// Seed of the key generators; `None`: from the clock.
    pub seed: Option<u64>,
    /// A live one-line display on a terminal.
    pub live: bool,
    /// Allow load to a non-loopback address (ARCHITECTURE.md, "Principles").
    pub allow_remote: bool,
}

impl RedisConfig {
    /// A run against `endpoint` with redis-benchmark's defaults, bounded
    /// by a command count, and a bounded connect and reply (2 s).
    pub fn new(endpoint: Endpoint) -> RedisConfig {
        RedisConfig {
            endpoint,
            load: Load {
                threads: 1,
                connections: DEFAULT_CLIENTS,
                duration: None,
                ..Load::default()
            },
            workloads: vec![Workload::Test(Test::Get)],
            requests: DEFAULT_REQUESTS,
            data_size: DEFAULT_DATA_SIZE,
            keyspace: None,
            pipeline: 1,
            password: None,
            user: None,
            dbnum: 0,
            seed: None,
            live: false,
            allow_remote: false,
        }
    }

    /// The run's duration, or `None` when bounded by `-n`.
    pub fn duration(&self) -> Option<Duration> {
        self.load.duration
    }

    /// What the record's `target` says: `redis://HOST:PORT/DB` or
    /// `unix:PATH`.
    pub fn target(&self) -> String {
        match &self.endpoint {
            Endpoint::Tcp(a) => format!("redis://{a}/{}", self.dbnum),
            Endpoint::Unix(p) => format!("unix:{}?db={}", p.display(), self.dbnum),
        }
    }
}
