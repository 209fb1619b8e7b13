//! From files to a [`Payload`], as `crossplane.parse()` builds it: every file read
//! (the main file, then each include in the order first met) is one `config`
//! entry; `include` statements record which entries they pulled in; errors are
//! collected, each with its file and line, and parsing goes on after them.
//!
//! What happens after an error is crossplane's, including its odd corners: a
//! block directive in the wrong context is not skipped (its body is read as
//! if it belonged to the enclosing block), and an error that escapes the statement
//! loop (a syntax error, end of file inside a statement) leaves that file's
//! `parsed` empty, keeping the errors and includes found before it.

use std::fs;
use std::io;

use crate::analyzer::{self, Checks};
use crate::glob;
use std::sync::mpsc;

use crate::lexer::{self, Token};
use crate::payload::{ConfigFile, FileError, Payload, PayloadError, Statement, Status};
use crate::python;

/// Blocks nested deeper than this end the file with an error instead of the stack.
const MAX_NESTING: usize = 512;

/// crossplane's `parse()` keyword arguments; [`Default`] is crossplane's default
/// (and `crossplane parse`'s with no flags).
#[derive(Debug, Clone)]
pub struct ParseOptions {
    /// Collect errors and go on (`catch_errors`; `--no-catch` turns it off: the
    /// first error ends that file).
    pub catch_errors: bool,
    /// Directives to leave out, blocks included (`--ignore`).
    pub ignore: Vec<String>,
    /// Do not follow includes (`--single-file`).
    pub single: bool,
    /// Keep comments as `{"directive": "#", "comment": ...}` (`--include-comments`).
    pub comments: bool,
    /// Unknown directives are errors (`--strict`).
    pub strict: bool,
    /// One config entry with includes spliced in (`--combine`).
    pub combine: bool,
    /// Check contexts (`check_ctx`).
    pub check_ctx: bool,
    /// Check argument counts and block-ness (`check_args`).
    pub check_args: bool,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            catch_errors: true,
            ignore: Vec::new(),
            single: false,
            comments: false,
            strict: false,
            combine: false,
            check_ctx: true,
            check_args: true,
        }
    }
}

/// An error that ends a file's statement loop (a Python exception reaching
/// crossplane's per-file `try`): its message and line.
#[derive(Debug)]
struct Fatal {
    error: String,
    line: Option<u64>,
}

/// `OSError.__str__`: `[Errno 2] No such file or directory: 'path'`.
fn os_error(err: &io::Error, path: &str) -> String {
    let code = err.raw_os_error().unwrap_or(libc::EIO);
    let text = io::Error::from_raw_os_error(code).to_string();
    let text = text.split(" (os error").next().unwrap_or(&text).to_string();
    format!("[Errno {code}] {text}: {}", python::repr(path))
}

/// Python's `open(path)` for reading: directories are errors too.
fn open_check(path: &str) -> io::Result<()> {
    let file = fs::File::open(path)?;
    if file.metadata()?.is_dir() {
        return Err(io::Error::from_raw_os_error(libc::EISDIR));
    }
    Ok(())
}

/// `NgxParserBaseException.__str__`.
fn located(reason: &str, file: &str, line: Option<u64>) -> String {
    match line {
        Some(l) => format!("{reason} in {file}:{l}"),
        None => format!("{reason} in {file}"),
    }
}

/// The token stream of one file, failing where crossplane's generator
/// raises. The lexer runs on a thread of its own and hands tokens over in
/// small batches as it cuts them, so a file's tokens are never all held at
/// once: memory stays near the file's size whatever the file (50 MB of
/// `{` once took 4.5 GB, docs/nginx.md).
struct Stream {
    batches: mpsc::Receiver<Lexed>,
    batch: std::vec::IntoIter<Token>,
    balance: lexer::Balance,
    /// The file, named in errors.
    path: String,
    done: bool,
}

/// What the lexer's thread sends.
enum Lexed {
    Tokens(Vec<Token>),
    /// The stream ended: with the lexer's error, if any.
    End(Option<lexer::LexError>),
}

