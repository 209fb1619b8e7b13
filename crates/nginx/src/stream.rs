//! `tare nginx parse` without the configuration in memory: crossplane's
//! JSON written as the parser finds each statement, and the summary from
//! counts. The payload's status and errors come before its files, and each
//! file's errors before its statements, so the files are parsed more than
//! once, each pass writing one part: (1) every file, to learn the status,
//! the files and which files an error ended; (2) every file, writing the
//! payload's errors; then for each file, (3) its errors and (4) its
//! statements. Parsing is a function of the files' text, so every pass
//! sees the same statements and errors; memory stays near the size of the
//! largest file (the lexer streams its tokens), where a 50 MB
//! configuration once took 1.3 GB as a [`Payload`](crate::Payload)
//! (docs/nginx.md). The bytes are those of [`crate::to_json`] on
//! [`crate::parse`]'s payload, indented or compact (tested on every corpus
//! configuration).

use std::io::{self, Write};

use serde::Serialize;

use crate::parser::{Parser, Sink};
use crate::payload::Statement;
use crate::python::dumps;
use crate::ParseOptions;

/// Writes `crossplane parse`'s JSON for `path` (its text given, or read)
/// to `out`, without the trailing newline; whether the configuration has
/// errors. `--combine` needs the whole payload: it is built in memory.
pub fn write_json(
    path: &str,
    main_text: Option<&str>,
    options: &ParseOptions,
    indent: Option<usize>,
    out: &mut dyn Write,
) -> io::Result<bool> {
    if options.combine {
        let payload = match main_text {
            Some(t) => crate::parse_text(path, t, options),
            None => crate::parse(path, options),
        };
        out.write_all(crate::to_json(&payload, indent).as_bytes())?;
        return Ok(payload.status == crate::Status::Failed);
    }
    let mut survey = Survey::default();
    let mut p = Parser::new(path, main_text, options, &mut survey);
    p.parse_all();
    let includes = p.includes.clone();
    let failed = p.failed;
    drop(p);
    let j = Json { indent };
    let mut w = Pieces { out, error: None };
    w.put("{");
    j.key(&mut w, 1, "status", true);
    w.put(&dumps(&if failed { "failed" } else { "ok" }, None));
    j.key(&mut w, 1, "errors", false);
    let mut errors = Errors {
        j,
        w: &mut w,
        array: Array::new(1),
        with_file: true,
    };
    // Only a file with errors adds to them.
    let with_errors = |i: &usize| survey.errors[*i] > 0;
    let mut p = Parser::new(path, main_text, options, &mut errors);
    p.includes = includes.clone();
    for i in (0..includes.len()).filter(with_errors) {
        p.parse_file(i);
    }
    drop(p);
    errors.array.end(&j, errors.w);
    j.key(&mut w, 1, "config", false);
    let mut files = Array::new(1);
    for (i, (file, _)) in includes.iter().enumerate() {
        files.item(&j, &mut w);
        w.put("{");
        j.key(&mut w, 3, "file", true);
        w.put(&dumps(file, None));
        j.key(&mut w, 3, "status", false);
        let status = if survey.errors[i] > 0 { "failed" } else { "ok" };
        w.put(&dumps(&status, None));
        j.key(&mut w, 3, "errors", false);
        let mut errors = Errors {
            j,
            w: &mut w,
            array: Array::new(3),
            with_file: false,
        };
        if with_errors(&i) {
            let mut p = Parser::new(path, main_text, options, &mut errors);
            p.includes = includes.clone();
            p.parse_file(i);
        }
        errors.array.end(&j, errors.w);
        j.key(&mut w, 3, "parsed", false);
        let mut statements = Statements {
            j,
            w: &mut w,
            open: vec![Array::new(3)],
            off: survey.fatal[i],
        };
        if !survey.fatal[i] {
            let mut p = Parser::new(path, main_text, options, &mut statements);
            p.includes = includes.clone();
            p.parse_file(i);
        }
        let root = statements.open.pop().unwrap_or(Array::new(3));
        root.end(&j, &mut w);
        j.newline(&mut w, 2);
        w.put("}");
    }
    files.end(&j, &mut w);
    j.newline(&mut w, 0);
    w.put("}");
    w.finish()?;
    Ok(failed)
}

