//! The `tare` binary: parses the command line and hands each subcommand to the
//! library that does the work. The one place that prints errors and picks the
//! exit code.

// Functions a reader can hold: none over 100 lines (clippy.toml) outside tests.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod cli;
mod cmd;

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    quiet_panics();
    // Every connection is a file: take the whole open-files limit, for
    // tare and for the servers it starts (they inherit it).
    tare_engine::limits::raise_open_files();
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version: clap's full text, success.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // `tare pg` exits as pgbench does: 1 for a mistake in the flags.
            if std::env::args().nth(1).as_deref() == Some("pg") {
                let line = usage_error(&e.to_string()).replace(
                    "(see tare pg --help)",
                    "(try \"tare pg --help\" for more information)",
                );
                eprintln!("tare: {line}");
                return ExitCode::from(1);
            }
            eprintln!("tare: {}", usage_error(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    match cmd::dispatch(cli.command) {
        Ok(code) => code,
        Err(err) if broken_pipe(&err) => ExitCode::from(141),
        Err(err) => {
            eprintln!("tare: {}", one_line(&err));
            ExitCode::from(2)
        }
    }
}

/// Whether `err` is a write to a reader that went away (`tare ... | head`).
fn broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Output cut short by a reader that went away (`tare run --check | head`)
/// ends tare quietly, as a shell's SIGPIPE would end it (exit 141; SIGPIPE
/// itself stays ignored, so a load engine's socket to a server that closed
/// reports an error instead of killing tare). Any other panic is a bug: one
/// line saying where, the full backtrace only when `RUST_BACKTRACE` asks.
fn quiet_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("panic");
        if msg.contains("Broken pipe") {
            std::process::exit(141);
        }
        if std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0") {
            default(info);
        } else {
            let at = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            eprintln!("tare: internal error (a bug, please report it): {msg}{at}");
        }
    }));
}

/// clap's error as one line, as every other error: its first paragraph
/// (which, for a missing argument, is the message and the arguments'
/// names on the lines after it), then where to look.
fn usage_error(text: &str) -> String {
    let first: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.is_empty())
        .collect();
    let first = first.join(" ");
    let first = first.strip_prefix("error: ").unwrap_or(&first);
    // `Usage: tare report [OPTIONS] <DIR>` names the subcommand to ask.
    let command: Vec<&str> = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Usage: "))
        .map(|u| {
            u.split_whitespace()
                .take_while(|w| !w.starts_with(['[', '<', '-']))
                .collect()
        })
        .unwrap_or_default();
    let command = if command.is_empty() {
        "tare".to_string()
    } else {
        command.join(" ")
    };
    let first = if first.is_empty() {
        "invalid arguments"
    } else {
        first
    };
    format!("{first} (see {command} --help)")
}

/// The error and its causes on one line, joined as anyhow's `{:#}` does,
/// without a cause its message already holds (a `path: {source}` message
/// whose source is that OS error would print it twice): no backtrace, no
/// panic.
fn one_line(err: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_argument_is_named() {
        let clap = "error: the following required arguments were not provided:\n  <DIR>\n\nUsage: tare report <DIR>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            usage_error(clap),
            "the following required arguments were not provided: <DIR> (see tare report --help)"
        );
        assert_eq!(
            usage_error("error: unexpected argument '-x' found\n\nUsage: tare [OPTIONS]\n"),
            "unexpected argument '-x' found (see tare --help)"
        );
    }

    #[test]
    fn an_os_error_is_printed_once() {
        /// As thiserror makes `#[error("/x: {source}")]`.
        #[derive(Debug)]
        struct Io {
            source: std::io::Error,
        }
        impl std::fmt::Display for Io {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "/x: {}", self.source)
            }
        }
        impl std::error::Error for Io {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.source)
            }
        }
        let err = anyhow::Error::new(Io {
            source: std::io::Error::from_raw_os_error(2),
        })
        .context("cannot start");
        assert_eq!(
            one_line(&err),
            "cannot start: /x: No such file or directory (os error 2)"
        );
    }
}
