//! Tokens of an nginx configuration file, exactly as crossplane 0.5.8's lexer
//! (`crossplane/lexer.py` and the Lua extension `crossplane/ext/lua.py`) cuts
//! them, quirks included, because "identical JSON" is the contract:
//!
//! - a backslash and the character after it travel as one unit (so `\"` never
//!   closes a string, and `\` + newline still counts the line);
//! - inside quotes only `\<same quote>` loses its backslash;
//! - `${` starts a variable expansion that runs to `}` and then swallows one more
//!   character (crossplane appends the character that ended the expansion);
//! - a token or comment still open at end of file is dropped, silently;
//! - the bodies of `*_by_lua_block` directives are one quoted token followed by `;`;
//! - brace balance is checked as tokens are pulled, so the error surfaces at the
//!   token where it happens, after everything before it was parsed.
//!
//! Text is read as UTF-8 with U+FFFD for invalid bytes and universal newlines
//! (`\r\n` and `\r` become `\n`), as Python's `io.open(mode='r')` does.

use crate::python::is_space;

/// One token: its text, the line it starts on, and whether it was quoted
/// (a quoted `;` or `{` is an argument, not punctuation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    pub text: String,
    pub line: u64,
    pub quoted: bool,
}

/// Why the token stream stopped early: a syntax error, reported with its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LexError {
    pub reason: String,
    pub line: Option<u64>,
    /// crossplane's Lua lexer raises without a file name (`in None:LINE`).
    pub without_file: bool,
}

/// All tokens of a file, then the error (if any) the stream ends with.
#[cfg(test)]
#[derive(Debug, Clone, Default)]
pub(crate) struct Tokens {
    pub tokens: Vec<Token>,
    pub error: Option<LexError>,
}

/// The directives whose block is Lua source, kept as one argument
/// (`LuaBlockPlugin.directives` in crossplane).
pub(crate) const LUA_BLOCK_DIRECTIVES: &[&str] = &[
    "access_by_lua_block",
    "balancer_by_lua_block",
    "body_filter_by_lua_block",
    "content_by_lua_block",
    "header_filter_by_lua_block",
    "init_by_lua_block",
    "init_worker_by_lua_block",
    "log_by_lua_block",
    "rewrite_by_lua_block",
    "set_by_lua_block",
    "ssl_certificate_by_lua_block",
    "ssl_session_fetch_by_lua_block",
    "ssl_session_store_by_lua_block",
];

/// One unit of input: a character, or a backslash and the character it escapes.
#[derive(Debug, Clone, Copy)]
struct Unit {
    first: char,
    escaped: Option<char>,
    /// The line counter *after* this unit (a newline already counts as the next line).
    line: u64,
}

impl Unit {
    fn is(&self, c: char) -> bool {
        self.escaped.is_none() && self.first == c
    }
    fn is_space(&self) -> bool {
        self.escaped.is_none() && is_space(self.first)
    }
    fn ends_line(&self) -> bool {
        self.escaped.unwrap_or(self.first) == '\n'
    }
    fn push_to(&self, s: &mut String) {
        s.push(self.first);
        if let Some(c) = self.escaped {
            s.push(c);
        }
    }
}

/// Universal newlines, escape pairing and line counting
/// (`_iterescape` and `_iterlinecount`), one unit at a time: the text is
/// never copied, so a file's tokens cost memory only while they are held.
/// A lone trailing backslash is dropped.
struct Units<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    line: u64,
}

impl Units<'_> {
    /// The next character, `\r\n` and `\r` read as `\n`.
    fn char(&mut self) -> Option<char> {
        match self.chars.next()? {
            '\r' => {
                self.chars.next_if_eq(&'\n');
                Some('\n')
            }
            c => Some(c),
        }
    }
}

impl Iterator for Units<'_> {
    type Item = Unit;

    fn next(&mut self) -> Option<Unit> {
        let c = self.char()?;
        let escaped = if c == '\\' { Some(self.char()?) } else { None };
        let unit = Unit {
            first: c,
            escaped,
            line: self.line,
        };
        if unit.ends_line() {
            self.line += 1;
        }
        Some(Unit {
            line: self.line,
            ..unit
        })
    }
}