/// The summary `tare nginx parse` prints ([`crate::Payload::to_text`]'s),
/// from counts.
pub fn write_summary(path: &str, options: &ParseOptions, out: &mut dyn Write) -> io::Result<bool> {
    let mut survey = Survey::default();
    let mut p = Parser::new(path, None, options, &mut survey);
    p.parse_all();
    let includes = p.includes.clone();
    let failed = p.failed;
    drop(p);
    for (i, (file, _)) in includes.iter().enumerate() {
        let status = if survey.errors[i] > 0 { "FAILED" } else { "ok" };
        let n = if survey.fatal[i] {
            0
        } else {
            survey.directives[i]
        };
        writeln!(out, "{file}: {n} directives, {status}")?;
    }
    let mut lines = Lines { out, error: None };
    let mut p = Parser::new(path, None, options, &mut lines);
    p.includes = includes.clone();
    for i in (0..includes.len()).filter(|&i| survey.errors[i] > 0) {
        p.parse_file(i);
    }
    drop(p);
    if let Some(e) = lines.error {
        return Err(e);
    }
    let total: usize = survey.errors.iter().sum();
    writeln!(out, "{} files, {total} errors", includes.len())?;
    Ok(failed)
}

/// Pass 1: per file, its errors, its directives, whether an error ended it.
#[derive(Default)]
struct Survey {
    current: usize,
    errors: Vec<usize>,
    directives: Vec<usize>,
    fatal: Vec<bool>,
}

impl Sink for Survey {
    fn file(&mut self, index: usize, _name: &str) {
        self.current = index;
        for v in [&mut self.errors, &mut self.directives] {
            v.resize(index + 1, 0);
        }
        self.fatal.resize(index + 1, false);
    }
    fn statement(&mut self, stmt: Statement, _opens: bool) {
        if !stmt.is_comment() {
            self.directives[self.current] += 1;
        }
    }
    fn close(&mut self) {}
    fn error(&mut self, _file: &str, _error: &str, _line: Option<u64>) {
        self.errors[self.current] += 1;
    }
    fn fatal(&mut self) {
        self.fatal[self.current] = true;
    }
}

/// The summary's error lines.
struct Lines<'a> {
    out: &'a mut dyn Write,
    error: Option<io::Error>,
}

impl Sink for Lines<'_> {
    fn file(&mut self, _index: usize, _name: &str) {}
    fn statement(&mut self, _stmt: Statement, _opens: bool) {}
    fn close(&mut self) {}
    fn error(&mut self, file: &str, error: &str, line: Option<u64>) {
        let e = crate::PayloadError {
            file: file.to_string(),
            error: error.to_string(),
            line,
        };
        if self.error.is_none() {
            if let Err(e) = writeln!(self.out, "error: {}", e.describe()) {
                self.error = Some(e);
            }
        }
    }
    fn fatal(&mut self) {}
}

/// The output, the first write error kept (a sink cannot return one).
struct Pieces<'a> {
    out: &'a mut dyn Write,
    error: Option<io::Error>,
}

impl Pieces<'_> {
    fn put(&mut self, text: &str) {
        if self.error.is_none() {
            if let Err(e) = self.out.write_all(text.as_bytes()) {
                self.error = Some(e);
            }
        }
    }
    fn finish(self) -> io::Result<()> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Python's `json.dumps` layout, compact or with `indent` spaces a level.
#[derive(Clone, Copy)]
struct Json {
    indent: Option<usize>,
}

impl Json {
    /// A line break and the indentation of `level` (nothing, compact).
    fn newline(&self, w: &mut Pieces, level: usize) {
        if let Some(n) = self.indent {
            w.put("\n");
            w.put(&" ".repeat(n * level));
        }
    }
    /// `"key": ` of an object whose keys are at `level`.
    fn key(&self, w: &mut Pieces, level: usize, key: &str, first: bool) {
        if !first {
            w.put(",");
        }
        self.newline(w, level);
        w.put(&dumps(&key, None));
        w.put(if self.indent.is_some() { ": " } else { ":" });
    }
    /// `value` as a value at `level` (its inner lines indented from there).
    fn value<T: Serialize>(&self, level: usize, value: &T) -> String {
        let text = dumps(value, self.indent);
        match self.indent {
            Some(n) => text.replace('\n', &format!("\n{}", " ".repeat(n * level))),
            None => text,
        }
    }
}

/// An array being written: its level (where its `]` goes), whether its
/// `[` is written, and how many items it has.
struct Array {
    level: usize,
    opened: bool,
    items: usize,
}

impl Array {
    fn new(level: usize) -> Array {
        Array {
            level,
            opened: false,
            items: 0,
        }
    }
    /// Starts an item: the bracket or separator, and its line.
    fn item(&mut self, j: &Json, w: &mut Pieces) {
        if !self.opened {
            w.put("[");
            self.opened = true;
        }
        if self.items > 0 {
            w.put(",");
        }
        self.items += 1;
        j.newline(w, self.level + 1);
    }
    fn end(self, j: &Json, w: &mut Pieces) {
        if !self.opened {
            w.put("[");
        }
        if self.items > 0 {
            j.newline(w, self.level);
        }
        w.put("]");
    }
}

/// Passes 2 and 3: the errors, with their file (the payload's) or not
/// (a file's).
struct Errors<'a, 'b> {
    j: Json,
    w: &'a mut Pieces<'b>,
    array: Array,
    with_file: bool,
}

