//! `tare completions SHELL`: the shell's completion script, from the
//! command line's own definition (clap_complete), on standard output.

use std::io::Write as _;
use std::process::ExitCode;

use clap::{Args, CommandFactory as _};
use clap_complete::Shell;

#[derive(Args, Debug)]
pub(crate) struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    pub(crate) shell: Shell,
}

pub(crate) fn run(args: CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut cmd = crate::cli::Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "tare", &mut script);
    std::io::stdout().write_all(&script)?;
    Ok(ExitCode::SUCCESS)
}
