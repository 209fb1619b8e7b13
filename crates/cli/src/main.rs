//! The `tare` binary: parses the command line and hands each subcommand to the
//! library that does the work. The one place that prints errors and picks the
//! exit code.

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
            // One line, as every other error: clap's first line, then where to look.
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("tare: {first} (see tare --help)");
            return ExitCode::from(2);
        }
    };
    match cmd::dispatch(cli.command) {
        Ok(code) => code,
        Err(err) if broken_pipe(&err) => ExitCode::from(141),
        Err(err) => {
            // One line, the chain joined: no backtrace, no panic.
            eprintln!("tare: {err:#}");
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
