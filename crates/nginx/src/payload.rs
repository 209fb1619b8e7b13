//! The parsed form of an nginx configuration: the JSON "payload" of
//! nginxinc/crossplane, field for field and in crossplane's key order, so that
//! tooling written for crossplane reads tare's output and the other way round.
//!
//! ```json
//! {"status":"ok","errors":[],"config":[{"file":"nginx.conf","status":"ok","errors":[],
//!   "parsed":[{"directive":"events","line":1,"args":[],"block":[]}]}]}
//! ```

use serde::{Deserialize, Serialize};

/// `"ok"` or `"failed"`, as crossplane spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    #[default]
    Ok,
    Failed,
}

/// The whole parse: one entry in `config` per file read, the main file first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Payload {
    /// `failed` as soon as any file has an error.
    #[serde(default)]
    pub status: Status,
    /// Every error of every file, each naming its file.
    #[serde(default)]
    pub errors: Vec<PayloadError>,
    /// The files in the order they were first included; `includes` indexes this list.
    pub config: Vec<ConfigFile>,
}

/// An error in the payload-wide list: the per-file error plus the file's name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PayloadError {
    pub file: String,
    /// The message, formatted as crossplane does: `REASON in FILE:LINE`.
    pub error: String,
    /// `null` when the error has no line (an unreadable file, a truncated file).
    pub line: Option<u64>,
}

/// One configuration file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigFile {
    /// The path as nginx would open it: the main file as given, includes joined
    /// to the main file's directory when relative.
    pub file: String,
    #[serde(default)]
    pub status: Status,
    #[serde(default)]
    pub errors: Vec<FileError>,
    /// The file's top-level statements.
    #[serde(default)]
    pub parsed: Vec<Statement>,
}

/// An error in one file's list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileError {
    pub error: String,
    pub line: Option<u64>,
}

/// One directive (or, with comments enabled, one comment).
///
/// Field order is crossplane's key order; optional keys appear only when set,
/// as in crossplane (`includes` only on `include`, `block` only on blocks).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Statement {
    /// The file the statement came from; only in `--combine` output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The directive name; `#` for a comment.
    pub directive: String,
    /// 1-based line where the directive starts (0 for statements tare inserted).
    #[serde(default)]
    pub line: u64,
    #[serde(default)]
    pub args: Vec<String>,
    /// For `include`: indexes into `Payload::config` of the files it pulled in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub includes: Option<Vec<usize>>,
    /// The statements inside `{ }`; `None` for a simple directive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<Vec<Statement>>,
    /// The comment text after `#`, for `directive == "#"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

impl Statement {
    /// A simple directive `name args;`, as tare inserts it (line 0: not from a file).
    pub fn simple(directive: &str, args: &[&str]) -> Statement {
        Statement {
            directive: directive.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            ..Statement::default()
        }
    }

    /// Is this a comment rather than a directive?
    pub fn is_comment(&self) -> bool {
        self.directive == "#" && self.comment.is_some()
    }
}

/// Directives (comments excluded) in a list of statements, blocks included.
fn count(stmts: &[Statement]) -> usize {
    stmts
        .iter()
        .filter(|s| !s.is_comment())
        .map(|s| 1 + s.block.as_deref().map(count).unwrap_or(0))
        .sum()
}

impl PayloadError {
    /// The error for people. crossplane's message for a statement still
    /// open at the end of a file is empty (`str(StopIteration())`), and the
    /// JSON keeps it so; a person is told what happened.
    pub fn describe(&self) -> String {
        if self.error.is_empty() {
            format!(
                "unexpected end of file, the last statement is not finished (no \";\" or \"{{\") in {}",
                self.file
            )
        } else {
            self.error.clone()
        }
    }
}

impl Payload {
    /// A summary for people: each file read, its directive count and status,
    /// then every error.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for c in &self.config {
            let status = match c.status {
                Status::Ok => "ok",
                Status::Failed => "FAILED",
            };
            out.push_str(&format!(
                "{}: {} directives, {status}\n",
                c.file,
                count(&c.parsed)
            ));
        }
        for e in &self.errors {
            out.push_str(&format!("error: {}\n", e.describe()));
        }
        out.push_str(&format!(
            "{} files, {} errors\n",
            self.config.len(),
            self.errors.len()
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::{parse_text, ParseOptions};

    /// Regression: an unfinished statement printed `error: ` and nothing
    /// else; the JSON keeps crossplane's empty message.
    #[test]
    fn an_unfinished_statement_is_described() {
        let p = parse_text(
            "/nowhere/n.conf",
            "events {}\nworker_processes 1\n",
            &ParseOptions::default(),
        );
        assert_eq!(p.errors[0].error, "");
        let text = p.to_text();
        assert!(
            text.contains("error: unexpected end of file, the last statement is not finished (no \";\" or \"{\") in /nowhere/n.conf\n"),
            "{text}"
        );
    }
}
