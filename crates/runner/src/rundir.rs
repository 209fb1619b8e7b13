//! The run directory: everything a run leaves behind, written as it goes.
//!
//! ```text
//! runs/<UTC date>-<host>-<short id>/
//!   experiment.toml   the experiment file, verbatim
//!   configs/NAME      each config variant's text
//!   provenance.json   versions, machine, command line, time
//!   plan.json         cells, skipped cells, seed, order, attribution chain
//!   trials.jsonl      one tare_record::TrialRecord per line, fsynced per trial
//!   findings.json     the fairness check
//! ```
//!
//! `trials.jsonl` is the only file that grows; each line is written with
//! one `write` and then `fsync`ed, so a run killed at any moment keeps every
//! trial that finished. A line torn by a crash mid-write is dropped (and
//! truncated away) when the run is resumed.

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;
use tare_record::TrialRecord;

#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{}: already holds a run (trials.jsonl exists); use `tare run --resume {}` to continue it", path.display(), path.display())]
    Exists { path: PathBuf },
    #[error("{}: not a run directory (no {file})", path.display())]
    NotARun { path: PathBuf, file: &'static str },
}

type Result<T> = std::result::Result<T, RunDirError>;

pub(crate) const TRIALS: &str = "trials.jsonl";
pub(crate) const PLAN: &str = "plan.json";
pub(crate) const PROVENANCE: &str = "provenance.json";
pub(crate) const FINDINGS: &str = "findings.json";
pub(crate) const FACTS: &str = "facts.json";
pub(crate) const EXPERIMENT: &str = "experiment.toml";

pub struct RunDir {
    pub path: PathBuf,
    /// The directory's name: the run id in every record.
    pub id: String,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RunDirError + '_ {
    move |source| RunDirError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl RunDir {
    /// Creates `out`, or `runs/<UTC date>-<host>-<short id>` under `base`.
    pub fn create(out: Option<&Path>, base: &Path) -> Result<RunDir> {
        let path = match out {
            Some(p) => p.to_path_buf(),
            None => base.join("runs").join(default_name()),
        };
        if path.join(TRIALS).exists() {
            return Err(RunDirError::Exists { path });
        }
        fs::create_dir_all(&path).map_err(io(&path))?;
        Ok(RunDir::at(path))
    }

    /// An existing run directory, for `--resume` and reports.
    pub fn open(path: &Path) -> Result<RunDir> {
        for file in [PLAN, EXPERIMENT] {
            if !path.join(file).exists() {
                return Err(RunDirError::NotARun {
                    path: path.to_path_buf(),
                    file,
                });
            }
        }
        Ok(RunDir::at(path.to_path_buf()))
    }

    fn at(path: PathBuf) -> RunDir {
        let id = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "run".into());
        RunDir { path, id }
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Writes `name` whole: to a temporary file, fsync, rename, so a reader
    /// (or a crash) never sees half of it.
    pub fn write_file(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let path = self.file(name);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(io(dir))?;
        }
        let tmp = path.with_extension("tmp~");
        let mut f = File::create(&tmp).map_err(io(&tmp))?;
        f.write_all(bytes).map_err(io(&tmp))?;
        f.sync_all().map_err(io(&tmp))?;
        fs::rename(&tmp, &path).map_err(io(&path))
    }

    pub fn write_json<T: Serialize>(&self, name: &str, value: &T) -> Result<()> {
        let mut text = serde_json::to_vec_pretty(value).map_err(|source| RunDirError::Json {
            path: self.file(name),
            source,
        })?;
        text.push(b'\n');
        self.write_file(name, &text)
    }

    pub fn read_json<T: DeserializeOwned>(&self, name: &str) -> Result<T> {
        let path = self.file(name);
        let text = fs::read(&path).map_err(io(&path))?;
        serde_json::from_slice(&text).map_err(|source| RunDirError::Json { path, source })
    }

