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
    Set { var: VarId, expr: Expr },
    Sleep { amount: SleepAmount, unit_ns: u64 },
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
        }
    }
}

/// Splits `spec` (`file@weight`) into its parts; no `@N` suffix means weight 1.
pub fn split_weight(spec: &str) -> Result<(&str, u32), String> {
    if let Some((name, w)) = spec.rsplit_once('@') {
        if !w.is_empty() && w.bytes().all(|c| c.is_ascii_digit()) {
            let weight: u32 = w
                .parse()
                .map_err(|_| format!("invalid weight specification: {spec}"))?;
            return Ok((name, weight));
        }
    }
    Ok((spec, 1))
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
    let mut commands = Vec::new();
    let mut lexer = Lexer {
        src: text,
        pos: 0,
        line: 1,
    };
    while let Some((line, raw)) = lexer.next_command().map_err(|(l, m)| fail(l, m))? {
        let first_line = raw.lines().next().unwrap_or("").trim_end().to_string();
        let kind = if let Some(meta) = raw.strip_prefix('\\') {
            meta_command(meta, vars).map_err(|m| fail(line, m))?
        } else {
            CommandKind::Sql(Sql::new(raw, vars))
        };
        commands.push(Command {
            line,
            first_line,
            kind,
        });
    }
    if commands.is_empty() {
        return Err(fail(lexer.line, "script contains no commands".into()));
    }
    Ok(Script {
        name: name.to_string(),
        weight,
        commands,
    })
}

fn meta_command(meta: &str, vars: &mut Vars) -> Result<CommandKind, String> {
    // Backslash-newline continues a meta command onto the next line.
    let meta = meta.replace("\\\r\n", " ").replace("\\\n", " ");
    let mut words = meta.split_whitespace();
    let cmd = words.next().unwrap_or("");
    match cmd.to_ascii_lowercase().as_str() {
        "set" => {
            let var = words.next().ok_or("missing argument in command \"set\"")?;
            if !var.bytes().all(is_name_byte) {
                return Err(format!("invalid variable name: \"{var}\""));
            }
            let rest = meta.trim_start()[3..].trim_start()[var.len()..].to_string();
            let expr = expr::parse(&rest, vars)
                .map_err(|e| format!("syntax error in \\set {var}: {e}"))?;
            Ok(CommandKind::Set {
                var: vars.intern(var),
                expr,
            })
        }
        "sleep" => {
            let amount = words
                .next()
                .ok_or("missing argument in command \"sleep\"")?;
            let amount =
                if let Some(v) = amount.strip_prefix(':') {
                    SleepAmount::Var(vars.intern(v))
                } else {
                    SleepAmount::Const(amount.parse().map_err(|_| {
                        format!("invalid sleep time \"{amount}\"; must be an integer")
                    })?)
                };
            let unit_ns = match words.next().map(|u| u.to_ascii_lowercase()) {
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
            if let Some(extra) = words.next() {
                return Err(format!(
                    "too many arguments in command \"sleep\" (\"{extra}\")"
                ));
            }
            Ok(CommandKind::Sleep { amount, unit_ns })
        }
        "setshell" | "shell" | "gset" | "aset" | "if" | "elif" | "else" | "endif"
        | "startpipeline" | "endpipeline" => Err(format!(
            "\\{cmd} is not supported by tare (supported: \\set, \\sleep)"
        )),
        _ => Err(format!("invalid command \\{cmd}")),
    }
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
            Some(b'\\') => {
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
        while let Some(c) = self.bump() {
            match c {
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
        Ok(Some((line, self.src[start..self.pos].trim().to_string())))
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
                .starts_with("bad.sql:3: syntax error in \\set x"),
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
        assert_eq!(split_weight("me@host.sql").unwrap(), ("me@host.sql", 1));
    }

    #[test]
    fn meta_command_continues_over_backslash_newline() {
        let (s, _) = parse_ok("\\set x 1 + \\\n 2\nselect :x;");
        assert_eq!(s.commands.len(), 2);
        assert_eq!(s.commands[1].line, 3);
    }
}
