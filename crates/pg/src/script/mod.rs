//! Scripts in pgbench's language: SQL commands ended by `;`, `:var`
//! substitution, and the meta commands `\set` and `\sleep`.
//!
//! - `expr`: the `\set` expression language and its evaluation.
//! - `random`: the per-client generator and pgbench's distributions.
//! - `vars`: variable names interned to dense ids.
//! - `builtin`: `tpcb-like`, `simple-update`, `select-only`.
//!
//! A script is parsed once into `Command`s; every SQL command keeps both
//! forms pgbench sends: the text with `:var` substituted (simple mode) and the
//! text with `$n` parameters (extended and prepared modes).

pub(crate) mod builtin;
pub(crate) mod expr;
pub(crate) mod random;
pub(crate) mod vars;

use std::fmt;
use std::ops::Range;

use expr::Expr;
use vars::{is_name_byte, VarId, Vars};

/// A script that does not parse: file, line and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    pub file: String,
    pub line: u32,
    pub message: String,
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

impl std::error::Error for ScriptError {}

#[derive(Clone, Debug)]
pub(crate) struct Script {
    /// The file name as given, or the built-in's description.
    pub name: String,
    pub weight: u32,
    pub commands: Vec<Command>,
}

#[derive(Clone, Debug)]
pub(crate) struct Command {
    /// 1-based line where the command starts.
    pub line: u32,
    /// The command's first line, as pgbench prints it under `-r`.
    pub first_line: String,
    pub kind: CommandKind,
}

#[derive(Clone, Debug)]
pub(crate) enum CommandKind {
    Sql(Sql),
    Set {
        var: VarId,
        expr: Expr,
    },
    Sleep {
        amount: SleepAmount,
        unit_ns: u64,
    },
    /// `\if`, `\elif`: when false, go on at `next` (the next `\elif`,
    /// `\else` or `\endif` of the same block).
    If {
        expr: Expr,
        next: usize,
    },
    Elif {
        expr: Expr,
        next: usize,
        endif: usize,
    },
    /// `\else`: reached after a taken branch, it jumps to `endif`.
    Else {
        endif: usize,
    },
    Endif,
    /// `\shell` (`into` = None) or `\setshell VAR`: the words, with
    /// `:var` substituted, run by `sh -c`.
    Shell {
        into: Option<VarId>,
        words: Vec<ShellWord>,
    },
    /// `\startpipeline`, `\endpipeline`: the SQL between is sent in one
    /// batch, one Sync at the end (extended and prepared modes only).
    StartPipeline,
    EndPipeline,
    /// A command pgbench accepts when parsing and refuses when run
    /// (`\set . 1`: the name is checked when assigned).
    Fail(String),
}

#[derive(Clone, Debug)]
pub(crate) enum ShellWord {
    Lit(String),
    Var(VarId, String),
}

/// `\gset [prefix]` or `\aset [prefix]` after an SQL command: store the
/// result's columns as variables (`\gset`: the last result, exactly one
/// row; `\aset`: every row of every result, the last one wins).
#[derive(Clone, Debug)]
pub(crate) struct Gset {
    pub prefix: String,
    pub all: bool,
}

#[derive(Clone, Debug)]
pub(crate) enum SleepAmount {
    Const(i64),
    Var(VarId),
}

