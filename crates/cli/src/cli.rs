//! The command-line contract (DESIGN.md, "Command-line contract (v1)").
//! Each subcommand's flags live beside its implementation in `cmd/`.

use clap::{Parser, Subcommand};

use crate::cmd;

#[derive(Parser, Debug)]
#[command(name = "tare", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// HTTP/1.1 load: closed loop, keep-alive or a connection per request, TCP or Unix socket.
    Http(cmd::http::HttpArgs),
    /// The built-in HTTP/1.1 server (the embedded default target).
    Serve(cmd::serve::ServeArgs),
}
