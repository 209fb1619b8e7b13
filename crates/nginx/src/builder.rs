//! From a [`Payload`] back to configuration text, as `crossplane build` writes it:
//! same indentation, same quoting decisions (an argument is quoted only when the
//! lexer would otherwise read it differently), same placement of comments, Lua
//! blocks written back as blocks.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::lexer::LUA_BLOCK_DIRECTIVES;
use crate::payload::{Payload, Statement};
use crate::python;

/// How to lay the text out (`crossplane build` flags).
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// Spaces per level (`--indent`, default 4).
    pub indent: usize,
    /// Indent with tabs (`--tabs`).
    pub tabs: bool,
    /// Start with crossplane's "built from JSON" comment (on by default in the
    /// CLI, `--no-headers` turns it off).
    pub header: bool,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            indent: 4,
            tabs: false,
            header: true,
        }
    }
}

/// crossplane's header, kept word for word so built files match.
const HEADER: &str = "# This config was built from JSON using NGINX crossplane.\n\
# If you encounter any bugs please report them here:\n\
# https://github.com/nginxinc/crossplane/issues\n\n";

/// `_escape`: the argument cut into the units the quoting decision looks at
/// (`\x` pairs and `${`), with crossplane's duplicated trailing `\` or `$`.
fn escape_units(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut prev = String::new();
    let mut last = None;
    for c in s.chars() {
        last = Some(c);
        if prev == "\\" || (prev == "$" && c == '{') {
            prev.push(c);
            out.push(prev.clone());
            continue;
        }
        if prev == "$" {
            out.push(prev.clone());
        }
        if c != '\\' && c != '$' {
            out.push(c.to_string());
        }
        prev = c.to_string();
    }
    if let Some(c @ ('\\' | '$')) = last {
        out.push(c.to_string());
    }
    out
}

fn is_space_unit(u: &str) -> bool {
    let mut chars = u.chars();
    matches!((chars.next(), chars.next()), (Some(c), None) if python::is_space(c))
}

/// `_needs_quotes`.
fn needs_quotes(s: &str) -> bool {
    if s.is_empty() {
        return true;
    }
    let units = escape_units(s);
    let Some(first) = units.first() else {
        return true;
    };
    if is_space_unit(first) || matches!(first.as_str(), "{" | "}" | ";" | "\"" | "'" | "${") {
        return true;
    }
    let mut expanding = false;
    let mut last = first.as_str();
    for unit in &units[1..] {
        last = unit.as_str();
        // A space, a brace or quote, or an unbalanced `${`/`}` needs quotes.
        let unbalanced = last == if expanding { "${" } else { "}" };
        if is_space_unit(last) || matches!(last, "{" | ";" | "\"" | "'") || unbalanced {
            return true;
        } else if last == if expanding { "}" } else { "${" } {
            expanding = !expanding;
        }
    }
    matches!(last, "\\" | "$") || expanding
}

/// `_enquote`: Python's `repr()` with doubled backslashes undone.
pub fn enquote(arg: &str) -> String {
    if needs_quotes(arg) {
        python::repr(arg).replace("\\\\", "\\")
    } else {
        arg.to_string()
    }
}

/// One file's statements as text (`crossplane.build`).
pub fn build(statements: &[Statement], options: &BuildOptions) -> String {
    let padding = if options.tabs {
        "\t".to_string()
    } else {
        " ".repeat(options.indent)
    };
    let mut body = String::new();
    build_block(&mut body, statements, 0, 0, &padding);
    if options.header {
        format!("{HEADER}{body}")
    } else {
        body
    }
}

