//! The pieces of Python's text formatting that crossplane's output inherits, so
//! tare's output can be byte-identical to it: `repr()` of a string (error messages
//! about unreadable includes, the builder's quoting) and `json.dumps` with its
//! default `ensure_ascii=True` (every non-ASCII character as `\uXXXX`).

use std::io;

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};

/// Python's `str.isspace()`: Unicode whitespace plus the ASCII separators
/// U+001C..U+001F, which Rust's `char::is_whitespace` does not count.
/// (List computed with `[c for c in range(0x110000) if chr(c).isspace()]`.)
pub(crate) fn is_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n'
            | '\u{0b}'
            | '\u{0c}'
            | '\r'
            | '\u{1c}'..='\u{1f}'
            | ' '
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// Approximates Python's `str.isprintable()` for one non-ASCII character: false
/// for separators and the control and format characters one meets in files.
/// (Unassigned code points count as printable here; Python says otherwise.)
fn is_printable(c: char) -> bool {
    !(is_space(c)
        || matches!(c, '\u{80}'..='\u{9f}' | '\u{ad}' | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}'
            | '\u{e000}'..='\u{f8ff}'))
}

/// Python's `repr(s)` for a `str`.
pub(crate) fn repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            _ if c == quote || c == '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            _ if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            _ if c.is_ascii() || is_printable(c) => out.push(c),
            _ if (c as u32) <= 0xff => out.push_str(&format!("\\x{:02x}", c as u32)),
            _ if (c as u32) <= 0xffff => out.push_str(&format!("\\u{:04x}", c as u32)),
            _ => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push(quote);
    out
}

/// A serde_json formatter that escapes non-ASCII like Python's `ensure_ascii`.
struct Ascii<F>(F);

impl<F: Formatter> Formatter for Ascii<F> {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if c.is_ascii() {
                continue;
            }
            writer.write_all(&fragment.as_bytes()[start..i])?;
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                write!(writer, "\\u{unit:04x}")?;
            }
            start = i + c.len_utf8();
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// `json.dumps(value, separators=(',', ':'))` or, with an indent,
/// `json.dumps(value, indent=n)`: what `crossplane parse [-i N]` prints (without
/// the trailing newline).
pub(crate) fn dumps<T: Serialize>(value: &T, indent: Option<usize>) -> String {
    let mut out = Vec::new();
    let result = match indent {
        None => {
            let mut ser = serde_json::Serializer::with_formatter(&mut out, Ascii(CompactFormatter));
            value.serialize(&mut ser)
        }
        Some(n) => {
            let pad = vec![b' '; n];
            let mut ser = serde_json::Serializer::with_formatter(
                &mut out,
                Ascii(PrettyFormatter::with_indent(&pad)),
            );
            value.serialize(&mut ser)
        }
    };
    // Serializing plain structs of strings and integers into memory cannot fail.
    result.expect("serializing to memory");
    String::from_utf8(out).expect("ASCII output")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repr_picks_quotes_like_python() {
        assert_eq!(repr("a.conf"), "'a.conf'");
        assert_eq!(repr("it's"), "\"it's\"");
        assert_eq!(repr("a'b\"c"), "'a\\'b\"c'");
        assert_eq!(repr("tab\there\\"), "'tab\\there\\\\'");
        assert_eq!(repr("é\u{7f}"), "'é\\x7f'");
    }

    #[test]
    fn dumps_escapes_non_ascii_like_ensure_ascii() {
        let v = serde_json::json!({"k": ["é😀", "\u{1}"]});
        assert_eq!(dumps(&v, None), r#"{"k":["\u00e9\ud83d\ude00","\u0001"]}"#);
        assert_eq!(
            dumps(&serde_json::json!({"a": []}), Some(2)),
            "{\n  \"a\": []\n}"
        );
    }
}