/// Tokens per batch, and batches in flight.
const BATCH: usize = 512;
const IN_FLIGHT: usize = 4;

/// Why the stream gave no token.
enum Stop {
    /// A syntax error raised by the lexer.
    Error(Fatal),
    /// The stream is exhausted (Python's `StopIteration`).
    End,
}

/// A file's text, read as crossplane reads it (UTF-8, U+FFFD for invalid
/// bytes), copied only when it is not valid UTF-8.
fn read_text(path: &str) -> Result<String, Fatal> {
    let bytes = fs::read(path).map_err(|e| Fatal {
        error: os_error(&e, path),
        line: None,
    })?;
    Ok(String::from_utf8(bytes)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

impl Stream {
    /// The stream of `text`, read from `path` (named in its errors), its
    /// lexer started on a thread of `scope`; it stops when the stream is
    /// dropped.
    fn spawn<'scope>(
        scope: &'scope std::thread::Scope<'scope, '_>,
        text: &'scope str,
        path: &str,
    ) -> Stream {
        let (tx, rx) = mpsc::sync_channel(IN_FLIGHT);
        scope.spawn(move || {
            let mut batch = Vec::with_capacity(BATCH);
            let mut open = true;
            let error = lexer::lex_each(text, &mut |t| {
                batch.push(t);
                if batch.len() == BATCH {
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                    open = tx.send(Lexed::Tokens(full)).is_ok();
                }
                open
            });
            if open && tx.send(Lexed::Tokens(batch)).is_ok() {
                let _ = tx.send(Lexed::End(error));
            }
        });
        Stream {
            batches: rx,
            batch: Vec::new().into_iter(),
            balance: lexer::Balance::default(),
            path: path.to_string(),
            done: false,
        }
    }

    fn fatal(&self, e: lexer::LexError) -> Fatal {
        let file = if e.without_file { "None" } else { &self.path };
        Fatal {
            error: located(&e.reason, file, e.line),
            line: e.line,
        }
    }

    fn next(&mut self) -> Result<Token, Stop> {
        loop {
            if self.done {
                return Err(Stop::End);
            }
            if let Some(t) = self.batch.next() {
                if let Some(e) = self.balance.check(&t) {
                    self.done = true;
                    return Err(Stop::Error(self.fatal(e)));
                }
                return Ok(t);
            }
            match self.batches.recv() {
                Ok(Lexed::Tokens(v)) => self.batch = v.into_iter(),
                Ok(Lexed::End(error)) => {
                    self.done = true;
                    if let Some(e) = self.balance.end(error) {
                        return Err(Stop::Error(self.fatal(e)));
                    }
                }
                Err(_) => self.done = true,
            }
        }
    }

    /// `next(tokens)` inside a statement: running out there is an exception
    /// whose message is empty (`str(StopIteration())`) and has no line.
    fn next_in_statement(&mut self) -> Result<Token, Fatal> {
        self.next().map_err(|stop| match stop {
            Stop::Error(f) => f,
            Stop::End => Fatal {
                error: String::new(),
                line: None,
            },
        })
    }
}

/// Where the parser puts what it finds, as it finds it: the statements of
/// each file in order (a block's statements between its `open` and
/// `close`), and the errors. A [`Tree`] builds the [`Payload`]; the writers
/// of `crate::stream` print crossplane's JSON from it without holding the
/// configuration.
pub(crate) trait Sink {
    /// File `index` of the payload begins.
    fn file(&mut self, index: usize, name: &str);
    /// A statement of the current block; `opens`: its block's statements
    /// follow, up to the matching `close`.
    fn statement(&mut self, stmt: Statement, opens: bool);
    fn close(&mut self);
    /// An error of the file being parsed (`file` names it).
    fn error(&mut self, file: &str, error: &str, line: Option<u64>);
    /// An error ended the file: its statements are dropped (crossplane
    /// leaves its `parsed` empty).
    fn fatal(&mut self);
}

/// The [`Payload`], built in memory.
#[derive(Default)]
pub(crate) struct Tree {
    payload: Payload,
    /// The current file's errors; its statements, one list per open block.
    errors: Vec<FileError>,
    open: Vec<(Statement, Vec<Statement>)>,
    parsed: Vec<Statement>,
}

impl Tree {
    /// Ends the current file, if any.
    fn end_file(&mut self) {
        let Some(last) = self.payload.config.last_mut() else {
            return;
        };
        last.status = if self.errors.is_empty() {
            Status::Ok
        } else {
            Status::Failed
        };
        last.errors = std::mem::take(&mut self.errors);
        last.parsed = std::mem::take(&mut self.parsed);
        self.open.clear();
    }

    fn into_payload(mut self) -> Payload {
        self.end_file();
        self.payload
    }
}

impl Sink for Tree {
    fn file(&mut self, _index: usize, name: &str) {
        self.end_file();
        self.payload.config.push(ConfigFile {
            file: name.to_string(),
            status: Status::Ok,
            errors: Vec::new(),
            parsed: Vec::new(),
        });
    }
    fn statement(&mut self, stmt: Statement, opens: bool) {
        if opens {
            self.open.push((stmt, Vec::new()));
        } else {
            match self.open.last_mut() {
                Some((_, inner)) => inner.push(stmt),
                None => self.parsed.push(stmt),
            }
        }
    }
    fn close(&mut self) {
        if let Some((mut stmt, inner)) = self.open.pop() {
            stmt.block = Some(inner);
            self.statement(stmt, false);
        }
    }
    fn error(&mut self, file: &str, error: &str, line: Option<u64>) {
        self.errors.push(FileError {
            error: error.to_string(),
            line,
        });
        self.payload.status = Status::Failed;
        self.payload.errors.push(PayloadError {
            file: file.to_string(),
            error: error.to_string(),
            line,
        });
    }
    fn fatal(&mut self) {
        self.open.clear();
        self.parsed.clear();
    }
}

/// A file in the order it was first included, and the context it was
/// included in.
pub(crate) type Include = (String, Vec<String>);

pub(crate) struct Parser<'a> {
    options: &'a ParseOptions,
    config_dir: String,
    /// `(file, context)` of every file to parse, in order; grows while parsing.
    pub(crate) includes: Vec<Include>,
    /// The main file's text, when given rather than read.
    main_text: Option<&'a str>,
    /// The file being parsed.
    file: String,
    /// Whether any error was found (the payload's status).
    pub(crate) failed: bool,
    sink: &'a mut dyn Sink,
}