fn build_block(
    output: &mut String,
    block: &[Statement],
    depth: usize,
    mut last_line: u64,
    padding: &str,
) {
    let margin = padding.repeat(depth);
    for stmt in block {
        let directive = enquote(&stmt.directive);
        let line = stmt.line;
        let comment = stmt.comment.as_deref().unwrap_or("");
        let built = if directive == "#" && line == last_line {
            output.push_str(" #");
            output.push_str(comment);
            continue;
        } else if directive == "#" {
            format!("#{comment}")
        } else if LUA_BLOCK_DIRECTIVES.contains(&directive.as_str()) {
            let arg = |i: usize| stmt.args.get(i).map(String::as_str).unwrap_or("");
            if directive == "set_by_lua_block" {
                format!("{directive} {} {{{}}}", arg(0), arg(1))
            } else {
                format!("{directive} {{{}}}", arg(0))
            }
        } else {
            let args: Vec<String> = stmt.args.iter().map(|a| enquote(a)).collect();
            let mut built = if directive == "if" {
                format!("if ({})", args.join(" "))
            } else if args.is_empty() {
                directive
            } else {
                format!("{directive} {}", args.join(" "))
            };
            match &stmt.block {
                None => built.push(';'),
                Some(inner) => {
                    built.push_str(" {");
                    build_block(&mut built, inner, depth + 1, line, padding);
                    built.push('\n');
                    built.push_str(&margin);
                    built.push('}');
                }
            }
            built
        };
        if !output.is_empty() {
            output.push('\n');
        }
        output.push_str(&margin);
        output.push_str(&built);
        last_line = line;
    }
}

/// A file's final text: built, trailing whitespace trimmed, one newline
/// (what `build_files` writes and `--stdout` prints).
pub fn build_file(statements: &[Statement], options: &BuildOptions) -> String {
    let mut text = build(statements, options)
        .trim_end_matches(python::is_space)
        .to_string();
    text.push('\n');
    text
}

/// Where a config entry's file goes: relative names under `dir`, absolute ones
/// where they say (as crossplane's `os.path.join(dirname, path)`).
pub fn target_path(dir: &Path, file: &str) -> PathBuf {
    dir.join(file)
}

/// Every file of the payload, each after a `# PATH` line, as
/// `crossplane build --stdout` prints them.
pub fn build_stdout(payload: &Payload, dir: &Path, options: &BuildOptions) -> String {
    let mut out = String::new();
    for config in &payload.config {
        let path = target_path(dir, &config.file);
        out.push_str(&format!(
            "# {}\n{}\n",
            path.display(),
            build_file(&config.parsed, options)
        ));
    }
    out
}

/// Writes every file of the payload under `dir`, creating directories.
pub fn build_files(
    payload: &Payload,
    dir: &Path,
    options: &BuildOptions,
) -> io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for config in &payload.config {
        let path = target_path(dir, &config.file);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(&path, build_file(&config.parsed, options))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_what_the_lexer_would_misread() {
        assert_eq!(enquote("plain"), "plain");
        assert_eq!(enquote(""), "''");
        assert_eq!(enquote("a b"), "'a b'");
        assert_eq!(enquote("$host${x}"), "$host${x}");
        assert_eq!(enquote("${x"), "'${x'");
        assert_eq!(enquote("a;b"), "'a;b'");
        assert_eq!(enquote("it's"), "\"it's\"");
        assert_eq!(enquote("end\\"), "'end\\'");
    }

    #[test]
    fn builds_blocks_comments_and_if() {
        let stmts: Vec<Statement> = serde_json::from_str(
            r##"[{"directive":"http","line":1,"args":[],"block":[
                 {"directive":"#","line":1,"args":[],"comment":" same line"},
                 {"directive":"if","line":2,"args":["$a","=","b c"],"block":[]},
                 {"directive":"gzip","line":3,"args":["on"]}]}]"##,
        )
        .unwrap();
        let opts = BuildOptions {
            header: false,
            ..BuildOptions::default()
        };
        assert_eq!(
            build(&stmts, &opts),
            "http { # same line\n    if ($a = 'b c') {\n    }\n    gzip on;\n}"
        );
    }
}
