//! One module per subcommand: its flags (clap `Args`) and its `run`.

pub(crate) mod agent;
pub(crate) mod cleanup;
pub(crate) mod compare;
pub(crate) mod completions;
pub(crate) mod doctor;
mod emit;
pub(crate) mod http;
pub(crate) mod image;
pub(crate) mod init;
mod load_args;
pub(crate) mod man;
pub(crate) mod mysql;
pub(crate) mod net;
pub(crate) mod nginx;
pub(crate) mod pg;
pub(crate) mod pgbench_flags;
pub(crate) mod redis;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod serve;
pub(crate) mod tool;
pub(crate) mod tune;

use std::process::ExitCode;

use crate::cli::Command;

pub(crate) fn dispatch(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Http(args) => http::run(args),
        Command::Agent(args) => agent::run(args),
        Command::Nginx(args) => nginx::run(args),
        Command::Pg(args) => pg::run(args),
        Command::Redis(args) => redis::run(args),
        Command::Mysql(args) => mysql::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Net(args) => net::run(args),
        Command::Tool(args) => tool::run(args),
        Command::Run(args) => run::run(args),
        Command::Report(args) => report::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Image(args) => image::run(args),
        Command::Doctor(args) => doctor::run(args),
        Command::Cleanup(args) => cleanup::run(args),
        Command::Tune(args) => tune::run(args),
        Command::Init(args) => init::run(args),
        Command::Completions(args) => completions::run(args),
        Command::Man(args) => man::run(args),
    }
}
