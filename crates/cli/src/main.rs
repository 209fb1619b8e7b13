//! The `tare` binary: parses the command line and hands each subcommand to the
//! library that does the work. The one place that prints errors and picks the
//! exit code.

mod cli;
mod cmd;

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
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
        Err(err) => {
            // One line, the chain joined: no backtrace, no panic.
            eprintln!("tare: {err:#}");
            ExitCode::from(2)
        }
    }
}
