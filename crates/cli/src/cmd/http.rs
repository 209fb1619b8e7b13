//! `tare http URL`: see the http crate.

use std::process::ExitCode;

use clap::Args;

#[derive(Args, Debug)]
pub struct HttpArgs {
    /// Target URL (http://HOST[:PORT]/PATH).
    pub url: String,
}

pub fn run(_args: HttpArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("tare http is being written")
}
