//! The `tare` binary: parses the command line and hands each subcommand to the
//! library that does the work. The one place that prints errors and picks the
//! exit code.

mod cli;
mod cmd;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cmd::dispatch(cli.command) {
        Ok(code) => code,
        Err(err) => {
            // One line, the chain joined: no backtrace, no panic.
            eprintln!("tare: {err:#}");
            ExitCode::from(2)
        }
    }
}