/// The units of a text, with one unit of look-back (`unread`).
struct Cursor<'a> {
    units: Units<'a>,
    last: Option<Unit>,
    again: Option<Unit>,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str) -> Self {
        Cursor {
            units: Units {
                chars: text.chars().peekable(),
                line: 1,
            },
            last: None,
            again: None,
        }
    }
    fn next(&mut self) -> Option<Unit> {
        let u = self.again.take().or_else(|| self.units.next());
        if u.is_some() {
            self.last = u;
        }
        u
    }
    /// Gives back the unit `next` returned last.
    fn unread(&mut self) {
        self.again = self.last.take();
    }
}

/// How the Lua sub-lexer ended.
enum LuaEnd {
    Done,
    /// End of file inside the block: the stream just ends.
    Eof,
    Error(LexError),
}

/// Tokenizes a whole file's text, then checks brace balance.
#[cfg(test)]
pub(crate) fn lex(text: &str) -> Tokens {
    let mut tokens = Vec::new();
    let error = lex_each(text, &mut |t| {
        tokens.push(t);
        true
    });
    balance(tokens, error)
}

/// Tokenizes `text`, handing each token to `emit` as it is cut (`emit`
/// returning `false` stops it there): the syntax error the stream ends
/// with, if any. Brace balance is the caller's ([`Balance`]).
pub(crate) fn lex_each(text: &str, emit: &mut dyn FnMut(Token) -> bool) -> Option<LexError> {
    let mut lexer = Lexer {
        cur: Cursor::new(text),
        token: String::new(),
        token_line: 0,
        next_is_directive: true,
        emit,
    };
    lexer.run().err().flatten()
}

/// Why the stream stopped before its end: `None` when the text ended or
/// `emit` said stop, else the syntax error.
type Stop = Option<LexError>;

/// The lexer's state between units: the token being cut, where it began,
/// and whether the next token is a directive's name.
struct Lexer<'t, 'e> {
    cur: Cursor<'t>,
    token: String,
    token_line: u64,
    next_is_directive: bool,
    emit: &'e mut dyn FnMut(Token) -> bool,
}

impl Lexer<'_, '_> {
    fn run(&mut self) -> Result<(), Stop> {
        while let Some(mut u) = self.cur.next() {
            if u.is_space() {
                if !self.token.is_empty() {
                    self.emit_token(false)?;
                    self.after_token()?;
                    self.token.clear();
                }
                while u.is_space() {
                    u = self.next()?;
                }
            }

            if self.token.is_empty() && u.is('#') {
                self.comment(u)?;
                continue;
            }

            if self.token.is_empty() {
                self.token_line = u.line;
            }

            // Parameter expansion (`${var}`): runs to `}`, then the character that
            // ended it falls through and is appended below, as in crossplane.
            if self.token.ends_with('$') && u.is('{') {
                self.next_is_directive = false;
                while !self.token.ends_with('}') && !u.is_space() {
                    u.push_to(&mut self.token);
                    u = self.next()?;
                }
            }

            if u.is('"') || u.is('\'') {
                if !self.token.is_empty() {
                    u.push_to(&mut self.token);
                    continue;
                }
                self.quoted(u)?;
                continue;
            }

            if u.is('{') || u.is('}') || u.is(';') {
                if !self.token.is_empty() {
                    let text = std::mem::take(&mut self.token);
                    self.emit(Token {
                        text,
                        line: self.token_line,
                        quoted: false,
                    })?;
                }
                self.emit(Token {
                    text: u.first.to_string(),
                    line: u.line,
                    quoted: false,
                })?;
                self.next_is_directive = true;
                continue;
            }

            u.push_to(&mut self.token);
        }
        Ok(())
    }

    /// The next unit; the end of the text stops the stream.
    fn next(&mut self) -> Result<Unit, Stop> {
        self.cur.next().ok_or(None)
    }

    fn emit(&mut self, t: Token) -> Result<(), Stop> {
        if (self.emit)(t) {
            Ok(())
        } else {
            Err(None)
        }
    }