/// Parses `path` and everything it includes.
pub fn parse(path: &str, options: &ParseOptions) -> Payload {
    parse_from(path, None, options)
}

/// Parses `text` as if it were the contents of the file `path`, which need
/// not exist: the payload [`parse`] makes once it has read `path` (its
/// includes are still read from disk, relative to `path`, unless
/// `options.single`). For callers that hold the text already, and fuzzing.
pub fn parse_text(path: &str, text: &str, options: &ParseOptions) -> Payload {
    parse_from(path, Some(text), options)
}

/// [`parse`], with the main file's text given (`Some`) or read from `path`.
fn parse_from(path: &str, main_text: Option<&str>, options: &ParseOptions) -> Payload {
    let mut tree = Tree::default();
    let mut p = Parser::new(path, main_text, options, &mut tree);
    p.parse_all();
    let payload = tree.into_payload();
    if options.combine {
        crate::combine::combine(payload)
    } else {
        payload
    }
}

impl<'a> Parser<'a> {
    pub(crate) fn new(
        path: &str,
        main_text: Option<&'a str>,
        options: &'a ParseOptions,
        sink: &'a mut dyn Sink,
    ) -> Self {
        let (config_dir, _) = glob::split(path);
        Parser {
            options,
            config_dir: config_dir.to_string(),
            includes: vec![(path.to_string(), Vec::new())],
            main_text,
            file: String::new(),
            failed: false,
            sink,
        }
    }