impl Sink for Errors<'_, '_> {
    fn file(&mut self, _index: usize, _name: &str) {}
    fn statement(&mut self, _stmt: Statement, _opens: bool) {}
    fn close(&mut self) {}
    fn error(&mut self, file: &str, error: &str, line: Option<u64>) {
        self.array.item(&self.j, self.w);
        let level = self.array.level + 1;
        let text = if self.with_file {
            let e = crate::PayloadError {
                file: file.to_string(),
                error: error.to_string(),
                line,
            };
            self.j.value(level, &e)
        } else {
            let e = crate::FileError {
                error: error.to_string(),
                line,
            };
            self.j.value(level, &e)
        };
        self.w.put(&text);
    }
    fn fatal(&mut self) {}
}

/// Pass 4: one file's statements, each written as it is found; a block's
/// statements inside its `"block": [...]`.
struct Statements<'a, 'b> {
    j: Json,
    w: &'a mut Pieces<'b>,
    /// The arrays open: the file's `parsed`, then each open block's.
    open: Vec<Array>,
    /// Write nothing (an error ended the file).
    off: bool,
}

impl Sink for Statements<'_, '_> {
    fn file(&mut self, _index: usize, _name: &str) {}
    fn statement(&mut self, mut stmt: Statement, opens: bool) {
        if self.off {
            return;
        }
        let Some(array) = self.open.last_mut() else {
            return;
        };
        array.item(&self.j, self.w);
        let level = array.level + 1;
        if !opens {
            let text = self.j.value(level, &stmt);
            self.w.put(&text);
            return;
        }
        // The statement with an empty block, cut after the block's `[`:
        // `block` is its last key (a statement with a block has no comment).
        stmt.block = Some(Vec::new());
        let text = self.j.value(level, &stmt);
        let cut = text.rfind("[]").map_or(text.len(), |i| i + 1);
        self.w.put(&text[..cut]);
        self.open.push(Array {
            level: level + 1,
            opened: true,
            items: 0,
        });
    }
    fn close(&mut self) {
        if self.off || self.open.len() < 2 {
            return;
        }
        if let Some(block) = self.open.pop() {
            let level = block.level - 1;
            block.end(&self.j, self.w);
            self.j.newline(self.w, level);
            self.w.put("}");
        }
    }
    fn error(&mut self, _file: &str, _error: &str, _line: Option<u64>) {}
    fn fatal(&mut self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every configuration of the corpus (and a few broken ones), with the
    /// options that change the output: the streamed bytes are the payload's.
    #[test]
    fn streamed_json_is_the_payloads_byte_for_byte() {
        let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
        let mut mains = Vec::new();
        let mut dirs = vec![corpus];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.file_name().is_some_and(|n| n == "nginx.conf") {
                    mains.push(p);
                }
            }
        }
        assert!(!mains.is_empty());
        let tmp = tempfile::tempdir().unwrap();
        let mut broken = Vec::new();
        for (i, text) in [
            "events {}\nworker_processes 1\n",
            "http {\n server { listen 80; }\n",
            "}\nevents {}\n",
            "listen 80;\nhttp { server { listen 1 2 3 4 5 6 7 8 9; } }\nx;\n",
            "http { include nope/*.conf; include missing.conf; }\n",
            "events { \"quoted{\" 'a\\'b' ${x} y; } # é\n",
        ]
        .iter()
        .enumerate()
        {
            let p = tmp.path().join(format!("b{i}.conf"));
            std::fs::write(&p, text).unwrap();
            broken.push(p);
        }
        let variants = [
            ParseOptions::default(),
            ParseOptions {
                comments: true,
                ..ParseOptions::default()
            },
            ParseOptions {
                single: true,
                strict: true,
                ..ParseOptions::default()
            },
            ParseOptions {
                catch_errors: false,
                ignore: vec!["listen".into()],
                ..ParseOptions::default()
            },
        ];
        for main in mains.iter().chain(&broken) {
            let main = main.to_str().unwrap();
            for options in &variants {
                let payload = crate::parse(main, options);
                for indent in [None, Some(4), Some(1)] {
                    let mut out = Vec::new();
                    let failed = write_json(main, None, options, indent, &mut out).unwrap();
                    let want = crate::to_json(&payload, indent);
                    assert_eq!(
                        String::from_utf8(out).unwrap(),
                        want,
                        "{main} {options:?} {indent:?}"
                    );
                    assert_eq!(failed, payload.status == crate::Status::Failed);
                }
                let mut out = Vec::new();
                write_summary(main, options, &mut out).unwrap();
                assert_eq!(String::from_utf8(out).unwrap(), payload.to_text(), "{main}");
            }
        }
    }
}
