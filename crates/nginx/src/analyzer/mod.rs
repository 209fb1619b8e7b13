//! Directive validation, as crossplane's `analyze()` does it (and nginx before it):
//! is the directive allowed in this context, does it take this many arguments,
//! should it open a block. The table is crossplane's own (`directives.rs`, generated),
//! so tare reports the same errors, word for word.

mod directives;

use directives::DIRECTIVES;

// Argument-style bits (nginx `NGX_CONF_*`).
const CONF_BLOCK: u32 = 0x0000_0100;
const CONF_FLAG: u32 = 0x0000_0200;
const CONF_ANY: u32 = 0x0000_0400;
const CONF_1MORE: u32 = 0x0000_0800;
const CONF_2MORE: u32 = 0x0000_1000;

/// Context bits, and the block paths that select them (crossplane `CONTEXTS`).
const CONTEXTS: &[(&[&str], u32)] = &[
    (&[], 0x0004_0000),                                   // main
    (&["events"], 0x0008_0000),                           // events
    (&["mail"], 0x0010_0000),                             // mail
    (&["mail", "server"], 0x0020_0000),                   // mail > server
    (&["stream"], 0x0040_0000),                           // stream
    (&["stream", "server"], 0x0080_0000),                 // stream > server
    (&["stream", "upstream"], 0x0100_0000),               // stream > upstream
    (&["http"], 0x0200_0000),                             // http
    (&["http", "server"], 0x0400_0000),                   // http > server
    (&["http", "location"], 0x0800_0000),                 // http > location
    (&["http", "upstream"], 0x1000_0000),                 // http > upstream
    (&["http", "server", "if"], 0x2000_0000),             // http > server > if
    (&["http", "location", "if"], 0x4000_0000),           // http > location > if
    (&["http", "location", "limit_except"], 0x8000_0000), // http > location > limit_except
];

/// Which kind of problem, as crossplane's exception classes distinguish them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DirectiveErrorKind {
    Unknown,
    Context,
    Arguments,
}

/// A directive that nginx would reject. `reason` is crossplane's text, without
/// the ` in FILE:LINE` suffix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DirectiveError {
    pub kind: DirectiveErrorKind,
    pub reason: String,
}

/// What to check (crossplane's `strict`, `check_ctx`, `check_args`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Checks {
    pub strict: bool,
    pub context: bool,
    pub arguments: bool,
}

/// The masks crossplane knows for a directive.
pub(crate) fn masks(directive: &str) -> Option<&'static [u32]> {
    DIRECTIVES
        .binary_search_by(|(name, _)| (*name).cmp(directive))
        .ok()
        .map(|i| DIRECTIVES[i].1)
}

fn context_mask(ctx: &[String]) -> Option<u32> {
    CONTEXTS
        .iter()
        .find(|(path, _)| path.len() == ctx.len() && path.iter().zip(ctx).all(|(a, b)| a == b))
        .map(|(_, m)| *m)
}

/// The context a block's statements live in (`enter_block_ctx`): locations do not
/// nest as contexts, everything else appends its name.
pub(crate) fn enter_block(directive: &str, ctx: &[String]) -> Vec<String> {
    if ctx.first().map(String::as_str) == Some("http") && directive == "location" {
        return vec!["http".into(), "location".into()];
    }
    let mut inner = ctx.to_vec();
    inner.push(directive.to_string());
    inner
}

