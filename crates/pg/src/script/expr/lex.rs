//! The lexer: a `\set` expression's text into tokens (numbers, names,
//! `:variables` and operator symbols).

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    Int(i64),
    Double(f64),
    Ident(String),
    Var(String),
    Sym(&'static str),
}

pub(super) fn tokenize(src: &str) -> Result<Vec<Tok>, String> {
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
            out.push(if double {
                Tok::Double(
                    text.parse()
                        .map_err(|_| format!("invalid number \"{text}\""))?,
                )
            } else {
                Tok::Int(
                    text.parse()
                        .map_err(|_| format!("integer out of range \"{text}\""))?,
                )
            });
        } else if c == b':' {
            let start = i + 1;
            i = start;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] >= 0x80) {
                i += 1;
            }
            if i == start {
                return Err("expected a variable name after \":\"".into());
            }
            out.push(Tok::Var(src[start..i].to_string()));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(src[start..i].to_ascii_lowercase()));
        } else if c == b'=' {
            out.push(Tok::Sym("="));
            i += 1;
        } else if let Some(s) = SYMS.iter().find(|s| src[i..].starts_with(**s)) {
            out.push(Tok::Sym(s));
            i += s.len();
        } else {
            return Err(format!(
                "unexpected character \"{}\"",
                &src[i..].chars().next().unwrap_or('?')
            ));
        }
    }
    Ok(out)
}
