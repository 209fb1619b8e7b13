//! Errors in an experiment file, each naming the file, line, column and key.

use std::ops::Range;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// (The cause is in the message, not a `source`: the one-line error
    /// printer would otherwise repeat it.)
    #[error("{}: cannot read: {cause}", path.display())]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    /// Bad TOML, an unknown key, a wrong type or a bad value.
    #[error("{}:{line}:{col}: {}{message}", file.display(), key_prefix(key))]
    Invalid {
        file: PathBuf,
        line: usize,
        col: usize,
        /// The dotted key the problem is at (`load.duration`), when known.
        key: String,
        message: String,
    },
}

fn key_prefix(key: &str) -> String {
    if key.is_empty() {
        String::new()
    } else {
        format!("`{key}`: ")
    }
}

/// Turns byte spans into `file:line:col` errors for one file's text.
pub struct Locator<'a> {
    pub file: &'a Path,
    pub text: &'a str,
    /// Where files the experiment names are read from (`None`: beside
    /// `file`): see [`Locator::input_path`].
    pub inputs: Option<&'a super::ConfigSource>,
}

impl Locator<'_> {
    /// Where a file the experiment names at `written` is read: beside the
    /// experiment file, or, for a resumed run, its copy `copy` in the run
    /// directory (so a resumed run loads what the run began with).
    pub(crate) fn input_path(&self, written: &str, copy: &str) -> std::path::PathBuf {
        match self.inputs {
            Some(super::ConfigSource::RelativeTo(dir)) => dir.join(written),
            Some(super::ConfigSource::RunDir(dir)) => dir.join(copy),
            None => self.file.parent().unwrap_or(Path::new(".")).join(written),
        }
    }

    /// 1-based line and column of byte `offset` (columns count characters).
    pub(crate) fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let before = &self.text[..floor_char_boundary(self.text, offset)];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = before[line_start..].chars().count() + 1;
        (line, col)
    }

    pub fn error(
        &self,
        span: Range<usize>,
        key: &str,
        message: impl Into<String>,
    ) -> ExperimentError {
        let (line, col) = self.line_col(span.start);
        ExperimentError::Invalid {
            file: self.file.to_path_buf(),
            line,
            col,
            key: key.to_string(),
            message: message.into(),
        }
    }

    /// A TOML syntax or type error. `toml` gives a span but not the key, so
    /// the key is read back from the line the span is on (`key = value`).
    pub(crate) fn toml_error(&self, err: &toml::de::Error) -> ExperimentError {
        let span = err.span().unwrap_or(0..0);
        let start = floor_char_boundary(self.text, span.start.min(self.text.len()));
        let line_start = self.text[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = self.text[start..]
            .find('\n')
            .map_or(self.text.len(), |i| start + i);
        let line = &self.text[line_start..line_end];
        let message = err.message().trim().replace('\n', " ");
        // A missing key is missing from a table, not from the line the
        // table starts on: naming that line's key (`description`) misleads.
        let key = match line.split_once('=') {
            _ if message.starts_with("missing field") => "",
            Some((k, _)) if !k.trim_start().starts_with('[') => k.trim().trim_matches('"'),
            _ => "",
        };
        self.error(span, key, message)
    }
}

fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_become_lines_and_columns() {
        let text = "a = 1\nbb = 2\n\nccc = 3";
        let l = Locator {
            file: Path::new("x.toml"),
            text,
            inputs: None,
        };
        assert_eq!(l.line_col(0), (1, 1));
        assert_eq!(l.line_col(6), (2, 1));
        assert_eq!(l.line_col(11), (2, 6));
        assert_eq!(l.line_col(14), (4, 1));
        assert_eq!(l.line_col(999), (4, 8));
        let e = l.error(6..8, "bb", "too big");
        assert_eq!(e.to_string(), "x.toml:2:1: `bb`: too big");
    }
}
