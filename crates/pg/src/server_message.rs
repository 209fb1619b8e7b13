//! A server error in libpq's words, as pgbench prints it (libpq's default
//! verbosity, `pqBuildErrorMessage3` in fe-protocol3.c): `ERROR:  message`,
//! then, when the server said where, the statement's line with a caret
//! under the spot (`LINE 2:   $1::int, 'x b' +  nocol;`), then `DETAIL:`,
//! `HINT:`, `QUERY:` and `CONTEXT:` lines. Off the hot path: built only
//! for an error that will be printed (docs/pg.md, "Errors").

use std::fmt::Write;

use crate::protocol::ServerError;

/// libpq's `DISPLAY_SIZE` and `MIN_RIGHT_CUT`: a statement line wider
/// than 60 columns is cut, keeping 10 columns right of the caret.
const DISPLAY_SIZE: usize = 60;
const MIN_RIGHT_CUT: usize = 10;

impl ServerError {
    /// The message libpq builds for this error, `query` being the text of
    /// the statement as sent (`None` when unknown: the position is then
    /// said as ` at character N`, as libpq says it). No final newline.
    pub(crate) fn libpq_text(&self, query: Option<&str>) -> String {
        let mut o = format!("{}:  {}", self.severity, self.message);
        let cursor = match (self.position, query) {
            (Some(p), Some(q)) => Some((q, p)),
            (Some(p), None) => {
                let _ = write!(o, " at character {p}");
                None
            }
            (None, _) => match (self.internal_position, &self.internal_query) {
                (Some(p), Some(q)) => Some((q.as_str(), p)),
                (Some(p), None) => {
                    let _ = write!(o, " at character {p}");
                    None
                }
                _ => None,
            },
        };
        o.push('\n');
        if let Some((q, p)) = cursor {
            caret(&mut o, q, p);
        }
        for (label, v) in [
            ("DETAIL", &self.detail),
            ("HINT", &self.hint),
            ("QUERY", &self.internal_query),
            ("CONTEXT", &self.context),
        ] {
            if let Some(v) = v {
                let _ = writeln!(o, "{label}:  {v}");
            }
        }
        o.pop();
        o
    }
}

/// libpq's `reportErrorPosition`: the line of `query` holding character
/// `loc` (1-based), tabs shown as spaces, cut to [`DISPLAY_SIZE`] columns
/// with `...` where cut, and a caret line under the character. One column
/// per character (libpq counts East Asian wide characters as two).
fn caret(o: &mut String, query: &str, loc: u32) {
    let Some(loc) = (loc as usize).checked_sub(1) else {
        return;
    };
    let chars: Vec<char> = query
        .chars()
        .map(|c| if c == '\t' { ' ' } else { c })
        .collect();
    // The line holding `loc`: its number and its first and past-last
    // characters. `\r\n` is one line end, a lone `\r` or `\n` one each.
    let (mut line, mut beg, mut end) = (1, 0, chars.len());
    for (i, &ch) in chars.iter().enumerate() {
        if ch != '\r' && ch != '\n' {
            continue;
        }
        if i < loc {
            if ch == '\r' || i == 0 || chars[i - 1] != '\r' {
                line += 1;
            }
            beg = i + 1;
        } else {
            end = i;
            break;
        }
    }
    if loc > chars.len() {
        return;
    }
    let (mut beg_cut, mut end_cut) = (false, false);
    if end - beg > DISPLAY_SIZE {
        if beg + DISPLAY_SIZE >= loc + MIN_RIGHT_CUT {
            end = beg + DISPLAY_SIZE;
            end_cut = true;
        } else {
            if loc + MIN_RIGHT_CUT < end {
                end = loc + MIN_RIGHT_CUT;
                end_cut = true;
            }
            if end - beg > DISPLAY_SIZE {
                beg = end - DISPLAY_SIZE;
                beg_cut = true;
            }
        }
    }
    let prefix = format!("LINE {line}: {}", if beg_cut { "..." } else { "" });
    o.push_str(&prefix);
    o.extend(&chars[beg..end]);
    if end_cut {
        o.push_str("...");
    }
    o.push('\n');
    let indent = prefix.chars().count() + loc - beg;
    o.extend(std::iter::repeat_n(' ', indent));
    o.push_str("^\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(message: &str, position: u32) -> ServerError {
        ServerError {
            severity: "ERROR".into(),
            code: "42703".into(),
            message: message.into(),
            position: Some(position),
            ..Default::default()
        }
    }

    /// Each expected text is pgbench 15.18's (libpq 15) for the same
    /// statement and error from a PostgreSQL 15 server.
    #[test]
    fn the_statement_line_and_a_caret_as_libpq_prints_them() {
        let e = error("relation \"nothere\" does not exist", 20);
        assert_eq!(
            e.libpq_text(Some("select   foo from  nothere;")),
            format!(
                "ERROR:  relation \"nothere\" does not exist\n\
             LINE 1: select   foo from  nothere;\n\
             {}^",
                " ".repeat(27)
            )
        );
        // The second line, a tab shown as a space.
        let e = error("column \"nocol\" does not exist", 32);
        assert_eq!(
            e.libpq_text(Some("select 1 +\n  $1::int, 'x\tb' +  nocol;")),
            format!(
                "ERROR:  column \"nocol\" does not exist\n\
             LINE 2:   $1::int, 'x b' +  nocol;\n\
             {}^",
                " ".repeat(28)
            )
        );
        // A long line, cut on both sides.
        let long = format!(
            "select '{}' || nocol || '{}';",
            "a".repeat(82),
            "b".repeat(75)
        );
        let e = error("column \"nocol\" does not exist", 96);
        assert_eq!(
            e.libpq_text(Some(&long)),
            format!(
                "ERROR:  column \"nocol\" does not exist\n\
             LINE 1: ...aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' || nocol || '...\n\
             {}^",
                " ".repeat(61)
            )
        );
    }

    #[test]
    fn internal_query_context_and_unknown_text() {
        let e = ServerError {
            severity: "ERROR".into(),
            message: "column \"nocol\" does not exist".into(),
            internal_position: Some(8),
            internal_query: Some("SELECT nocol FROM xy".into()),
            context: Some("PL/pgSQL function inline_code_block line 1 at PERFORM".into()),
            ..Default::default()
        };
        assert_eq!(
            e.libpq_text(Some("DO $$ BEGIN PERFORM nocol FROM xy; END $$;")),
            "ERROR:  column \"nocol\" does not exist\n\
             LINE 1: SELECT nocol FROM xy\n\
             \x20              ^\n\
             QUERY:  SELECT nocol FROM xy\n\
             CONTEXT:  PL/pgSQL function inline_code_block line 1 at PERFORM"
        );
        let e = error("syntax error at or near \"SELEC\"", 1);
        assert_eq!(
            e.libpq_text(None),
            "ERROR:  syntax error at or near \"SELEC\" at character 1"
        );
        // A position past the text: no line (libpq prints none either).
        assert_eq!(error("x", 40).libpq_text(Some("select 1")), "ERROR:  x");
    }
}
