//! One module per subcommand: its flags (clap `Args`) and its `run`.

pub mod http;
pub mod serve;

use std::process::ExitCode;

use crate::cli::Command;

pub fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Http(args) => http::run(args),
        Command::Serve(args) => serve::run(args),
    }
}
