//! Between trials, as seed 002 did between its runs (docs/studies.md):
//! `FLUSHALL`, so no trial inherits another's keys, lists or sets; then,
//! when a workload reads keys (GET), every key it may read is stored, so
//! each GET finds a value of `-d` bytes as the study's GET did (its
//! `-t set,get` ran SET first, 500,000 times over 100,000 keys).
//!
//! Keys are stored with `MSET`, up to [`BATCH_KEYS`] per command, through
//! the blocking [`Session`]: 100,000 keys of 50 bytes are 100 round trips.
//! When a workload is an LRANGE test, the list it reads is filled too
//! ([`LIST_ELEMENTS`] elements), as redis-benchmark's `LPUSH (needed to
//! benchmark LRANGE)` fills it before its LRANGE tests.

use std::time::Duration;

use tare_engine::Endpoint;

use crate::command::{Test, Workload};
use crate::error::RedisError;
use crate::resp::Value;
use crate::session::Session;

/// Most keys one `MSET` stores.
const BATCH_KEYS: u64 = 1000;
/// Elements of `mylist` before an LRANGE trial: the longest LRANGE test
/// (LRANGE_600) reads all it asks for, as after redis-benchmark's LPUSH.
pub(crate) const LIST_ELEMENTS: usize = 600;
/// Most bytes of values one `MSET` carries.
const BATCH_BYTES: u64 = 4 << 20;
/// Most bytes of values a preparation stores: more is not a key-value
/// benchmark's working set but a memory test, and would take minutes.
pub(crate) const MAX_STORED_BYTES: u64 = 2 << 30;

/// What a run sends, as far as preparing the server is concerned.
#[derive(Clone, Debug)]
pub struct Preparation<'a> {
    pub workloads: &'a [Workload],
    pub data_size: usize,
    pub keyspace: Option<u64>,
}

impl Preparation<'_> {
    /// The keys GET reads: `key:` and 12 digits below the keyspace, or
    /// the placeholder itself without one (as [`crate::command::Template`]
    /// writes them).
    fn keys(&self) -> u64 {
        if self.workloads.contains(&Workload::Test(Test::Get)) {
            self.keyspace.unwrap_or(1)
        } else {
            0
        }
    }

    /// Whether the keys to store fit [`MAX_STORED_BYTES`].
    pub fn check(&self) -> Result<(), String> {
        let bytes = self.keys().saturating_mul(self.data_size as u64);
        if bytes > MAX_STORED_BYTES {
            return Err(format!(
                "GET would need {} keys of {} bytes stored before each trial ({:.1} GiB, more than {} GiB): use a smaller keyspace or data_size",
                self.keys(),
                self.data_size,
                bytes as f64 / (1u64 << 30) as f64,
                MAX_STORED_BYTES >> 30
            ));
        }
        Ok(())
    }

    /// Empties the server (`FLUSHALL`) and stores the keys GET reads;
    /// returns what was done, as the trial records it.
    pub fn apply(&self, endpoint: &Endpoint, timeout: Duration) -> Result<String, RedisError> {
        self.check().map_err(RedisError::Config)?;
        let mut s = Session::connect(endpoint, timeout, None, None, 0)?;
        expect_ok(s.command(&["FLUSHALL"])?, "FLUSHALL")?;
        let mut done = "FLUSHALL".to_string();
        if self.reads_the_list() {
            self.fill_list(&mut s)?;
            done.push_str(&format!(
                "; LPUSH {LIST_ELEMENTS} elements of {} bytes for lrange",
                self.data_size
            ));
        }
        let keys = self.keys();
        if keys == 0 {
            return Ok(done);
        }
        let value = "x".repeat(self.data_size);
        let per = BATCH_KEYS
            .min(BATCH_BYTES / (self.data_size as u64 + 16))
            .max(1);
        let mut names: Vec<String> = Vec::with_capacity(per as usize);
        let mut from = 0;
        while from < keys {
            let to = (from + per).min(keys);
            names.clear();
            names.extend((from..to).map(|n| match self.keyspace {
                Some(_) => format!("key:{n:012}"),
                None => "key:__rand_int__".to_string(),
            }));
            let mut args: Vec<&str> = Vec::with_capacity(1 + 2 * names.len());
            args.push("MSET");
            for n in &names {
                args.push(n);
                args.push(&value);
            }
            expect_ok(s.command(&args)?, "MSET")?;
            from = to;
        }
        Ok(format!(
            "{done}; MSET {keys} key{} of {} bytes for get",
            if keys == 1 { "" } else { "s" },
            self.data_size
        ))
    }
}

impl Preparation<'_> {
    fn reads_the_list(&self) -> bool {
        self.workloads
            .iter()
            .any(|w| matches!(w, Workload::Test(t) if t.is_lrange()))
    }

    /// `mylist` with [`LIST_ELEMENTS`] values of `-d` bytes, in batches.
    fn fill_list(&self, s: &mut Session) -> Result<(), RedisError> {
        let value = "x".repeat(self.data_size);
        let per = (BATCH_BYTES as usize / (self.data_size + 16)).clamp(1, LIST_ELEMENTS);
        let mut left = LIST_ELEMENTS;
        while left > 0 {
            let n = per.min(left);
            let mut args: Vec<&str> = vec!["LPUSH", "mylist"];
            args.extend(std::iter::repeat_n(value.as_str(), n));
            expect_ok(s.command(&args)?, "LPUSH")?;
            left -= n;
        }
        Ok(())
    }
}

fn expect_ok(v: Value, what: &str) -> Result<(), RedisError> {
    match v {
        Value::Error(e) => Err(RedisError::Config(format!(
            "{what} before the trial failed: {e}"
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_get_needs_keys_and_too_many_bytes_are_refused() {
        let get = [Workload::Test(Test::Get)];
        let set = [Workload::Test(Test::Set)];
        let p = |workloads, data_size, keyspace| Preparation {
            workloads,
            data_size,
            keyspace,
        };
        assert_eq!(p(&get, 50, Some(100_000)).keys(), 100_000);
        assert_eq!(p(&get, 50, None).keys(), 1);
        assert_eq!(p(&set, 50, Some(100_000)).keys(), 0);
        assert!(p(&get, 50, Some(100_000)).check().is_ok());
        let e = p(&get, 64 << 20, Some(100_000)).check().unwrap_err();
        assert!(e.contains("more than 2 GiB"), "{e}");
        assert!(p(&set, 64 << 20, Some(100_000)).check().is_ok());
    }
}
