//! The largest value of every setting a person types, one definition each,
//! checked wherever the setting is read: a command line's flag, an
//! experiment file's key, a job file. A value past its bound is a typo
//! (`1000000h`, a stray zero), not a test: refusing it when it is read beats
//! announcing 114 years per trial, or allocating a timeline for them.
//! docs/experiments.md ("Limits") lists them.

use std::time::Duration;

const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(24 * 3600);

/// Worker threads of one generator (`-t`, `[load] threads`).
pub const MAX_THREADS: usize = 1024;
/// Connections one run may open: beyond this a typo, not a test.
pub const MAX_CONNECTIONS: usize = 1_000_000;
/// Highest open-loop rate: a schedule this dense is already below the
/// clock's useful resolution per thread.
pub(crate) const MAX_RATE: f64 = 10_000_000.0;
/// The measured period of one run or trial (`-d`, `[load] duration`): a
/// day, which also bounds the per-second timeline a record keeps.
pub const MAX_DURATION: Duration = DAY;
/// A warm-up, a ramp, a request or connect timeout, a pause between
/// trials, one injected delay of `tare serve`: an hour each.
pub const MAX_WARMUP: Duration = HOUR;
pub(crate) const MAX_RAMP: Duration = HOUR;
pub const MAX_TIMEOUT: Duration = HOUR;
pub const MAX_COOLDOWN: Duration = HOUR;
pub const MAX_PAUSE: Duration = HOUR;
/// The wall time a `[trials] precision` run may take: a week.
pub const MAX_BUDGET: Duration = Duration::from_secs(7 * 24 * 3600);
/// How long the tool engine lets one job run (`--limit`, `[load.tool] limit`).
pub const MAX_TOOL_LIMIT: Duration = DAY;
/// How long past its duration an external load tool may run before it
/// is killed (`[load.external] grace`).
pub const MAX_EXTERNAL_GRACE: Duration = Duration::from_secs(600);
/// Trials per cell (`[trials] count` and `max`, `tare tune --trials`).
pub const MAX_TRIALS: u32 = 1000;
/// `tare tune --rounds`.
pub const MAX_TUNE_ROUNDS: usize = 20;
/// Cells one experiment may declare: a product that explodes (5 factors of
/// 5 levels = 3125 cells) is almost always a mistake, and would run for days.
pub const MAX_CELLS: usize = 512;
/// A request body (`tare http --body`, `[load.http] body`) or the response
/// body `tare serve` sends (`--body-size`): held in memory, sent whole.
pub const MAX_BODY: usize = 16 << 20;
/// A file tare reads whole: an experiment file, a config variant's file, a
/// tool job file.
pub const MAX_FILE: u64 = 16 << 20;
/// A netem delay injected on a lab path (the `delay` factor).
pub const MAX_DELAY: Duration = Duration::from_secs(10);
/// A container's CPU limit (the `cpus` factor, Docker's `--cpus`).
pub const MAX_CPU_LIMIT: f64 = 1024.0;
/// A container's memory limit (the `memory` factor), and the smallest one
/// Docker accepts (6 MiB).
pub const MIN_MEMORY: u64 = 6 << 20;
pub const MAX_MEMORY: u64 = 1 << 40;
/// A guest's memory (the `vm_memory` factor).
pub const MIN_GUEST_MEMORY: u64 = 64 << 20;
pub const MAX_GUEST_MEMORY: u64 = 1 << 40;
/// A guest's vCPUs (the `vm_cpus` factor).
pub const MAX_VCPUS: u32 = 256;
/// fio's test file (`tare tool run --size`, `[load.tool] size`).
pub const MIN_TOOL_FILE: u64 = 4 << 10;
pub const MAX_TOOL_FILE: u64 = 1 << 40;
/// sysbench OLTP's tables and rows per table (`tare mysql --tables
/// --table-size`, `[load.mysql]`): `prepare` writes every row.
pub const MAX_TABLES: u32 = 1024;
pub const MAX_TABLE_SIZE: u32 = 1_000_000_000;
/// A name that becomes a file or directory name (a config variant, a host):
/// see [`path_name`].
pub const MAX_NAME: usize = 64;

