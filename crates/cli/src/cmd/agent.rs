//! `tare agent …`: what a tare copied to a remote host runs there, started
//! by the tare that copied it over ssh (docs/remote.md). Not for people:
//! each reads one JSON request on stdin and answers with JSON lines.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

#[derive(Args, Debug)]
pub(crate) struct AgentArgs {
    #[command(subcommand)]
    pub(crate) command: AgentCommand,
}

#[derive(Subcommand, Debug)]
pub(crate) enum AgentCommand {
    /// Answers each line with this host's clock (the offset measurement).
    Clock,
    /// This host's addresses, and whether it can deploy each spec asked.
    Check,
    /// Deploys a target and keeps it until told to stop.
    Deploy,
    /// One generator's share of a load.
    Load,
    /// Ends this run's agents, cleans up their deployments, removes DIR.
    Cleanup { dir: PathBuf },
}

pub(crate) fn run(args: AgentArgs) -> anyhow::Result<ExitCode> {
    let done = match args.command {
        AgentCommand::Clock => {
            tare_remote::clock::serve();
            Ok(())
        }
        AgentCommand::Check => tare_remote::target::serve_check(),
        AgentCommand::Deploy => tare_remote::target::serve_deploy(),
        AgentCommand::Load => tare_runner::remote::serve_load(),
        AgentCommand::Cleanup { dir } => tare_remote::cleanup::serve_cleanup(&dir),
    };
    done.map_err(anyhow::Error::msg)?;
    Ok(ExitCode::SUCCESS)
}
