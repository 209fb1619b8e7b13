//! Fuzzes the nginx configuration parser and what reads its output: any
//! text (invalid UTF-8 becomes U+FFFD, as when a file is read) parses to a
//! payload under every option set without panicking; the payload prints as
//! crossplane JSON (and `tare nginx parse`'s streamed JSON is the same
//! bytes), retargets, relocates and gets advice; and building it
//! back to text is a fixed point: the built text parses and builds to
//! itself.
//!
//! Includes are not followed (`single`): a fuzzed `include /*` would read
//! the whole disk. The main file's text is given with `parse_text`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tare_nginx::advise::{self, HostFacts};
use tare_nginx::builder::enquote;
use tare_nginx::{build, parse_text, BuildOptions, ParseOptions, Payload, Statement};

const PATH: &str = "/nonexistent/tare-fuzz/nginx.conf";

fn options() -> [ParseOptions; 4] {
    let single = ParseOptions {
        single: true,
        ..ParseOptions::default()
    };
    [
        single.clone(),
        ParseOptions {
            comments: true,
            combine: true,
            ..single.clone()
        },
        ParseOptions {
            strict: true,
            catch_errors: false,
            ignore: vec!["server".into(), "if".into()],
            ..single.clone()
        },
        ParseOptions {
            check_ctx: false,
            check_args: false,
            ..single
        },
    ]
}

/// The main file built back to text.
fn built(payload: &Payload) -> String {
    let options = BuildOptions {
        header: false,
        ..BuildOptions::default()
    };
    payload
        .config
        .first()
        .map(|c| build(&c.parsed, &options))
        .unwrap_or_default()
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for (i, options) in options().iter().enumerate() {
        let payload = parse_text(PATH, &text, options);
        let json = tare_nginx::to_json(&payload, Some(2));
        // `tare nginx parse` streams the same bytes without the payload.
        let mut streamed = Vec::new();
        tare_nginx::stream::write_json(PATH, Some(&text), options, Some(2), &mut streamed)
            .expect("writing to memory");
        assert_eq!(String::from_utf8_lossy(&streamed), json, "streamed JSON (options {i})");
        let _ = tare_nginx::is_proxy(&payload);
        let _ = tare_nginx::retarget(&payload, "127.0.0.1:8080");
        let _ = tare_nginx::relocate(&payload, "/nonexistent", "/elsewhere");
        let host = HostFacts {
            cpus: 4,
            nofile: Some(1024),
            somaxconn: Some(4096),
        };
        let report = advise::advise(&payload, &host);
        let _ = report.to_text();
        for advice in &report.advice {
            let mut changed = payload.clone();
            let _ = advice.change.apply(&mut changed);
        }
        // Comments move when rebuilt (one after a block's `}` lands on
        // another line): the round trip is checked without them.
        if options.comments {
            continue;
        }
        // The round trip holds where crossplane's builder writes every word
        // so that it reads back the same; where it does not (see
        // `verbatim`), crossplane's output is kept, not "fixed".
        if !payload.config.iter().all(|c| verbatim(&c.parsed)) {
            continue;
        }
        let once = built(&payload);
        let twice = built(&parse_text(PATH, &once, options));
        assert_eq!(once, twice, "building is not a fixed point (options {i})");
    }
});

/// Words crossplane's builder writes so that they read back the same:
/// - no comments (crossplane keeps a comment met among a statement's
///   arguments even without `comments`; built, it follows the statement
///   and is dropped when read back);
/// - every word written as it is, or inside quotes as it is: `repr`
///   escapes (a newline as `\n`, a backslash before a quote) read back
///   as other characters;
/// - no word that starts with `#` (crossplane writes `"#29"` bare, and
///   `#29` reads back as a comment);
/// - no `${...}` (crossplane's lexer appends the character after the `}`,
///   a space included: `${x} y` built from two words reads back as one);
/// - no quoted first or last argument of `if`: built as `if (ARGS)`, it
///   is glued to the parenthesis and read back as another word.
fn verbatim(stmts: &[Statement]) -> bool {
    let plain = |w: &str| {
        let q = enquote(w);
        !w.contains("${")
            && !w.starts_with('#')
            && (q == w || q == format!("'{w}'") || q == format!("\"{w}\""))
    };
    let bare = |w: Option<&String>| w.map_or(true, |w| enquote(w) == *w);
    stmts.iter().all(|s| {
        !s.is_comment()
            && plain(&s.directive)
            && s.args.iter().all(|a| plain(a))
            && (s.directive != "if" || (bare(s.args.first()) && bare(s.args.last())))
            && s.block.as_deref().map_or(true, verbatim)
    })
}
