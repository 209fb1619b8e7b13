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
    #[error("{}: already holds a run; use `tare run --resume {}` to continue it", path.display(), path.display())]
    Exists { path: PathBuf },
    /// `--out` at a directory that holds something else: tare never
    /// writes its files over a user's (a `report.json` of their own).
    #[error("{}: not empty and not a tare run; give a new or empty directory", path.display())]
    NotEmpty { path: PathBuf },
    #[error("{}: not a UTF-8 path; tare records paths as text, so give one that is", path.display())]
    NotUtf8 { path: PathBuf },
    /// A name that would put a file outside the run directory.
    #[error("{}: `{name}` is not a plain name inside the run directory", path.display())]
    Outside { path: PathBuf, name: String },
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

/// Run directories are named in records and reports as text.
fn utf8(path: &Path) -> Result<()> {
    match path.to_str() {
        Some(_) => Ok(()),
        None => Err(RunDirError::NotUtf8 {
            path: path.to_path_buf(),
        }),
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RunDirError + '_ {
    move |source| RunDirError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl RunDir {
    /// Creates `out`, or `runs/<UTC date>-<host>-<short id>` under `base`:
    /// a new or empty directory (one that holds a run says to resume it;
    /// one that holds anything else is refused, so no file of the user's
    /// is overwritten). Nothing is created when it is refused.
    pub fn create(out: Option<&Path>, base: &Path) -> Result<RunDir> {
        let path = match out {
            Some(p) => p.to_path_buf(),
            None => base.join("runs").join(default_name()),
        };
        utf8(&path)?;
        if path.join(TRIALS).exists() || path.join(PLAN).exists() {
            return Err(RunDirError::Exists { path });
        }
        let empty = match fs::read_dir(&path) {
            Ok(mut entries) => entries.next().is_none(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
            Err(e) => return Err(io(&path)(e)),
        };
        if !empty {
            return Err(RunDirError::NotEmpty { path });
        }
        fs::create_dir_all(&path).map_err(io(&path))?;
        Ok(RunDir::at(path))
    }

    /// An existing run directory, for `--resume` and reports.
    pub fn open(path: &Path) -> Result<RunDir> {
        utf8(path)?;
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

    /// The run directory at `path`, as it is (no check: for a writer
    /// handed the directory's path, such as remote hosts' record).
    pub fn at(path: PathBuf) -> RunDir {
        let id = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "run".into());
        RunDir { path, id }
    }

    /// The path of `name` for reading (a file tare names itself).
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// The path of `name` for writing, proven inside the run directory:
    /// every writer of a run's files goes through here, so no name (a
    /// config variant's, checked when the file was read too) can put a file
    /// elsewhere. `name` is relative, of plain components (`configs/x`).
    pub fn inside(&self, name: &str) -> Result<PathBuf> {
        use std::path::Component;
        let rel = Path::new(name);
        let plain = !name.is_empty()
            && !name.contains('\0')
            && rel.components().all(|c| matches!(c, Component::Normal(_)));
        if !plain {
            return Err(RunDirError::Outside {
                path: self.path.clone(),
                name: name.escape_debug().to_string(),
            });
        }
        Ok(self.path.join(rel))
    }

    /// Writes `name` whole: to a temporary file, fsync, rename, so a reader
    /// (or a crash) never sees half of it; a write that fails (a full disk)
    /// leaves no temporary file behind.
    pub fn write_file(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let path = self.inside(name)?;
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(io(dir))?;
        }
        let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
        tmp_name.push(".tmp~");
        let tmp = path.with_file_name(tmp_name);
        let written = File::create(&tmp)
            .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
            .map_err(io(&path))
            .and_then(|()| fs::rename(&tmp, &path).map_err(io(&path)));
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        written
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
    pub(crate) fn trials_writer(&self) -> Result<TrialWriter> {
        let path = self.inside(TRIALS)?;
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
        self.read_trials_noting(repair, &mut Vec::new())
    }

    /// [`RunDir::read_trials`], and a line in `notes` for each line inside
    /// the file that is not a trial record (torn by a crash, or edited):
    /// it is skipped, named by its line number, and every good line is
    /// kept; a resumed run measures the trial it held again.
    pub(crate) fn read_trials_noting(
        &self,
        repair: bool,
        notes: &mut Vec<String>,
    ) -> Result<Vec<TrialRecord>> {
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
        let mut number = 0usize;
        loop {
            line.clear();
            let n = reader.read_line(&mut line).map_err(io(&path))?;
            if n == 0 {
                break;
            }
            number += 1;
            if !line.ends_with('\n') {
                torn = true;
                break;
            }
            good_len += n as u64;
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<TrialRecord>(&line) {
                Ok(rec) => out.push(rec),
                Err(e) => notes.push(format!(
                    "{} line {number} is torn (not a trial record: {e}); skipped, the other trials kept",
                    path.display()
                )),
            }
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
pub(crate) struct TrialWriter {
    file: File,
    path: PathBuf,
}

impl TrialWriter {
    /// Writes the record as one line with a single `write` and fsyncs it:
    /// once this returns, the trial survives a kill or a power cut.
    pub(crate) fn append(&mut self, rec: &TrialRecord) -> Result<()> {
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

    /// A run directory holding trial 1 and then `torn`, as a crash in the
    /// middle of writing a line leaves it.
    fn one_trial_then(torn: &[u8]) -> (tempfile::TempDir, RunDir) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::create(Some(&tmp.path().join("run")), tmp.path()).unwrap();
        dir.trials_writer().unwrap().append(&rec(1)).unwrap();
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.file(TRIALS))
            .unwrap();
        f.write_all(torn).unwrap();
        (tmp, dir)
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_truncated() {
        let (_tmp, dir) = one_trial_then(br#"{"run_id":"r","cell":"pla"#);
        assert_eq!(dir.read_trials(true).unwrap().len(), 1);
        let mut w = dir.trials_writer().unwrap();
        w.append(&rec(2)).unwrap();
        let back = dir.read_trials(false).unwrap();
        assert_eq!(back.iter().map(|r| r.trial).collect::<Vec<_>>(), vec![1, 2]);
    }

    /// Regression: one torn line in the middle of trials.jsonl made
    /// `--resume` refuse the whole run, naming the wrong line.
    #[test]
    fn a_torn_line_inside_is_named_and_the_others_kept() {
        let (_tmp, dir) = one_trial_then(b"{\"run_id\":\"r\",\"ce\n");
        let mut w = dir.trials_writer().unwrap();
        w.append(&rec(3)).unwrap();
        let mut notes = Vec::new();
        let back = dir.read_trials_noting(true, &mut notes).unwrap();
        assert_eq!(back.iter().map(|r| r.trial).collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("trials.jsonl line 2 is torn"),
            "{notes:?}"
        );
    }

    /// `--out` at a directory of the user's: refused, nothing written; at
    /// a run: resume it; at a non-UTF-8 path: refused, nothing created.
    #[test]
    fn only_a_new_or_empty_directory_becomes_a_run() {
        let tmp = tempfile::tempdir().unwrap();
        let mine = tmp.path().join("mine");
        fs::create_dir(&mine).unwrap();
        fs::write(mine.join("report.json"), "mine").unwrap();
        let e = RunDir::create(Some(&mine), tmp.path()).err().unwrap();
        assert!(matches!(e, RunDirError::NotEmpty { .. }), "{e}");
        assert_eq!(
            fs::read_to_string(mine.join("report.json")).unwrap(),
            "mine"
        );
        let empty = tmp.path().join("empty");
        fs::create_dir(&empty).unwrap();
        let run = RunDir::create(Some(&empty), tmp.path()).unwrap();
        run.write_file(PLAN, b"{}").unwrap();
        let e = RunDir::create(Some(&empty), tmp.path()).err().unwrap();
        assert!(e.to_string().contains("--resume"), "{e}");
        use std::os::unix::ffi::OsStrExt;
        let bad = tmp.path().join(std::ffi::OsStr::from_bytes(b"r\xff"));
        let e = RunDir::create(Some(&bad), tmp.path()).err().unwrap();
        assert!(matches!(e, RunDirError::NotUtf8 { .. }), "{e}");
        assert!(!bad.exists());
    }

    /// Every writer goes through `inside`: no name leaves the directory,
    /// and a failed write leaves no temporary file.
    #[test]
    fn writes_stay_inside_and_leave_no_temporary_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::create(Some(&tmp.path().join("run")), tmp.path()).unwrap();
        for name in ["../x", "/tmp/x", "configs/../../x", "", "a\0b", "./x"] {
            let e = dir.write_file(name, b"x").unwrap_err();
            assert!(matches!(e, RunDirError::Outside { .. }), "{name:?}: {e}");
        }
        dir.write_file("configs/tuned", b"x").unwrap();
        // A directory where the file should go: the rename fails.
        fs::create_dir(dir.path.join("report.json")).unwrap();
        fs::write(dir.path.join("report.json/f"), "x").unwrap();
        assert!(dir.write_file("report.json", b"x").is_err());
        let names: Vec<String> = fs::read_dir(&dir.path)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n.ends_with("tmp~")), "{names:?}");
    }

    #[test]
    fn default_names_carry_date_and_host() {
        let n = default_name();
        assert!(n.len() > 20, "{n}");
        assert!(n.as_bytes()[8] == b'T', "{n}");
    }
}
