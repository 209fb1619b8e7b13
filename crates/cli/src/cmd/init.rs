//! `tare init [KIND]`: writes a commented starter experiment that passes
//! `tare run --check` (`tare_runner::starter`).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context as _};
use clap::Args;

#[derive(Args, Debug)]
pub(crate) struct InitArgs {
    /// The target kind the experiment measures: tare-serve (the default),
    /// nginx, nginx-proxy, postgres, redis, mariadb, net, tool, command
    /// (your own program) or image (your own image).
    pub(crate) kind: Option<String>,
    /// Where to write it (`-`: standard output). Default: `KIND.toml` in
    /// the current directory.
    #[arg(long, short = 'o', value_name = "PATH")]
    pub(crate) out: Option<PathBuf>,
    /// Replace the file if it exists.
    #[arg(long)]
    pub(crate) force: bool,
}

pub(crate) fn run(args: InitArgs) -> anyhow::Result<ExitCode> {
    let kinds = tare_runner::starter::kinds();
    let kind = args.kind.as_deref().unwrap_or(kinds[0]);
    let text = tare_runner::starter::starter(kind).map_err(anyhow::Error::msg)?;
    let out = args
        .out
        .unwrap_or_else(|| PathBuf::from(format!("{kind}.toml")));
    if out.as_os_str() == "-" {
        std::io::stdout().write_all(text.as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut file = std::fs::OpenOptions::new();
    file.write(true);
    if args.force {
        file.create(true).truncate(true);
    } else {
        file.create_new(true);
    }
    let mut f = match file.open(&out) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => bail!(
            "{} exists: not replaced (--force replaces it, --out writes elsewhere)",
            out.display()
        ),
        r => r.with_context(|| format!("writing {}", out.display()))?,
    };
    f.write_all(text.as_bytes())
        .with_context(|| format!("writing {}", out.display()))?;
    eprintln!(
        "tare init: wrote {} (check it: tare run --check {0}; run it: tare run {0})",
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}
