//! `tare doctor`: which placements this machine can run, and what would make
//! measurements noisy.

use std::process::ExitCode;

use clap::Args;

#[derive(Args, Debug)]
pub(crate) struct DoctorArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn run(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let report = tare_deploy::doctor();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{report}");
    }
    Ok(ExitCode::SUCCESS)
}