    /// The token cut so far, emitted (and kept: the caller clears it).
    fn emit_token(&mut self, quoted: bool) -> Result<(), Stop> {
        self.emit(Token {
            text: self.token.clone(),
            line: self.token_line,
            quoted,
        })
    }

    /// A `#` comment from `u` to the end of its line, as one token.
    fn comment(&mut self, mut u: Unit) -> Result<(), Stop> {
        let line = u.line;
        while !u.ends_line() {
            u.push_to(&mut self.token);
            u = self.next()?;
        }
        let text = std::mem::take(&mut self.token);
        self.emit(Token {
            text,
            line,
            quoted: false,
        })
    }

    /// A quoted token from its opening quote `u` to the closing one, an
    /// escaped quote kept as the quote alone.
    fn quoted(&mut self, mut u: Unit) -> Result<(), Stop> {
        let quote = u.first;
        u = self.next()?;
        while !u.is(quote) {
            if u.first == '\\' && u.escaped == Some(quote) {
                self.token.push(quote);
            } else {
                u.push_to(&mut self.token);
            }
            u = self.next()?;
        }
        self.emit_token(true)?;
        self.after_token()?;
        self.token.clear();
        Ok(())
    }

    /// After a token: a Lua block directive's body is lexed as Lua; any
    /// other token makes the next one an argument.
    fn after_token(&mut self) -> Result<(), Stop> {
        if !(self.next_is_directive && LUA_BLOCK_DIRECTIVES.contains(&self.token.as_str())) {
            self.next_is_directive = false;
            return Ok(());
        }
        let (lua, end) = lex_lua(&mut self.cur, &self.token);
        if !lua.is_empty() {
            self.next_is_directive = true;
        }
        for t in lua {
            self.emit(t)?;
        }
        match end {
            LuaEnd::Done => Ok(()),
            LuaEnd::Eof => Err(None),
            LuaEnd::Error(e) => Err(Some(e)),
        }
    }
}

/// The body of a `*_by_lua_block`, as one quoted token and a `;`
/// (`LuaBlockPlugin.lex`). Braces inside Lua strings and `--` comments do not count.
fn lex_lua(cur: &mut Cursor, directive: &str) -> (Vec<Token>, LuaEnd) {
    let mut out = Vec::new();
    macro_rules! next_or_eof {
        () => {
            match cur.next() {
                Some(u) => u,
                None => return (out, LuaEnd::Eof),
            }
        };
    }

    if directive == "set_by_lua_block" {
        // The one Lua block directive with an argument: the variable to set.
        let mut arg = String::new();
        while let Some(mut u) = cur.next() {
            if u.is_space() {
                if !arg.is_empty() {
                    out.push(Token {
                        text: arg,
                        line: u.line,
                        quoted: false,
                    });
                    break;
                }
                while u.is_space() {
                    u = next_or_eof!();
                }
            }
            u.push_to(&mut arg);
        }
    }

    let mut u = next_or_eof!();
    while u.is_space() {
        u = next_or_eof!();
    }
    if !u.is('{') {
        let error = LexError {
            reason: "expected { to start Lua block".into(),
            line: Some(u.line),
            without_file: true,
        };
        return (out, LuaEnd::Error(error));
    }

    let mut depth = 1;
    let mut token = String::new();
    while let Some(mut u) = cur.next() {
        if u.is('-') {
            let dash = u;
            u = next_or_eof!();
            if u.is('-') {
                token.push('-');
                while !u.is('\n') {
                    u.push_to(&mut token);
                    u = next_or_eof!();
                }
            } else {
                cur.unread();
                u = dash;
            }
        } else if u.is('{') {
            depth += 1;
        } else if u.is('}') {
            depth -= 1;
        } else if u.is('"') || u.is('\'') {
            let quote = u.first;
            token.push(quote);
            u = next_or_eof!();
            while !u.is(quote) {
                u.push_to(&mut token);
                u = next_or_eof!();
            }
        }
        if depth == 0 {
            out.push(Token {
                text: token,
                line: u.line,
                quoted: true,
            });
            out.push(Token {
                text: ";".into(),
                line: u.line,
                quoted: false,
            });
            return (out, LuaEnd::Done);
        }
        u.push_to(&mut token);
    }
    (out, LuaEnd::Eof)
}