    /// Every file, the main one first, then each include as first met.
    pub(crate) fn parse_all(&mut self) {
        let mut i = 0;
        while i < self.includes.len() {
            self.parse_file(i);
            i += 1;
        }
    }

    /// Parses file `i` of `includes` into the sink.
    pub(crate) fn parse_file(&mut self, i: usize) {
        let (file, ctx) = self.includes[i].clone();
        self.file = file.clone();
        self.sink.file(i, &file);
        let text = match self.main_text {
            Some(text) if i == 0 => Ok(std::borrow::Cow::Borrowed(text)),
            _ => read_text(&file).map(std::borrow::Cow::Owned),
        };
        let parsed = match &text {
            Ok(text) => std::thread::scope(|scope| {
                let mut stream = Stream::spawn(scope, text, &file);
                self.block(&mut stream, &ctx, false, 0)
            }),
            Err(fatal) => Err(Fatal {
                error: fatal.error.clone(),
                line: fatal.line,
            }),
        };
        drop(text);
        if let Err(fatal) = parsed {
            self.error(fatal.error, fatal.line);
            self.sink.fatal();
        }
    }
}

impl Parser<'_> {
    /// `_handle_error`.
    fn error(&mut self, error: String, line: Option<u64>) {
        self.failed = true;
        self.sink.error(&self.file, &error, line);
    }

    /// `_parse`: the statements up to the `}` closing this block (or the end).
    fn block(
        &mut self,
        s: &mut Stream,
        ctx: &[String],
        consume: bool,
        depth: usize,
    ) -> Result<(), Fatal> {
        if depth > MAX_NESTING {
            // crossplane dies of Python's recursion limit here; tare ends the file.
            return Err(Fatal {
                error: "maximum recursion depth exceeded".into(),
                line: None,
            });
        }
        // crossplane's `fname`: the file being parsed, until an `include` in this
        // block rebinds it to the last file matched (its loop variable has the same
        // name); later statements of the block then carry that file in their error
        // messages and `--combine` locations. Kept, for identical output.
        let mut fname = self.file.clone();
        loop {
            let tok = match s.next() {
                Ok(t) => t,
                Err(Stop::End) => return Ok(()),
                Err(Stop::Error(f)) => return Err(f),
            };
            if tok.text == "}" && !tok.quoted {
                break;
            }
            if consume {
                if tok.text == "{" && !tok.quoted {
                    self.block(s, &[], true, depth + 1)?;
                }
                continue;
            }

            let mut stmt = Statement {
                file: self.options.combine.then(|| fname.clone()),
                directive: tok.text.clone(),
                line: tok.line,
                ..Statement::default()
            };
            if tok.text.starts_with('#') && !tok.quoted {
                if self.options.comments {
                    stmt.directive = "#".into();
                    stmt.comment = Some(tok.text[1..].to_string());
                    self.sink.statement(stmt, false);
                }
                continue;
            }

            let (term, comments_in_args) = arguments(s, &mut stmt)?;
            let opens_block = term.text == "{";

            if self.options.ignore.contains(&stmt.directive) {
                if opens_block {
                    self.block(s, &[], true, depth + 1)?;
                }
                continue;
            }

            if stmt.directive == "if" {
                prepare_if_args(&mut stmt.args);
            }

            match self.analyzed(s, &stmt, &term.text, ctx, &fname, depth)? {
                Analyzed::Valid => {}
                Analyzed::Skip => continue,
                Analyzed::Close => break,
            }

            if !self.options.single && stmt.directive == "include" {
                let (indexes, last) = self.include(&stmt, ctx)?;
                if let Some(last) = last {
                    fname = last;
                }
                stmt.includes = Some(indexes);
            }

            let line = stmt.line;
            if opens_block {
                let inner = analyzer::enter_block(&stmt.directive, ctx);
                self.sink.statement(stmt, true);
                self.block(s, &inner, false, depth + 1)?;
                self.sink.close();
            } else {
                self.sink.statement(stmt, false);
            }
            for comment in comments_in_args {
                self.sink.statement(
                    Statement {
                        directive: "#".into(),
                        line,
                        comment: Some(comment),
                        ..Statement::default()
                    },
                    false,
                );
            }
        }
        Ok(())
    }

    /// The analyzer's verdict on `stmt` (ended by `term`): an error ends
    /// the file, or (catching errors) is recorded and the statement
    /// skipped, with the block it opens; an unterminated statement at a
    /// `}` closes the block.
    fn analyzed(
        &mut self,
        s: &mut Stream,
        stmt: &Statement,
        term: &str,
        ctx: &[String],
        fname: &str,
        depth: usize,
    ) -> Result<Analyzed, Fatal> {
        let checks = Checks {
            strict: self.options.strict,
            context: self.options.check_ctx,
            arguments: self.options.check_args,
        };
        let Err(e) = analyzer::analyze(&stmt.directive, &stmt.args, term, ctx, checks) else {
            return Ok(Analyzed::Valid);
        };
        let message = located(&e.reason, fname, Some(stmt.line));
        if !self.options.catch_errors {
            return Err(Fatal {
                error: message,
                line: Some(stmt.line),
            });
        }
        self.error(message, Some(stmt.line));
        if e.reason.ends_with(" is not terminated by \";\"") {
            if term != "}" {
                self.block(s, &[], true, depth + 1)?;
            } else {
                return Ok(Analyzed::Close);
            }
        }
        Ok(Analyzed::Skip)
    }

    /// Resolves an `include`: the indexes of the files it names, queued for parsing
    /// in the including context.
    /// Also returns the last file name matched (see `fname` in [`Parser::block`]).
    fn include(
        &mut self,
        stmt: &Statement,
        ctx: &[String],
    ) -> Result<(Vec<usize>, Option<String>), Fatal> {
        let Some(arg) = stmt.args.first() else {
            // Only reachable where the analyzer does not look (e.g. inside `map`).
            return Err(Fatal {
                error: "list index out of range".into(),
                line: None,
            });
        };
        let pattern = if arg.starts_with('/') {
            arg.clone()
        } else {
            glob::join(&self.config_dir, arg)
        };
        let files = if glob::has_magic(&pattern) {
            glob::glob(&pattern)
        } else {
            match open_check(&pattern) {
                Ok(()) => vec![pattern],
                Err(e) => {
                    let error = os_error(&e, &pattern);
                    if !self.options.catch_errors {
                        return Err(Fatal {
                            error,
                            line: Some(stmt.line),
                        });
                    }
                    self.error(error, Some(stmt.line));
                    Vec::new()
                }
            }
        };
        let mut indexes = Vec::new();
        let last = files.last().cloned();
        for file in files {
            let index = match self.includes.iter().position(|(f, _)| *f == file) {
                Some(i) => i,
                None => {
                    self.includes.push((file, ctx.to_vec()));
                    self.includes.len() - 1
                }
            };
            indexes.push(index);
        }
        Ok((indexes, last))
    }
}

