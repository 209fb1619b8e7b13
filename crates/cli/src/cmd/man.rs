//! `tare man`: the man page, from the command line's own definition
//! (clap_mangen): tare(1) on standard output, or with `--dir` one page per
//! subcommand as well (tare-run(1), tare-http(1), ...).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, CommandFactory as _};

#[derive(Args, Debug)]
pub(crate) struct ManArgs {
    /// Write tare.1 and a page per subcommand (tare-run.1, ...) into this
    /// directory instead of printing tare.1.
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
}

pub(crate) fn run(args: ManArgs) -> anyhow::Result<ExitCode> {
    let cmd = crate::cli::Cli::command();
    match args.dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .and_then(|()| clap_mangen::generate_to(cmd, &dir))
                .with_context(|| format!("writing man pages into {}", dir.display()))?;
            eprintln!("tare man: wrote the pages into {}", dir.display());
        }
        None => clap_mangen::Man::new(cmd).render(&mut std::io::stdout())?,
    }
    Ok(ExitCode::SUCCESS)
}
