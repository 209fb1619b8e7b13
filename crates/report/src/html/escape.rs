//! Escaping: every string that came from a server, a config file, an
//! experiment file or the command line goes through here before it touches
//! the page. One function for both text and attribute values (quotes are
//! escaped too), so there is no wrong one to pick.

use std::borrow::Cow;

/// `s` with `& < > " '` replaced by character references: safe as element
/// text, as a quoted attribute value and inside SVG `<title>`.
pub fn html(s: &str) -> Cow<'_, str> {
    if !s.contains(['&', '<', '>', '"', '\'']) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A word safe as an `id` or a `data-` value: ASCII letters, digits and
/// `-`, everything else folded to `-`. Used for anchors built from cell ids.
pub(crate) fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_becomes_text() {
        assert_eq!(
            html(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
    }

    #[test]
    fn plain_text_is_not_copied() {
        assert!(matches!(html("placement=native"), Cow::Borrowed(_)));
    }

    #[test]
    fn slugs_hold_no_markup() {
        assert_eq!(slug("a=<b>,c"), "a--b--c");
    }
}