    /// Opens `trials.jsonl` for appending.
    pub fn trials_writer(&self) -> Result<TrialWriter> {
        let path = self.file(TRIALS);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io(&path))?;
        Ok(TrialWriter { file, path })
    }

    /// Every complete trial on disk. A last line without its newline (a
    /// write cut short by a kill) is not a finished trial: it is dropped and,
    /// with `repair`, truncated from the file so appends start clean.
    pub fn read_trials(&self, repair: bool) -> Result<Vec<TrialRecord>> {
        let path = self.file(TRIALS);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(&path)(e)),
        };
        let mut reader = BufReader::new(file);
        let mut out = Vec::new();
        let mut good_len = 0u64;
        let mut line = String::new();
        let mut torn = false;
        loop {
            line.clear();
            let n = reader.read_line(&mut line).map_err(io(&path))?;
            if n == 0 {
                break;
            }
            if !line.ends_with('\n') {
                torn = true;
                break;
            }
            if line.trim().is_empty() {
                good_len += n as u64;
                continue;
            }
            match serde_json::from_str::<TrialRecord>(&line) {
                Ok(rec) => out.push(rec),
                Err(source) => {
                    return Err(RunDirError::Json {
                        path: path.clone(),
                        source,
                    })
                }
            }
            good_len += n as u64;
        }
        if torn && repair {
            let f = OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(io(&path))?;
            f.set_len(good_len).map_err(io(&path))?;
            f.sync_all().map_err(io(&path))?;
        }
        Ok(out)
    }
}

/// Appends trials to `trials.jsonl`, one durable line each.
pub struct TrialWriter {
    file: File,
    path: PathBuf,
}

impl TrialWriter {
    /// Writes the record as one line with a single `write` and fsyncs it:
    /// once this returns, the trial survives a kill or a power cut.
    pub fn append(&mut self, rec: &TrialRecord) -> Result<()> {
        let mut line = serde_json::to_vec(rec).map_err(|source| RunDirError::Json {
            path: self.path.clone(),
            source,
        })?;
        line.push(b'\n');
        self.file.seek(SeekFrom::End(0)).map_err(io(&self.path))?;
        self.file.write_all(&line).map_err(io(&self.path))?;
        self.file.sync_data().map_err(io(&self.path))
    }
}

/// `<UTC date>-<host>-<short id>`, e.g. `20261122T0226Z-box-3f9a1c`.
pub(crate) fn default_name() -> String {
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    // 2026-11-22T02:26:25Z -> 20261122T0226Z
    let compact: String = now
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .collect();
    let date = format!("{}Z", &compact[..compact.len().min(13)]);
    let host = crate::provenance::hostname();
    let host: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(32)
        .collect();
    let id = crate::plan::fresh_seed() & 0xff_ffff;
    format!("{date}-{host}-{id:06x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(trial: u32) -> TrialRecord {
        TrialRecord {
            run_id: "r".into(),
            cell: "placement=native".into(),
            trial,
            ..TrialRecord::default()
        }
    }

    #[test]
    fn appended_trials_read_back() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::create(Some(&tmp.path().join("run")), tmp.path()).unwrap();
        let mut w = dir.trials_writer().unwrap();
        w.append(&rec(1)).unwrap();
        w.append(&rec(2)).unwrap();
        let back = dir.read_trials(false).unwrap();
        assert_eq!(back.iter().map(|r| r.trial).collect::<Vec<_>>(), vec![1, 2]);
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_truncated() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::create(Some(&tmp.path().join("run")), tmp.path()).unwrap();
        let mut w = dir.trials_writer().unwrap();
        w.append(&rec(1)).unwrap();
        drop(w);
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.file(TRIALS))
            .unwrap();
        f.write_all(br#"{"run_id":"r","cell":"pla"#).unwrap();
        drop(f);
        assert_eq!(dir.read_trials(true).unwrap().len(), 1);
        let mut w = dir.trials_writer().unwrap();
        w.append(&rec(2)).unwrap();
        let back = dir.read_trials(false).unwrap();
        assert_eq!(back.iter().map(|r| r.trial).collect::<Vec<_>>(), vec![1, 2]);
    }

    #[test]
    fn default_names_carry_date_and_host() {
        let n = default_name();
        assert!(n.len() > 20, "{n}");
        assert!(n.as_bytes()[8] == b'T', "{n}");
    }
}
