//! `include` patterns, expanded as Python's `glob.glob` (3.x, non-recursive) does,
//! because crossplane expands them with it: `*`, `?` and `[...]` per path
//! component, names starting with `.` hidden unless the pattern component starts
//! with `.`, directories followed through symlinks, results in the pattern's own
//! spelling (no normalisation). crossplane sorts the result; so does `glob`.

use std::fs;
use std::path::Path;

/// `glob.has_magic`: does the pattern contain `*`, `?` or `[`?
pub(crate) fn has_magic(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// `os.path.split` (its first half is `os.path.dirname`).
pub(crate) fn split(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        None => ("", path),
        Some(i) => {
            let head = &path[..=i];
            let trimmed = head.trim_end_matches('/');
            let head = if trimmed.is_empty() { head } else { trimmed };
            (head, &path[i + 1..])
        }
    }
}

/// `os.path.join(a, b)` for a relative `b`.
pub(crate) fn join(a: &str, b: &str) -> String {
    if b.starts_with('/') || a.is_empty() {
        b.to_string()
    } else if a.ends_with('/') {
        format!("{a}{b}")
    } else {
        format!("{a}/{b}")
    }
}

/// All paths matching `pattern`, sorted.
pub(crate) fn glob(pattern: &str) -> Vec<String> {
    let mut out = iglob(pattern, false);
    out.sort();
    out
}

fn lexists(path: &str) -> bool {
    fs::symlink_metadata(if path.is_empty() { "." } else { path }).is_ok()
}

fn is_dir(path: &str) -> bool {
    Path::new(if path.is_empty() { "." } else { path }).is_dir()
}

fn iglob(pattern: &str, dironly: bool) -> Vec<String> {
    let (dirname, basename) = split(pattern);
    if !has_magic(pattern) {
        let found = if basename.is_empty() {
            is_dir(dirname)
        } else {
            lexists(pattern)
        };
        return if found {
            vec![pattern.to_string()]
        } else {
            Vec::new()
        };
    }
    if dirname.is_empty() {
        return glob1("", basename, dironly);
    }
    let dirs = if dirname != pattern && has_magic(dirname) {
        iglob(dirname, true)
    } else {
        vec![dirname.to_string()]
    };
    let mut out = Vec::new();
    for dir in dirs {
        let names = if has_magic(basename) {
            glob1(&dir, basename, dironly)
        } else {
            glob0(&dir, basename)
        };
        out.extend(names.into_iter().map(|name| join(&dir, &name)));
    }
    out
}

fn glob0(dir: &str, basename: &str) -> Vec<String> {
    let found = if basename.is_empty() {
        is_dir(dir)
    } else {
        lexists(&join(dir, basename))
    };
    if found {
        vec![basename.to_string()]
    } else {
        Vec::new()
    }
}

fn glob1(dir: &str, pattern: &str, dironly: bool) -> Vec<String> {
    let Ok(entries) = fs::read_dir(if dir.is_empty() { "." } else { dir }) else {
        return Vec::new();
    };
    let pattern: Vec<char> = pattern.chars().collect();
    let show_hidden = pattern.first() == Some(&'.');
    entries
        .filter_map(Result::ok)
        .filter(|e| !dironly || e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| show_hidden || !name.starts_with('.'))
        .filter(|name| fnmatch(&name.chars().collect::<Vec<_>>(), &pattern))
        .collect()
}

/// Python's `fnmatch.fnmatchcase` (POSIX: case-sensitive).
pub(crate) fn fnmatch(name: &[char], pat: &[char]) -> bool {
    match pat.first() {
        None => name.is_empty(),
        Some('*') => (0..=name.len()).any(|i| fnmatch(&name[i..], &pat[1..])),
        Some('?') => !name.is_empty() && fnmatch(&name[1..], &pat[1..]),
        Some('[') => match bracket(&pat[1..]) {
            // No closing `]`: the `[` is a literal character.
            None => name.first() == Some(&'[') && fnmatch(&name[1..], &pat[1..]),
            Some((set, rest)) => {
                !name.is_empty() && set.matches(name[0]) && fnmatch(&name[1..], rest)
            }
        },
        Some(&c) => name.first() == Some(&c) && fnmatch(&name[1..], &pat[1..]),
    }
}

struct CharSet {
    negated: bool,
    ranges: Vec<(char, char)>,
}

impl CharSet {
    fn matches(&self, c: char) -> bool {
        self.ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != self.negated
    }
}

/// Parses `[...]` after the `[`, as `fnmatch.translate`: `!` negates, a `]`
/// first is a member, `a-z` is a range (empty ranges dropped).
fn bracket(pat: &[char]) -> Option<(CharSet, &[char])> {
    let mut j = 0;
    if pat.get(j) == Some(&'!') {
        j += 1;
    }
    if pat.get(j) == Some(&']') {
        j += 1;
    }
    while j < pat.len() && pat[j] != ']' {
        j += 1;
    }
    if j >= pat.len() {
        return None;
    }
    let mut body = &pat[..j];
    let negated = body.first() == Some(&'!');
    if negated {
        body = &body[1..];
    }
    let mut ranges = Vec::new();
    let mut i = 0;
    while i < body.len() {
        if i + 2 < body.len() && body[i + 1] == '-' {
            if body[i] <= body[i + 2] {
                ranges.push((body[i], body[i + 2]));
            }
            i += 3;
        } else {
            ranges.push((body[i], body[i]));
            i += 1;
        }
    }
    Some((CharSet { negated, ranges }, &pat[j + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str, pat: &str) -> bool {
        fnmatch(
            &name.chars().collect::<Vec<_>>(),
            &pat.chars().collect::<Vec<_>>(),
        )
    }

    #[test]
    fn fnmatch_like_python() {
        assert!(m("a.conf", "*.conf"));
        assert!(!m("a.conf.bak", "*.conf"));
        assert!(m("b1", "[a-c][0-9]"));
        assert!(!m("b1", "[!a-c]1"));
        assert!(m("[x", "[x"));
        assert!(m("]", "[]]"));
    }

    #[test]
    fn split_and_join_like_os_path() {
        assert_eq!(split("a/b/*.conf"), ("a/b", "*.conf"));
        assert_eq!(split("/x"), ("/", "x"));
        assert_eq!(split("x"), ("", "x"));
        assert_eq!(join("", "x"), "x");
        assert_eq!(join("/etc/nginx/", "x"), "/etc/nginx/x");
    }

    #[test]
    fn glob_hides_dot_files_and_sorts() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.conf", "a.conf", ".hidden.conf", "c.txt"] {
            fs::write(dir.path().join(name), "").unwrap();
        }
        fs::create_dir(dir.path().join("sub")).unwrap();
        fs::write(dir.path().join("sub/d.conf"), "").unwrap();
        let base = dir.path().to_str().unwrap();
        let got = glob(&format!("{base}/*.conf"));
        assert_eq!(
            got,
            vec![format!("{base}/a.conf"), format!("{base}/b.conf")]
        );
        assert_eq!(
            glob(&format!("{base}/s*/*.conf")),
            vec![format!("{base}/sub/d.conf")]
        );
        assert_eq!(
            glob(&format!("{base}/.*.conf")),
            vec![format!("{base}/.hidden.conf")]
        );
    }
}
