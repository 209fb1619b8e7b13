//! The command-line contract (README.md, "The parts", and each command's page
//! in docs/).
//! Each subcommand's flags live beside its implementation in `cmd/`.

use clap::{Parser, Subcommand};

use crate::cmd;

#[derive(Parser, Debug)]
#[command(
    name = "tare",
    version = tare_runner::provenance::VERSION,
    about,
    propagate_version = true
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand, Debug)]
// Parsed once per run: pgbench's many flags make `Pg` large, which costs
// nothing here.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Command {
    /// HTTP/1.1 load: closed loop, keep-alive or a connection per request, TCP or Unix socket.
    Http(cmd::http::HttpArgs),
    /// PostgreSQL load over the wire protocol: pgbench's flags and text, plus percentiles, open loop (-R), --ramp, --find-max.
    #[command(disable_help_flag = true)]
    Pg(cmd::pg::PgArgs),
    /// Redis load over RESP: redis-benchmark's flags and text, plus a duration (-T), percentiles, open loop (--rate), --find-max.
    #[command(disable_help_flag = true)]
    Redis(cmd::redis::RedisArgs),
    /// MySQL/MariaDB load: sysbench's OLTP tests (prepare, run, cleanup) with its flags and text, plus percentiles, open loop (--rate), --find-max.
    #[command(disable_help_flag = true)]
    Mysql(cmd::mysql::MysqlArgs),
    /// The built-in HTTP/1.1 server (the embedded default target).
    Serve(cmd::serve::ServeArgs),
    /// Network round trips (rr, crr, udp-rr) and bulk streams, netperf's and nuttcp's tests; `tare net serve` is their responder.
    Net(cmd::net::NetArgs),
    /// The field's own benchmark programs (fio, hpcc, sysbench) as jobs read into named metrics; `tare tool serve` is the agent a deployment runs them with.
    Tool(cmd::tool::ToolArgs),
    /// Run an experiment (none given: the built-in quick one): interleaved trials, recorded as they finish, then the report.
    Run(cmd::run::RunArgs),
    /// Re-analyse a recorded run: per-cell medians with intervals, the attribution waterfall, fairness findings.
    Report(cmd::report::ReportArgs),
    /// Compare two recorded runs cell by cell, as benchstat does.
    Compare(cmd::compare::CompareArgs),
    /// nginx configuration: parse (crossplane JSON), build, advise.
    Nginx(cmd::nginx::NginxArgs),
    /// Tune an nginx config by measurement: each recommendation alone, kept only if it helps beyond the noise.
    Tune(cmd::tune::TuneArgs),
    /// Docker images of the host's own server binaries (no registry): `tare image build nginx`.
    Image(cmd::image::ImageArgs),
    /// What this machine can run (placements) and what would make measurements noisy.
    Doctor(cmd::doctor::DoctorArgs),
    /// Remove everything killed tare runs left behind (and nothing else).
    Cleanup(cmd::cleanup::CleanupArgs),
    /// Write a commented starter experiment for a target kind (`tare init nginx`).
    Init(cmd::init::InitArgs),
    /// A shell completion script: `tare completions bash > /etc/bash_completion.d/tare`.
    Completions(cmd::completions::CompletionsArgs),
    /// The man page (`tare man | man -l -`), or one per subcommand with --dir.
    Man(cmd::man::ManArgs),
    /// What a tare copied to a remote host runs there (started over ssh by tare itself).
    #[command(hide = true)]
    Agent(cmd::agent::AgentArgs),
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap checks its definitions (ids, conflicts, short flags) only in
    /// debug builds; the test profile is optimised, so check them here.
    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