/// `_balance_braces`, as tokens are pulled: an unexpected `}` ends the
/// stream there with an error; a missing `}` is reported after the last
/// token, on its line.
#[derive(Default)]
pub(crate) struct Balance {
    depth: i64,
    last_line: Option<u64>,
}

impl Balance {
    /// The error `t` is, if it closes more blocks than were opened.
    pub(crate) fn check(&mut self, t: &Token) -> Option<LexError> {
        if !t.quoted && t.text == "}" {
            self.depth -= 1;
        } else if !t.quoted && t.text == "{" {
            self.depth += 1;
        }
        self.last_line = Some(t.line);
        (self.depth < 0).then(|| LexError {
            reason: "unexpected \"}\"".into(),
            line: Some(t.line),
            without_file: false,
        })
    }

    /// The error the stream ends with: the lexer's, else a block left open.
    pub(crate) fn end(&self, error: Option<LexError>) -> Option<LexError> {
        if error.is_some() {
            return error;
        }
        (self.depth > 0).then(|| LexError {
            reason: "unexpected end of file, expecting \"}\"".into(),
            line: self.last_line,
            without_file: false,
        })
    }
}

/// The whole stream, balanced (for tests).
#[cfg(test)]
fn balance(tokens: Vec<Token>, error: Option<LexError>) -> Tokens {
    let mut b = Balance::default();
    let mut out = Vec::with_capacity(tokens.len());
    for t in tokens {
        if let Some(e) = b.check(&t) {
            return Tokens {
                tokens: out,
                error: Some(e),
            };
        }
        out.push(t);
    }
    Tokens {
        tokens: out,
        error: b.end(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(src: &str) -> Vec<(String, u64)> {
        lex(src)
            .tokens
            .into_iter()
            .map(|t| (t.text, t.line))
            .collect()
    }

    fn t(s: &str, line: u64) -> (String, u64) {
        (s.to_string(), line)
    }

    #[test]
    fn quotes_escapes_and_comments() {
        let got = texts("x \"a\\\"b\" 'c\\d' e\\ f;#c1\n");
        assert_eq!(
            got,
            vec![
                t("x", 1),
                t("a\"b", 1),
                t("c\\d", 1),
                t("e\\ f", 1),
                t(";", 1),
                t("#c1", 1)
            ]
        );
    }

    #[test]
    fn expansion_swallows_the_character_after_it() {
        // crossplane 0.5.8 lexes `${var} b;` as one token "${var} b".
        assert_eq!(texts("set $a ${var} b;\n")[2], t("${var} b", 1));
    }

    #[test]
    fn unterminated_token_and_comment_at_eof_are_dropped() {
        assert_eq!(
            texts("a;\nfoo bar"),
            vec![t("a", 1), t(";", 1), t("foo", 2)]
        );
        assert_eq!(texts("a;#no newline"), vec![t("a", 1), t(";", 1)]);
    }

    #[test]
    fn lua_block_is_one_argument() {
        let src = "content_by_lua_block {\n  ngx.say(\"}\") -- }\n}\nx;\n";
        let got = texts(src);
        assert_eq!(got[0], t("content_by_lua_block", 1));
        assert_eq!(got[1], t("\n  ngx.say(\"}\") -- }\n", 3));
        assert_eq!(got[2], t(";", 3));
        assert_eq!(got[3], t("x", 4));
    }

    #[test]
    fn unbalanced_braces_are_errors_with_lines() {
        let e = lex("a {\n}\n}\n").error.unwrap();
        assert_eq!((e.reason.as_str(), e.line), ("unexpected \"}\"", Some(3)));
        let e = lex("a {\n b;\n").error.unwrap();
        assert_eq!(e.line, Some(2));
    }

    #[test]
    fn crlf_counts_as_one_line() {
        assert_eq!(texts("a;\r\nb;\r\n")[2], t("b", 2));
    }
}