/// One SQL command in both forms.
#[derive(Clone, Debug)]
pub(crate) struct Sql {
    /// The command as written.
    pub text: String,
    /// Simple mode: literal ranges of `text` and variables between them.
    pub pieces: Vec<Piece>,
    /// Extended and prepared modes: `text` with each `:var` replaced by `$n`.
    pub parameterized: String,
    /// The variable behind each `$n`, in order.
    pub params: Vec<VarId>,
    /// `\gset` / `\aset` after the command.
    pub gset: Option<Gset>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Piece {
    Lit(Range<usize>),
    /// A variable, and the `:name` text kept if it is undefined at run time
    /// (pgbench leaves unknown names alone in simple mode).
    Var(VarId, Range<usize>),
}

impl Sql {
    /// pgbench's `parseQuery`: every `:name` is a variable (even inside
    /// quotes); runs of colons (`::type` casts) are skipped.
    fn new(text: String, vars: &mut Vars) -> Sql {
        let b = text.as_bytes();
        let (mut pieces, mut params) = (Vec::new(), Vec::new());
        let mut parameterized = String::with_capacity(text.len());
        let (mut i, mut lit) = (0, 0);
        while i < b.len() {
            if b[i] != b':' {
                i += 1;
                continue;
            }
            let mut j = i + 1;
            while j < b.len() && is_name_byte(b[j]) {
                j += 1;
            }
            if j == i + 1 {
                while i < b.len() && b[i] == b':' {
                    i += 1;
                }
                continue;
            }
            let id = vars.intern(&text[i + 1..j]);
            pieces.push(Piece::Lit(lit..i));
            pieces.push(Piece::Var(id, i..j));
            params.push(id);
            parameterized.push_str(&text[lit..i]);
            parameterized.push('$');
            parameterized.push_str(&params.len().to_string());
            (i, lit) = (j, j);
        }
        pieces.push(Piece::Lit(lit..b.len()));
        pieces.retain(|p| !matches!(p, Piece::Lit(r) if r.is_empty()));
        parameterized.push_str(&text[lit..]);
        Sql {
            text,
            pieces,
            parameterized,
            params,
            gset: None,
        }
    }
}

/// Splits `spec` (`file@weight`) into its parts; no `@N` suffix means weight 1.
/// The built-in scripts: (name, description), as `-b list` shows them.
pub fn builtins() -> Vec<(&'static str, &'static str)> {
    builtin::BUILTINS.iter().map(|b| (b.name, b.desc)).collect()
}

/// A built-in script by name or unambiguous prefix: (name, description, text).
pub fn builtin(name: &str) -> Result<(&'static str, &'static str, &'static str), String> {
    builtin::find(name).map(|b| (b.name, b.desc, b.script))
}

/// pgbench's messages: `invalid weight specification: @x`, and a weight
/// outside 0..=2147483647 is out of range.
pub fn split_weight(spec: &str) -> Result<(&str, u32), String> {
    let Some((name, w)) = spec.rsplit_once('@') else {
        return Ok((spec, 1));
    };
    let n: i64 = w
        .trim()
        .parse()
        .map_err(|_| format!("invalid weight specification: @{w}"))?;
    if !(0..=i32::MAX as i64).contains(&n) {
        return Err(format!(
            "weight specification out of range (0 .. {}): {n}",
            i32::MAX
        ));
    }
    Ok((name, n as u32))
}

/// Parses a whole script. `name` is used in errors and in the report.
pub(crate) fn parse(
    name: &str,
    text: &str,
    weight: u32,
    vars: &mut Vars,
) -> Result<Script, ScriptError> {
    let fail = |line: u32, message: String| ScriptError {
        file: name.to_string(),
        line,
        message,
    };
    let mut commands: Vec<Command> = Vec::new();
    let mut lexer = Lexer {
        src: text,
        pos: 0,
        line: 1,
    };
    let mut ifs = IfStack::default();
    while let Some((line, raw)) = lexer.next_command().map_err(|(l, m)| fail(l, m))? {
        let first_line = raw.lines().next().unwrap_or("").trim_end().to_string();
        let kind = if let Some(meta) = raw.strip_prefix('\\') {
            match meta_command(meta, vars).map_err(|m| fail(line, m))? {
                Meta::Gset(g) => {
                    attach_gset(&mut commands, g).map_err(|m| fail(line, m))?;
                    continue;
                }
                Meta::Kind(k) => k,
            }
        } else {
            CommandKind::Sql(Sql::new(raw, vars))
        };
        ifs.track(&mut commands, &kind).map_err(|m| fail(line, m))?;
        commands.push(Command {
            line,
            first_line,
            kind,
        });
    }
    if !ifs.open.is_empty() {
        return Err(fail(lexer.line, "\\if without matching \\endif".into()));
    }
    if commands.is_empty() {
        return Err(fail(
            lexer.line,
            format!("empty command list for script \"{name}\""),
        ));
    }
    Ok(Script {
        name: name.to_string(),
        weight,
        commands,
    })
}

enum Meta {
    Kind(CommandKind),
    Gset(Gset),
}

/// `\gset`/`\aset` belongs to the SQL command just before it.
fn attach_gset(commands: &mut [Command], g: Gset) -> Result<(), String> {
    let what = if g.all { "aset" } else { "gset" };
    match commands.last_mut().map(|c| &mut c.kind) {
        Some(CommandKind::Sql(sql)) if sql.gset.is_none() => {
            sql.gset = Some(g);
            Ok(())
        }
        _ => Err(format!("\\{what} must follow an SQL command")),
    }
}

/// Open `\if` blocks while parsing: the index of the command whose `next`
/// waits for the following branch, the block's branches (to patch their
/// `endif`), and whether `\else` was seen.
#[derive(Default)]
struct IfStack {
    open: Vec<(usize, Vec<usize>, bool)>,
}

impl IfStack {
    fn track(&mut self, commands: &mut [Command], kind: &CommandKind) -> Result<(), String> {
        let here = commands.len();
        let set_next = |commands: &mut [Command], at: usize| match &mut commands[at].kind {
            CommandKind::If { next, .. } | CommandKind::Elif { next, .. } => *next = here,
            _ => {}
        };
        match kind {
            CommandKind::If { .. } => self.open.push((here, Vec::new(), false)),
            CommandKind::Elif { .. } | CommandKind::Else { .. } => {
                let is_else = matches!(kind, CommandKind::Else { .. });
                let what = if is_else { "else" } else { "elif" };
                let Some((pending, branches, seen_else)) = self.open.last_mut() else {
                    return Err(format!("\\{what} without matching \\if"));
                };
                if *seen_else {
                    return Err(format!("\\{what} after \\else"));
                }
                set_next(commands, *pending);
                *pending = here;
                branches.push(here);
                *seen_else = is_else;
            }
            CommandKind::Endif => {
                let (pending, branches, _) =
                    self.open.pop().ok_or("\\endif without matching \\if")?;
                set_next(commands, pending);
                for b in branches {
                    if let CommandKind::Elif { endif, .. } | CommandKind::Else { endif } =
                        &mut commands[b].kind
                    {
                        *endif = here;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// pgbench's form of a syntax error in a meta command's expression: the
/// message, the command, then the line and a caret under the column.
fn expr_error(cmd: &str, line: &str, offset: usize, e: expr::SyntaxError) -> String {
    let col = offset + e.at + 1;
    format!(
        "{} in command \"{cmd}\"\n{line}\n{}^ error found here",
        e.message,
        " ".repeat(col)
    )
}

/// Parses the expression of `\set`, `\if`, `\elif` (`rest` starts at
/// byte `offset` of the command's text).
fn meta_expr(cmd: &str, meta: &str, rest: &str, vars: &mut Vars) -> Result<Expr, String> {
    let offset = meta.len() - rest.len();
    expr::parse(rest, vars).map_err(|e| {
        if e.message == "syntax error" || e.at > 0 || e.message.starts_with("unexpected") {
            expr_error(cmd, &format!("\\{meta}"), offset, e)
        } else {
            format!("{} in command \"{cmd}\"", e.message)
        }
    })
}

/// The text after the first `n` words of `meta`.
fn after_words(meta: &str, n: usize) -> &str {
    let mut rest = meta.trim_start();
    for _ in 0..n {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        rest = rest[end..].trim_start();
    }
    rest
}

/// pgbench's `MAX_ARGS`: words of a meta command, its name included.
const MAX_ARGS: usize = 256;

fn meta_command(meta: &str, vars: &mut Vars) -> Result<Meta, String> {
    // Backslash-newline continues a meta command onto the next line.
    let meta = meta.replace("\\\r\n", " ").replace("\\\n", " ");
    let meta = meta.as_str();
    let words: Vec<&str> = meta.split_whitespace().collect();
    let cmd = words.first().copied().unwrap_or("").to_ascii_lowercase();
    let missing = || format!("missing argument in command \"{cmd}\"");
    let kind = match cmd.as_str() {
        "set" => {
            let var = *words.get(1).ok_or_else(missing)?;
            let expr = meta_expr("set", meta, after_words(meta, 2), vars)?;
            if var.is_empty() || !var.bytes().all(is_name_byte) {
                // pgbench checks the name when it assigns (exit status 2).
                return Ok(Meta::Kind(CommandKind::Fail(format!(
                    "invalid variable name: \"{var}\""
                ))));
            }
            CommandKind::Set {
                var: vars.intern(var),
                expr,
            }
        }
        "if" | "elif" => {
            let expr = meta_expr(&cmd, meta, after_words(meta, 1), vars)?;
            if cmd == "if" {
                CommandKind::If { expr, next: 0 }
            } else {
                CommandKind::Elif {
                    expr,
                    next: 0,
                    endif: 0,
                }
            }
        }
        "else" | "endif" => {
            if words.len() > 1 {
                return Err(format!("unexpected argument in command \"{cmd}\""));
            }
            if cmd == "else" {
                CommandKind::Else { endif: 0 }
            } else {
                CommandKind::Endif
            }
        }
        "gset" | "aset" => {
            if words.len() > 2 {
                return Err(format!("too many arguments in command \"{cmd}\""));
            }
            return Ok(Meta::Gset(Gset {
                prefix: words.get(1).unwrap_or(&"").to_string(),
                all: cmd == "aset",
            }));
        }
        "shell" | "setshell" => {
            if words.len() > MAX_ARGS {
                return Err(format!("too many arguments in command \"{cmd}\""));
            }
            let (into, first) = if cmd == "setshell" {
                if words.len() < 3 {
                    return Err(missing());
                }
                (Some(vars.intern(words[1])), 2)
            } else {
                if words.len() < 2 {
                    return Err(format!("missing command in command \"{cmd}\""));
                }
                (None, 1)
            };
            let words = words[first..]
                .iter()
                .map(|w| match w.strip_prefix(':') {
                    Some(v) if !v.starts_with(':') => ShellWord::Var(vars.intern(v), w.to_string()),
                    Some(v) => ShellWord::Lit(v.to_string()),
                    None => ShellWord::Lit(w.to_string()),
                })
                .collect();
            CommandKind::Shell { into, words }
        }
        "sleep" => sleep_command(&words, vars)?,
        "startpipeline" | "endpipeline" => {
            if words.len() > 1 {
                return Err(format!("unexpected argument in command \"{cmd}\""));
            }
            if cmd == "startpipeline" {
                CommandKind::StartPipeline
            } else {
                CommandKind::EndPipeline
            }
        }
        _ => {
            return Err(format!(
                "invalid command in command \"{}\"",
                words.first().unwrap_or(&"")
            ))
        }
    };
    Ok(Meta::Kind(kind))
}

fn sleep_command(words: &[&str], vars: &mut Vars) -> Result<CommandKind, String> {
    if let Some(extra) = words.get(3) {
        return Err(format!(
            "too many arguments in command \"sleep\" (\"{extra}\")"
        ));
    }
    let amount = *words
        .get(1)
        .ok_or("missing argument in command \"sleep\"")?;
    let mut unit = words.get(2).copied();
    let amount = if let Some(v) = amount.strip_prefix(':') {
        SleepAmount::Var(vars.intern(v))
    } else {
        // pgbench splits `2ms` into a number and its unit when no unit
        // follows (its process_backslash_command).
        let unsigned = amount
            .strip_prefix(|c| c == '+' || c == '-')
            .unwrap_or(amount);
        let sign = amount.len() - unsigned.len();
        let digits = unsigned.bytes().take_while(u8::is_ascii_digit).count();
        let (number, rest) = amount.split_at(sign + digits);
        let number = if !rest.is_empty() && unit.is_none() && digits > 0 {
            unit = Some(rest);
            number
        } else {
            amount
        };
        SleepAmount::Const(
            number
                .parse()
                .map_err(|_| format!("invalid sleep time \"{amount}\"; must be an integer"))?,
        )
    };
    let unit_ns = match unit.map(|u| u.to_ascii_lowercase()) {
        None => 1_000_000_000,
        Some(u) if u == "s" => 1_000_000_000,
        Some(u) if u == "ms" => 1_000_000,
        Some(u) if u == "us" => 1_000,
        Some(u) => {
            return Err(format!(
                "unrecognized time unit \"{u}\", must be us, ms or s"
            ))
        }
    };
    if let Some(extra) = words.get(3) {
        return Err(format!(
            "too many arguments in command \"sleep\" (\"{extra}\")"
        ));
    }
    Ok(CommandKind::Sleep { amount, unit_ns })
}

/// Splits script text into commands: meta commands are one line (plus
/// backslash continuations); SQL runs to a `;` outside quotes, comments and
/// parentheses, or to the end of the file.
struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    line: u32,
}

impl Lexer<'_> {
    fn bump(&mut self) -> Option<u8> {
        let c = *self.src.as_bytes().get(self.pos)?;
        self.pos += 1;
        if c == b'\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn peek(&self, ahead: usize) -> Option<u8> {
        self.src.as_bytes().get(self.pos + ahead).copied()
    }

    /// Skips whitespace and comments between commands.
    fn skip_blank(&mut self) {
        loop {
            match (self.peek(0), self.peek(1)) {
                (Some(c), _) if c.is_ascii_whitespace() => {
                    self.bump();
                }
                (Some(b'-'), Some(b'-')) => {
                    while !matches!(self.peek(0), None | Some(b'\n')) {
                        self.bump();
                    }
                }
                _ => return,
            }
        }
    }

    fn next_command(&mut self) -> Result<Option<(u32, String)>, (u32, String)> {
        self.skip_blank();
        let (start, line) = (self.pos, self.line);
        match self.peek(0) {
            None => return Ok(None),
            Some(b'\\') if self.peek(1) != Some(b';') => {
                while let Some(c) = self.bump() {
                    if c == b'\\' && self.peek(0) == Some(b'\n') {
                        self.bump();
                    } else if c == b'\\'
                        && self.peek(0) == Some(b'\r')
                        && self.peek(1) == Some(b'\n')
                    {
                        self.bump();
                        self.bump();
                    } else if c == b'\n' {
                        break;
                    }
                }
                return Ok(Some((line, self.src[start..self.pos].trim().to_string())));
            }
            Some(_) => {}
        }
        let mut depth = 0i32;
        // `\;` joins SQL commands into one (sent as `;`); any other
        // backslash ends the SQL and starts a meta command (`\gset`).
        let mut joins = Vec::new();
        while let Some(c) = self.bump() {
            match c {
                b'\\' if self.peek(0) == Some(b';') => {
                    joins.push(self.pos - 1 - start);
                    self.bump();
                }
                b'\\' => {
                    self.pos -= 1;
                    break;
                }
                b'$' if self.pos >= 2 && is_name_byte(self.src.as_bytes()[self.pos - 2]) => {}
                b'$' => self.dollar_quote()?,
                b'\'' | b'"' => {
                    let open = self.line;
                    loop {
                        match self.bump() {
                            None => {
                                return Err((
                                    open,
                                    format!(
                                        "unterminated quoted {}",
                                        if c == b'"' { "identifier" } else { "string" }
                                    ),
                                ))
                            }
                            Some(q) if q == c && self.peek(0) == Some(c) => {
                                self.bump();
                            }
                            Some(q) if q == c => break,
                            Some(_) => {}
                        }
                    }
                }
                b'-' if self.peek(0) == Some(b'-') => {
                    while !matches!(self.peek(0), None | Some(b'\n')) {
                        self.bump();
                    }
                }
                b'/' if self.peek(0) == Some(b'*') => {
                    let open = self.line;
                    self.bump();
                    loop {
                        match self.bump() {
                            None => return Err((open, "unterminated /* comment".into())),
                            Some(b'*') if self.peek(0) == Some(b'/') => {
                                self.bump();
                                break;
                            }
                            Some(_) => {}
                        }
                    }
                }
                b'(' => depth += 1,
                b')' => depth -= 1,
                b';' if depth <= 0 => break,
                _ => {}
            }
        }
        let mut text = self.src[start..self.pos].to_string();
        for at in joins.into_iter().rev() {
            text.replace_range(at..at + 2, ";");
        }
        Ok(Some((line, text.trim().to_string())))
    }

    /// After a `$`: a dollar quote (`$$...$$`, `$tag$...$tag$`) is skipped
    /// whole; anything else (`$1`) is left alone.
    fn dollar_quote(&mut self) -> Result<(), (u32, String)> {
        let b = self.src.as_bytes();
        let mut end = self.pos;
        while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_' || b[end] >= 0x80)
        {
            end += 1;
        }
        let starts_ok = b.get(self.pos).is_none_or(|c| !c.is_ascii_digit());
        if end >= b.len() || b[end] != b'$' || !starts_ok {
            return Ok(());
        }
        let delim = &self.src[self.pos - 1..=end];
        let open = self.line;
        let body_from = end + 1;
        match self.src[body_from..].find(delim) {
            Some(i) => {
                while self.pos < body_from + i + delim.len() {
                    self.bump();
                }
                Ok(())
            }
            None => Err((open, "unterminated dollar-quoted string".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(text: &str) -> (Script, Vars) {
        let mut vars = Vars::default();
        let s = parse("t.sql", text, 1, &mut vars).unwrap();
        (s, vars)
    }

    #[test]
    fn splits_sql_and_meta_commands_with_lines() {
        let (s, _) = parse_ok(
            "-- a comment\n\\set aid random(1, 10)\nselect 'a;b' from t\n  where x = (1;2);\n\\sleep 5 ms\nselect 1; select 2",
        );
        let lines: Vec<u32> = s.commands.iter().map(|c| c.line).collect();
        assert_eq!(lines, vec![2, 3, 5, 6, 6]);
        assert_eq!(s.commands[1].first_line, "select 'a;b' from t");
        match &s.commands[2].kind {
            CommandKind::Sleep {
                unit_ns,
                amount: SleepAmount::Const(5),
            } => assert_eq!(*unit_ns, 1_000_000),
            k => panic!("{k:?}"),
        }
        match &s.commands[4].kind {
            CommandKind::Sql(q) => assert_eq!(q.text, "select 2"),
            k => panic!("{k:?}"),
        }
    }

    /// pgbench splits `\sleep 2ms` into the number and its unit.
    #[test]
    fn a_sleep_unit_may_follow_its_number() {
        for (text, n, unit) in [
            ("\\sleep 2ms", 2, 1_000_000),
            ("\\sleep -3us", -3, 1_000),
            ("\\sleep 4", 4, 1_000_000_000),
        ] {
            match &parse_ok(text).0.commands[0].kind {
                CommandKind::Sleep {
                    amount: SleepAmount::Const(a),
                    unit_ns,
                } => assert_eq!((*a, *unit_ns), (n, unit), "{text}"),
                k => panic!("{k:?}"),
            }
        }
        let mut vars = Vars::default();
        for bad in ["\\sleep 2weeks", "\\sleep x2ms", "\\sleep 2ms s"] {
            assert!(parse("t.sql", bad, 1, &mut vars).is_err(), "{bad}");
        }
    }

    #[test]
    fn variables_become_parameters_and_casts_stay() {
        let (s, vars) = parse_ok("select :a::int, :b, :a, 'x::y';");
        let CommandKind::Sql(q) = &s.commands[0].kind else {
            panic!()
        };
        assert_eq!(q.parameterized, "select $1::int, $2, $3, 'x::y';");
        let names: Vec<&str> = q.params.iter().map(|id| vars.name(*id)).collect();
        assert_eq!(names, vec!["a", "b", "a"]);
        assert_eq!(q.pieces.len(), 7);
    }

    #[test]
    fn errors_name_file_and_line() {
        let mut vars = Vars::default();
        let e = parse("bad.sql", "select 1;\n\n\\set x 1 +\n", 1, &mut vars).unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("bad.sql", 3));
        assert!(
            e.to_string()
                .starts_with("bad.sql:3: syntax error in command \"set\"\n\\set x 1 +\n"),
            "{e}"
        );
        let e = parse("q.sql", "select 1;\nselect 'oops;\n", 1, &mut vars).unwrap_err();
        assert_eq!(e.line, 2);
        let e = parse("m.sql", "\\frobnicate\n", 1, &mut vars).unwrap_err();
        assert!(e.message.contains("invalid command"));
        let e = parse("s.sql", "\\sleep 1 hours\n", 1, &mut vars).unwrap_err();
        assert!(e.message.contains("time unit"));
        assert!(parse("e.sql", "  \n-- only\n", 1, &mut vars).is_err());
    }

    #[test]
    fn dollar_quotes_gset_and_joined_commands() {
        let (s, _) = parse_ok(
            "DO $$BEGIN PERFORM 1; END$$;\nselect $x$;$x$ as a \\gset p_\n\\; select 1 \\; select 2 \\aset\nselect $1;",
        );
        let sql: Vec<&Sql> = s
            .commands
            .iter()
            .map(|c| match &c.kind {
                CommandKind::Sql(q) => q,
                k => panic!("{k:?}"),
            })
            .collect();
        assert_eq!(sql[0].text, "DO $$BEGIN PERFORM 1; END$$;");
        assert_eq!(sql[1].text, "select $x$;$x$ as a");
        assert_eq!(sql[1].gset.as_ref().unwrap().prefix, "p_");
        assert_eq!(sql[2].text, "; select 1 ; select 2");
        assert!(sql[2].gset.as_ref().unwrap().all);
        assert_eq!(sql[3].text, "select $1;");
        let mut vars = Vars::default();
        for (text, want) in [
            ("\\gset", "gset must follow an SQL command"),
            ("\\set i 1\n\\gset", "gset must follow an SQL command"),
            ("select 1 \\gset\n\\gset", "gset must follow an SQL command"),
            ("select 1 \\gset a b", "too many arguments"),
            ("\\if 1", "\\if without matching \\endif"),
            ("\\elif 1", "\\elif without matching \\if"),
            ("\\if 1\n\\else\n\\else\n\\endif", "\\else after \\else"),
            (
                "\\if 0\n\\endif BAD",
                "unexpected argument in command \"endif\"",
            ),
            ("\\shell", "missing command"),
            ("\\setshell var", "missing argument"),
            ("", "empty command list for script"),
        ] {
            let e = parse("t.sql", text, 1, &mut vars).unwrap_err();
            assert!(e.message.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn if_blocks_link_their_branches() {
        let (s, _) = parse_ok(
            "\\if 0\nselect 1;\n\\elif 1\nselect 2;\n\\else\nselect 3;\n\\endif\nselect 4;",
        );
        match &s.commands[0].kind {
            CommandKind::If { next, .. } => assert_eq!(*next, 2),
            k => panic!("{k:?}"),
        }
        match &s.commands[2].kind {
            CommandKind::Elif { next, endif, .. } => assert_eq!((*next, *endif), (4, 6)),
            k => panic!("{k:?}"),
        }
        match &s.commands[4].kind {
            CommandKind::Else { endif } => assert_eq!(*endif, 6),
            k => panic!("{k:?}"),
        }
    }

    #[test]
    fn builtins_parse() {
        for b in builtin::BUILTINS {
            let mut vars = Vars::default();
            let s = parse(b.desc, b.script, 1, &mut vars).unwrap();
            assert!(s.commands.len() >= 2);
        }
        assert_eq!(builtin::find("select").unwrap().name, "select-only");
        assert!(builtin::find("nope").is_err());
    }

    #[test]
    fn weights() {
        assert_eq!(split_weight("a.sql@5").unwrap(), ("a.sql", 5));
        assert_eq!(split_weight("a.sql").unwrap(), ("a.sql", 1));
        // pgbench splits at the last `@` too.
        assert_eq!(
            split_weight("select-only@one").unwrap_err(),
            "invalid weight specification: @one"
        );
        assert!(split_weight("s@-1").unwrap_err().contains("out of range"));
    }

    #[test]
    fn meta_command_continues_over_backslash_newline() {
        let (s, _) = parse_ok("\\set x 1 + \\\n 2\nselect :x;");
        assert_eq!(s.commands.len(), 2);
        assert_eq!(s.commands[1].line, 3);
    }
}
