//! `tare cleanup`: remove what killed tare runs left behind (processes,
//! deployment directories, containers, volumes, lab namespaces, links and
//! nftables tables), found by tare's labels and prefixes, and nothing else;
//! with `--hosts-from`, on remote hosts too (docs/remote.md).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use tare_remote::Host;
use tare_runner::remote::{HostsFile, HOSTS_FILE};
use tare_runner::{ConfigSource, Experiment};

#[derive(Args, Debug)]
pub(crate) struct CleanupArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Also clean up the remote hosts of a run directory (its hosts.json:
    /// that run's files there) or of an experiment file (every tare run's
    /// files in each host's dir).
    #[arg(long, value_name = "RUN_DIR|EXPERIMENT")]
    pub(crate) hosts_from: Option<PathBuf>,
    /// Only this host of --hosts-from (repeatable); this machine is then
    /// left alone.
    #[arg(long, value_name = "NAME", requires = "hosts_from")]
    pub(crate) host: Vec<String>,
}

pub(crate) fn run(args: CleanupArgs) -> anyhow::Result<ExitCode> {
    let mut report = if args.host.is_empty() {
        tare_deploy::cleanup()?
    } else {
        tare_deploy::CleanupReport::default()
    };
    if let Some(path) = &args.hosts_from {
        let (hosts, run_id) = hosts_of(path)?;
        for name in &args.host {
            if !hosts.iter().any(|h| &h.name == name) {
                let known: Vec<&str> = hosts.iter().map(|h| h.name.as_str()).collect();
                anyhow::bail!(
                    "no host {name} in {} (hosts: {})",
                    path.display(),
                    known.join(", ")
                );
            }
        }
        for h in hosts
            .iter()
            .filter(|h| args.host.is_empty() || args.host.contains(&h.name))
        {
            match tare_remote::cleanup::cleanup(h, run_id.as_deref()) {
                Ok(lines) => report.removed.extend(lines),
                Err(e) => report.notes.push(e.to_string()),
            }
        }
    }
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

/// The hosts of a run directory (and its run id) or of an experiment file.
fn hosts_of(path: &Path) -> anyhow::Result<(Vec<Host>, Option<String>)> {
    if path.is_dir() {
        let file = path.join(HOSTS_FILE);
        let text = std::fs::read_to_string(&file).with_context(|| {
            format!("{}: not a run directory with remote hosts", file.display())
        })?;
        let f: HostsFile = serde_json::from_str(&text)
            .with_context(|| format!("{}: not tare's hosts file", file.display()))?;
        return Ok((f.hosts, Some(f.run_id)));
    }
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let exp = Experiment::parse(&text, path, &ConfigSource::RelativeTo(dir))?;
    Ok((exp.hosts.all, None))
}