/// `_prepare_if_args`: strips the parentheses of `if (...)`.
fn prepare_if_args(args: &mut Vec<String>) {
    let (Some(first), Some(last)) = (args.first(), args.last()) else {
        return;
    };
    if !(first.starts_with('(') && last.ends_with(')')) {
        return;
    }
    let first: String = args[0].chars().skip(1).collect();
    args[0] = first.trim_start_matches(python::is_space).to_string();
    let n = args.len();
    let mut last: Vec<char> = args[n - 1].chars().collect();
    last.pop();
    let last: String = last.into_iter().collect();
    args[n - 1] = last.trim_end_matches(python::is_space).to_string();
    let start = usize::from(args[0].is_empty());
    let end = n - usize::from(args[n - 1].is_empty());
    *args = if start < end {
        args[start..end].to_vec()
    } else {
        Vec::new()
    };
}

/// What the analyzer's verdict leaves a block to do with a statement.
enum Analyzed {
    Valid,
    /// An error caught: the statement is dropped.
    Skip,
    /// An error caught at the block's `}`: the block ends.
    Close,
}

/// A statement's arguments, up to the `{`, `;` or `}` that ends it
/// (returned), with the comments among them.
fn arguments(s: &mut Stream, stmt: &mut Statement) -> Result<(Token, Vec<String>), Fatal> {
    let mut comments_in_args = Vec::new();
    let mut term = s.next_in_statement()?;
    while term.quoted || !matches!(term.text.as_str(), "{" | ";" | "}") {
        if term.text.starts_with('#') && !term.quoted {
            comments_in_args.push(term.text[1..].to_string());
        } else {
            stmt.args.push(term.text);
        }
        term = s.next_in_statement()?;
    }
    Ok((term, comments_in_args))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    }

    #[test]
    fn includes_are_indexed_once_and_parsed_in_their_context() {
        let dir = tempfile::tempdir().unwrap();
        let main = write(
            dir.path(),
            "nginx.conf",
            "events {}\nhttp {\n  include conf.d/*.conf;\n  include conf.d/b.conf;\n}\n",
        );
        write(dir.path(), "conf.d/a.conf", "gzip on;\n");
        write(dir.path(), "conf.d/b.conf", "listen 80;\n");
        let p = parse(&main, &ParseOptions::default());
        let http = p.config[0].parsed[1].block.as_ref().unwrap();
        assert_eq!(http[0].includes, Some(vec![1, 2]));
        assert_eq!(http[1].includes, Some(vec![2]));
        assert!(p.config[1].file.ends_with("conf.d/a.conf"));
        // `listen` in http context (where b.conf was included) is an error of b.conf.
        assert_eq!(p.status, Status::Failed);
        assert_eq!(p.errors.len(), 1);
        assert!(p.errors[0].file.ends_with("conf.d/b.conf"));
        assert_eq!(p.errors[0].line, Some(1));
    }

    #[test]
    fn missing_include_is_an_error_on_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let main = write(
            dir.path(),
            "nginx.conf",
            "events {}\n\ninclude nope.conf;\n",
        );
        let p = parse(&main, &ParseOptions::default());
        assert_eq!(p.errors[0].line, Some(3));
        assert!(p.errors[0]
            .error
            .starts_with("[Errno 2] No such file or directory: '"));
        assert_eq!(p.config[0].parsed[1].includes, Some(vec![]));
    }

    #[test]
    fn syntax_error_empties_the_file_but_keeps_its_errors() {
        let dir = tempfile::tempdir().unwrap();
        let main = write(dir.path(), "nginx.conf", "worker_processes;\nhttp {\n");
        let p = parse(&main, &ParseOptions::default());
        assert!(p.config[0].parsed.is_empty());
        let lines: Vec<Option<u64>> = p.errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, vec![Some(1), Some(2)]);
        assert!(p.errors[1]
            .error
            .starts_with("unexpected end of file, expecting \"}\" in "));
    }

    #[test]
    fn text_parses_as_the_file_holding_it() {
        let dir = tempfile::tempdir().unwrap();
        let text = "events {}\nhttp {\n  include conf.d/*.conf;\n  server { listen 80 }\n}\n";
        let main = write(dir.path(), "nginx.conf", text);
        write(dir.path(), "conf.d/a.conf", "gzip on;\n");
        let options = ParseOptions::default();
        assert_eq!(
            crate::to_json(&parse_text(&main, text, &options), None),
            crate::to_json(&parse(&main, &options), None)
        );
        // The file need not exist; errors name it.
        let p = parse_text("/nowhere/nginx.conf", "http {\n", &options);
        assert!(
            p.errors[0].error.ends_with(" in /nowhere/nginx.conf:1"),
            "{:?}",
            p.errors
        );
    }

    #[test]
    fn if_loses_its_parentheses() {
        let mut args = vec!["($a".to_string(), "=".into(), "b)".into()];
        prepare_if_args(&mut args);
        assert_eq!(args, ["$a", "=", "b"]);
        let mut args = vec!["(".to_string(), "-f".into(), "$x".into(), ")".into()];
        prepare_if_args(&mut args);
        assert_eq!(args, ["-f", "$x"]);
    }
}
