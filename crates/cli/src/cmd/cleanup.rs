//! `tare cleanup`: remove what killed tare runs left behind (processes,
//! deployment directories, containers, volumes, lab namespaces, links and
//! nftables tables), found by tare's labels and prefixes, and nothing else.

use std::process::ExitCode;

use clap::Args;

#[derive(Args, Debug)]
pub(crate) struct CleanupArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(args: CleanupArgs) -> anyhow::Result<ExitCode> {
    let report = tare_deploy::cleanup()?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    if report.removed.is_empty() {
        println!("nothing to remove");
    }
    for r in &report.removed {
        println!("removed {r}");
    }
    for l in &report.live {
        println!("kept {l} (its tare process still runs)");
    }
    for n in &report.notes {
        eprintln!("note: {n}");
    }
    Ok(ExitCode::SUCCESS)
}