/// Reads a file tare takes whole (an experiment, a config variant, a
/// request mix's file), at most [`MAX_FILE`] bytes of it: a bigger one is
/// refused before it is read. A path that is not UTF-8 is refused: tare
/// records paths as text.
pub fn read_file(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read;
    if path.to_str().is_none() {
        return Err(std::io::Error::other(
            "not a UTF-8 path; tare records paths as text, so give one that is",
        ));
    }
    let file = std::fs::File::open(path)?;
    let too_big = || {
        std::io::Error::other(format!(
            "larger than {} (the most tare reads)",
            show_bytes(MAX_FILE)
        ))
    };
    if file.metadata()?.len() > MAX_FILE {
        return Err(too_big());
    }
    let mut text = String::new();
    file.take(MAX_FILE + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_FILE {
        return Err(too_big());
    }
    Ok(text)
}

/// `Err("must be at most 24h")` when `d` is past `max`.
pub fn duration_at_most(d: Duration, max: Duration) -> Result<(), String> {
    if d > max {
        Err(format!("must be at most {}", show(max)))
    } else {
        Ok(())
    }
}

/// A bound as people write it: `24h`, `1h`, `10s`, `7days`.
pub fn show(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 2 * 86_400 && s.is_multiple_of(86_400) {
        format!("{}days", s / 86_400)
    } else if s >= 3600 && s.is_multiple_of(3600) {
        format!("{}h", s / 3600)
    } else if s >= 60 && s.is_multiple_of(60) {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

/// A byte count as people write it: `16m`, `1024g`.
pub fn show_bytes(b: u64) -> String {
    for (shift, unit) in [(40, "t"), (30, "g"), (20, "m"), (10, "k")] {
        if b >= 1 << shift && b.is_multiple_of(1 << shift) {
            return format!("{}{unit}", b >> shift);
        }
    }
    b.to_string()
}

/// A name that tare makes a file or directory of (`configs/NAME` in a run
/// directory): one plain path component, so it cannot climb out of the
/// directory it is put in (`../../tmp/x`), name a hidden or special file, or
/// exceed a file system's name length. Letters, digits, `.`, `_`, `-`
/// (any Unicode letter or digit too), at most [`MAX_NAME`] bytes, not `.` or
/// `..`, not starting with `.` or `-`.
pub fn path_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("is empty".into());
    }
    if name.len() > MAX_NAME {
        return Err(format!("is longer than {MAX_NAME} bytes"));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(format!(
            "holds {c:?}: a name becomes a file name, so only letters, digits, `.`, `_` and `-`"
        ));
    }
    if name.starts_with('.') || name.starts_with('-') {
        return Err("starts with `.` or `-` (a hidden file, or an option)".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_read_as_people_write_them() {
        assert_eq!(show(MAX_DURATION), "24h");
        assert_eq!(show(MAX_BUDGET), "7days");
        assert_eq!(show(MAX_DELAY), "10s");
        assert_eq!(show_bytes(MAX_BODY as u64), "16m");
        assert_eq!(show_bytes(MAX_GUEST_MEMORY), "1t");
        assert_eq!(
            duration_at_most(DAY + Duration::from_secs(1), DAY).unwrap_err(),
            "must be at most 24h"
        );
        assert!(duration_at_most(DAY, DAY).is_ok());
    }

    #[test]
    fn names_in_paths_are_one_plain_component() {
        for ok in ["tuned", "my-config_2", "v1.2", "réglé"] {
            assert!(path_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "../../../../tmp/x",
            "a/b",
            "a\\b",
            "a\0b",
            ".hidden",
            "-rf",
            "a b",
            "a\nb",
            &"x".repeat(MAX_NAME + 1),
        ] {
            assert!(path_name(bad).is_err(), "{bad:?}");
        }
    }
}
