//! `tare serve`: see the serve crate.

use std::process::ExitCode;

use clap::Args;

#[derive(Args, Debug)]
pub struct ServeArgs {}

pub fn run(_args: ServeArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("tare serve is being written")
}
