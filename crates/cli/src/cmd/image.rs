//! `tare image build TARGET`: a local Docker image from the host's own server
//! binary (see tare_deploy::docker::image), so native and container runs use
//! the identical binary without a registry.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use tare_deploy::{TargetKind, TargetSpec};

#[derive(Args, Debug)]
pub(crate) struct ImageArgs {
    #[command(subcommand)]
    pub(crate) action: ImageAction,
}

#[derive(Subcommand, Debug)]
pub(crate) enum ImageAction {
    /// Build tare/TARGET:<hash of binary> from the host's binary and its shared libraries.
    Build {
        /// nginx, postgres or tare-serve.
        target: TargetKind,
        /// The server binary (default: nginx and postgres as installed, tare-serve: this tare).
        #[arg(long, value_name = "PATH")]
        binary: Option<PathBuf>,
        /// Rebuild even if an image with this tag exists.
        #[arg(long)]
        force: bool,
    },
}

pub(crate) fn run(args: ImageArgs) -> anyhow::Result<ExitCode> {
    match args.action {
        ImageAction::Build {
            target,
            binary,
            force,
        } => {
            let mut spec = TargetSpec::of(target);
            spec.target.binary = binary;
            let binary = tare_deploy::target_binary(&spec)?;
            let info = tare_deploy::build_image(&spec.target, &binary, force)?;
            if info.built {
                println!(
                    "built {} from {} (sha256 {}, {} files, {:.1} MB context)",
                    info.tag,
                    info.binary.display(),
                    &info.binary_sha256[..16],
                    info.files,
                    info.context_bytes as f64 / 1e6
                );
            } else {
                println!(
                    "{} is up to date (binary {} sha256 {})",
                    info.tag,
                    info.binary.display(),
                    &info.binary_sha256[..16]
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
