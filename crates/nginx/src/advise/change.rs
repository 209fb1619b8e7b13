//! A recommendation in machine-usable form: edits to the parsed configuration
//! (the [`Payload`]), to be applied one recommendation at a time and rebuilt
//! with the builder (`tare tune`), plus kernel settings the config cannot make.
//!
//! Statements are found again by [`Anchor`] (file, line, directive, arguments),
//! not by position, so a change still applies after other changes inserted
//! statements before it: edits never renumber lines, inserted statements get
//! line 0.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::payload::{Payload, Statement};

/// Names one statement of the payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Anchor {
    /// The `config[].file` it lives in.
    pub file: String,
    pub line: u64,
    pub directive: String,
    pub args: Vec<String>,
}

/// One edit of the configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Edit {
    /// Make `directive args;` the value in a block: every statement of that
    /// directive directly in the block (included files count as in the block)
    /// whose first `key_args` arguments equal those of `args` gets `args`; with
    /// none, the statement is inserted after the block's leading simple directives.
    /// `block: None` is the main context of the main file. `key_args` is 0 for
    /// single-valued directives and 1 for keyed ones like `proxy_set_header`.
    Set {
        block: Option<Anchor>,
        directive: String,
        args: Vec<String>,
        #[serde(default)]
        key_args: usize,
    },
    /// Give one statement new arguments.
    Replace { at: Anchor, args: Vec<String> },
}

/// A kernel setting the recommendation needs (`sysctl -w name=value`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sysctl {
    pub name: String,
    pub value: String,
}

/// Everything one recommendation changes. Empty edits mean "needs a person"
/// (the reason says what); `tare tune` skips those.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Change {
    pub edits: Vec<Edit>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sysctls: Vec<Sysctl>,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum ChangeError {
    #[error("no `{directive}` statement at {file}:{line} (already changed?)")]
    NotFound {
        file: String,
        line: u64,
        directive: String,
    },
    #[error("the payload has no main file")]
    Empty,
}

/// A statement's address: config index, then indexes into nested blocks.
type Path = (usize, Vec<usize>);

/// Includes nested deeper than this are not followed.
const MAX_DEPTH: usize = 32;

impl Change {
    /// Applies every edit in order. Kernel settings are not applied here.
    pub fn apply(&self, payload: &mut Payload) -> Result<(), ChangeError> {
        for edit in &self.edits {
            edit.apply(payload)?;
        }
        Ok(())
    }

    /// Nothing a program can apply to the config.
    pub fn is_manual(&self) -> bool {
        self.edits.is_empty()
    }
}

impl Edit {
    pub fn apply(&self, payload: &mut Payload) -> Result<(), ChangeError> {
        match self {
            Edit::Replace { at, args } => {
                let path = locate(payload, at).ok_or_else(|| not_found(at))?;
                stmt_mut(payload, &path).args = args.clone();
                Ok(())
            }
            Edit::Set {
                block,
                directive,
                args,
                key_args,
            } => {
                let block_path = match block {
                    None if payload.config.is_empty() => return Err(ChangeError::Empty),
                    None => None,
                    Some(anchor) => Some(locate(payload, anchor).ok_or_else(|| not_found(anchor))?),
                };
                let key = &args[..(*key_args).min(args.len())];
                let matches = find_in_block(payload, block_path.as_ref(), directive, key);
                if matches.is_empty() {
                    let list = block_mut(payload, block_path.as_ref());
                    let at = list
                        .iter()
                        .position(|s| s.block.is_some())
                        .unwrap_or(list.len());
                    let mut stmt = Statement::simple(directive, &[]);
                    stmt.args = args.clone();
                    list.insert(at, stmt);
                } else {
                    for path in matches {
                        stmt_mut(payload, &path).args = args.clone();
                    }
                }
                Ok(())
            }
        }
    }
}

fn not_found(a: &Anchor) -> ChangeError {
    ChangeError::NotFound {
        file: a.file.clone(),
        line: a.line,
        directive: a.directive.clone(),
    }
}

/// Finds an anchored statement (the first match, depth first).
pub fn locate(payload: &Payload, anchor: &Anchor) -> Option<Path> {
    fn go(stmts: &[Statement], a: &Anchor, path: &mut Vec<usize>) -> bool {
        for (i, s) in stmts.iter().enumerate() {
            path.push(i);
            if s.line == a.line && s.directive == a.directive && s.args == a.args {
                return true;
            }
            if let Some(block) = &s.block {
                if go(block, a, path) {
                    return true;
                }
            }
            path.pop();
        }
        false
    }
    payload.config.iter().enumerate().find_map(|(ci, c)| {
        if c.file != anchor.file {
            return None;
        }
        let mut path = Vec::new();
        go(&c.parsed, anchor, &mut path).then_some((ci, path))
    })
}

fn stmt_mut<'p>(payload: &'p mut Payload, (ci, path): &Path) -> &'p mut Statement {
    let mut list = &mut payload.config[*ci].parsed;
    let (last, inner) = path.split_last().expect("paths are never empty");
    for &i in inner {
        list = list[i].block.get_or_insert_with(Vec::new);
    }
    &mut list[*last]
}