/// `analyze()`: `term` is the token that ended the statement (`;`, `{` or `}`).
pub(crate) fn analyze(
    directive: &str,
    args: &[String],
    term: &str,
    ctx: &[String],
    checks: Checks,
) -> Result<(), DirectiveError> {
    let known = masks(directive);
    if checks.strict && known.is_none() {
        return Err(DirectiveError {
            kind: DirectiveErrorKind::Unknown,
            reason: format!("unknown directive \"{directive}\""),
        });
    }
    // Unknown directive or context: nothing to check against.
    let (Some(all), Some(ctx_mask)) = (known, context_mask(ctx)) else {
        return Ok(());
    };

    let masks: Vec<u32> = if checks.context {
        let allowed: Vec<u32> = all.iter().copied().filter(|m| m & ctx_mask != 0).collect();
        if allowed.is_empty() {
            return Err(DirectiveError {
                kind: DirectiveErrorKind::Context,
                reason: format!("\"{directive}\" directive is not allowed here"),
            });
        }
        allowed
    } else {
        all.to_vec()
    };
    if !checks.arguments {
        return Ok(());
    }

    let n = args.len();
    let is_flag = |s: &str| s.eq_ignore_ascii_case("on") || s.eq_ignore_ascii_case("off");
    // Reversed, as crossplane does: the error reported is the first mask's.
    let mut reason = String::new();
    for &mask in masks.iter().rev() {
        if mask & CONF_BLOCK != 0 && term != "{" {
            reason = format!("directive \"{directive}\" has no opening \"{{\"");
            continue;
        }
        if mask & CONF_BLOCK == 0 && term != ";" {
            reason = format!("directive \"{directive}\" is not terminated by \";\"");
            continue;
        }
        if (n <= 7 && (mask >> n) & 1 == 1)
            || (mask & CONF_FLAG != 0 && n == 1 && is_flag(&args[0]))
            || mask & CONF_ANY != 0
            || (mask & CONF_1MORE != 0 && n >= 1)
            || (mask & CONF_2MORE != 0 && n >= 2)
        {
            return Ok(());
        } else if mask & CONF_FLAG != 0 && n == 1 {
            reason = format!(
                "invalid value \"{}\" in \"{directive}\" directive, it must be \"on\" or \"off\"",
                args[0]
            );
        } else {
            reason = format!("invalid number of arguments in \"{directive}\" directive");
        }
    }
    Err(DirectiveError {
        kind: DirectiveErrorKind::Arguments,
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: Checks = Checks {
        strict: false,
        context: true,
        arguments: true,
    };

    fn ctx(path: &[&str]) -> Vec<String> {
        path.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn table_is_sorted_for_binary_search() {
        assert!(DIRECTIVES.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(masks("worker_connections").is_some() && masks("content_by_lua_block").is_none());
    }

    #[test]
    fn context_and_argument_errors_read_like_crossplane() {
        let e = analyze("listen", &ctx(&["80"]), ";", &ctx(&["http"]), ALL).unwrap_err();
        assert_eq!(e.reason, "\"listen\" directive is not allowed here");
        let e = analyze("worker_processes", &[], ";", &[], ALL).unwrap_err();
        assert_eq!(
            e.reason,
            "invalid number of arguments in \"worker_processes\" directive"
        );
        let e = analyze("sendfile", &ctx(&["yes"]), ";", &ctx(&["http"]), ALL).unwrap_err();
        assert!(e
            .reason
            .starts_with("invalid value \"yes\" in \"sendfile\""));
        let e = analyze("http", &[], ";", &[], ALL).unwrap_err();
        assert_eq!(e.reason, "directive \"http\" has no opening \"{\"");
        assert!(analyze("sendfile", &ctx(&["On"]), ";", &ctx(&["http"]), ALL).is_ok());
    }

    #[test]
    fn unknown_directives_pass_unless_strict() {
        assert!(analyze("more_set_headers", &[], ";", &ctx(&["http"]), ALL).is_ok());
        let strict = Checks {
            strict: true,
            ..ALL
        };
        let e = analyze("more_set_headers", &[], ";", &ctx(&["http"]), strict).unwrap_err();
        assert_eq!(e.kind, DirectiveErrorKind::Unknown);
    }

    #[test]
    fn locations_do_not_nest_as_contexts() {
        let inner = enter_block("location", &ctx(&["http", "location"]));
        assert_eq!(inner, ctx(&["http", "location"]));
        assert_eq!(enter_block("if", &inner), ctx(&["http", "location", "if"]));
    }
}
