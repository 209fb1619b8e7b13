//! One module per subcommand: its flags (clap `Args`) and its `run`.

pub mod cleanup;
pub mod compare;
pub mod doctor;
mod emit;
pub mod http;
pub mod image;
mod load_args;
pub mod nginx;
pub mod pg;
pub mod report;
pub mod run;
pub mod serve;
pub mod tune;

use std::process::ExitCode;

use crate::cli::Command;

pub fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Http(args) => http::run(args),
        Command::Nginx(args) => nginx::run(args),
        Command::Pg(args) => pg::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Run(args) => run::run(args),
        Command::Report(args) => report::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Image(args) => image::run(args),
        Command::Doctor(args) => doctor::run(args),
        Command::Cleanup(args) => cleanup::run(args),
        Command::Tune(args) => tune::run(args),
    }
}
