//! The lexer: a `\set` expression's text into tokens (numbers, names,
//! `:variables` and operator symbols).

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    Int(i64),
    Double(f64),
    Ident(String),
    Var(String),
    Sym(&'static str),
    /// `9223372036854775808`: only valid after a unary minus (pgbench's
    /// `MAXINT_PLUS_ONE_CONST`).
    MaxPlusOne,
}

/// A lexing error: what, and the byte offset where.
pub(super) type LexError = (String, usize);

/// The tokens of `src`, each with its byte offset.
pub(super) fn tokenize(src: &str) -> Result<Vec<(Tok, usize)>, LexError> {
    const SYMS: [&str; 20] = [
        "<<", ">>", "<=", ">=", "<>", "!=", "+", "-", "*", "/", "%", "(", ")", ",", "&", "|", "#",
        "~", "<", ">",
    ];
    let b = src.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let start = i;
            let at = i;
            let mut double = false;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                double |= b[i] == b'.';
                i += 1;
            }
            if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                double = true;
                i += 1;
                if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
                    i += 1;
                }
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            let text = &src[start..i];
            let tok = if double {
                match text.parse::<f64>() {
                    Ok(d) if d.is_finite() => Tok::Double(d),
                    Ok(_) => return Err(("double constant overflow".into(), at)),
                    Err(_) => return Err(("syntax error".into(), at)),
                }
            } else if text.trim_start_matches('0') == "9223372036854775808" {
                Tok::MaxPlusOne
            } else {
                match text.parse::<i64>() {
                    Ok(v) => Tok::Int(v),
                    Err(_) => return Err(("bigint constant overflow".into(), at)),
                }
            };
            out.push((tok, at));
        } else if c == b':' {
            let start = i + 1;
            i = start;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] >= 0x80) {
                i += 1;
            }
            if i == start {
                return Err(("syntax error".into(), start - 1));
            }
            out.push((Tok::Var(src[start..i].to_string()), start - 1));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Ident(src[start..i].to_ascii_lowercase()), start));
        } else if c == b'=' {
            out.push((Tok::Sym("="), i));
            i += 1;
        } else if let Some(s) = SYMS.iter().find(|s| src[i..].starts_with(**s)) {
            out.push((Tok::Sym(s), i));
            i += s.len();
        } else {
            return Err((
                format!(
                    "unexpected character ({})",
                    &src[i..].chars().next().unwrap_or('?')
                ),
                i,
            ));
        }
    }
    Ok(out)
}