/// The statement list of a block (`None`: the main file's top level).
fn block_mut<'p>(payload: &'p mut Payload, block: Option<&Path>) -> &'p mut Vec<Statement> {
    match block {
        None => &mut payload.config[0].parsed,
        Some(path) => stmt_mut(payload, path).block.get_or_insert_with(Vec::new),
    }
}

fn block_ref<'p>(payload: &'p Payload, (ci, path): &Path) -> Option<&'p [Statement]> {
    let mut list: &[Statement] = &payload.config[*ci].parsed;
    for &i in path {
        list = list.get(i)?.block.as_deref()?;
    }
    Some(list)
}

/// Statements `directive key...` directly in a block, following includes.
fn find_in_block(
    payload: &Payload,
    block: Option<&Path>,
    directive: &str,
    key: &[String],
) -> Vec<Path> {
    fn go(
        payload: &Payload,
        at: Path,
        directive: &str,
        key: &[String],
        depth: usize,
        out: &mut Vec<Path>,
    ) {
        let Some(list) = block_ref(payload, &at) else {
            return;
        };
        for (i, s) in list.iter().enumerate() {
            let mut path = at.1.clone();
            path.push(i);
            if s.directive == directive && s.args.len() >= key.len() && key_eq(&s.args, key) {
                out.push((at.0, path));
            } else if let Some(includes) = &s.includes {
                if depth < MAX_DEPTH {
                    for &ci in includes {
                        if ci < payload.config.len() {
                            go(payload, (ci, Vec::new()), directive, key, depth + 1, out);
                        }
                    }
                }
            }
        }
    }
    let start = block.cloned().unwrap_or((0, Vec::new()));
    let mut out = Vec::new();
    go(payload, start, directive, key, 0, &mut out);
    out
}

/// Header names compare case-insensitively; other keys exactly.
fn key_eq(args: &[String], key: &[String]) -> bool {
    args.iter().zip(key).all(|(a, k)| a.eq_ignore_ascii_case(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(json: &str) -> Payload {
        serde_json::from_str(json).unwrap()
    }

    const TWO_FILES: &str = r#"{"status":"ok","errors":[],"config":[
        {"file":"main.conf","status":"ok","errors":[],"parsed":[
          {"directive":"user","line":1,"args":["www"]},
          {"directive":"include","line":2,"args":["a.conf"],"includes":[1]},
          {"directive":"events","line":3,"args":[],"block":[]}]},
        {"file":"a.conf","status":"ok","errors":[],"parsed":[
          {"directive":"worker_processes","line":1,"args":["1"]}]}]}"#;

    #[test]
    fn set_replaces_through_includes_or_inserts_before_blocks() {
        let mut p = payload(TWO_FILES);
        let set = |d: &str, a: &str| Edit::Set {
            block: None,
            directive: d.into(),
            args: vec![a.into()],
            key_args: 0,
        };
        set("worker_processes", "auto").apply(&mut p).unwrap();
        assert_eq!(p.config[1].parsed[0].args, vec!["auto"]);
        set("worker_rlimit_nofile", "65535").apply(&mut p).unwrap();
        assert_eq!(p.config[0].parsed[2].directive, "worker_rlimit_nofile");
        assert_eq!(p.config[0].parsed[3].directive, "events");
        // Into a block found by its anchor.
        let events = Anchor {
            file: "main.conf".into(),
            line: 3,
            directive: "events".into(),
            args: vec![],
        };
        Edit::Set {
            block: Some(events),
            directive: "use".into(),
            args: vec!["epoll".into()],
            key_args: 0,
        }
        .apply(&mut p)
        .unwrap();
        assert_eq!(
            p.config[0].parsed[3].block.as_ref().unwrap()[0].args,
            vec!["epoll"]
        );
    }

    #[test]
    fn replace_needs_the_statement_to_still_be_there() {
        let mut p = payload(TWO_FILES);
        let at = Anchor {
            file: "a.conf".into(),
            line: 1,
            directive: "worker_processes".into(),
            args: vec!["1".into()],
        };
        let edit = Edit::Replace {
            at,
            args: vec!["2".into()],
        };
        edit.apply(&mut p).unwrap();
        assert_eq!(p.config[1].parsed[0].args, vec!["2"]);
        assert!(matches!(
            edit.apply(&mut p),
            Err(ChangeError::NotFound { .. })
        ));
    }

    #[test]
    fn keyed_set_keeps_other_keys() {
        let mut p = payload(
            r#"{"config":[{"file":"m","parsed":[{"directive":"location","line":1,"args":["/"],"block":[
                {"directive":"proxy_set_header","line":2,"args":["Host","$host"]}]}]}]}"#,
        );
        let loc = Anchor {
            file: "m".into(),
            line: 1,
            directive: "location".into(),
            args: vec!["/".into()],
        };
        let edit = Edit::Set {
            block: Some(loc),
            directive: "proxy_set_header".into(),
            args: vec!["Connection".into(), "".into()],
            key_args: 1,
        };
        edit.apply(&mut p).unwrap();
        let block = p.config[0].parsed[0].block.as_ref().unwrap();
        assert_eq!(block.len(), 2);
        assert_eq!(block[1].args, vec!["Connection", ""]);
        // Applying again changes nothing.
        edit.apply(&mut p).unwrap();
        assert_eq!(p.config[0].parsed[0].block.as_ref().unwrap().len(), 2);
    }
}
