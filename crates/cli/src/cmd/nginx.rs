//! `tare nginx`: parse a configuration into crossplane's JSON, build one back
//! from that JSON, and advise on tuning (see the nginx crate and docs/nginx.md).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Args, Subcommand, ValueEnum};
use tare_nginx::advise::{self, LocalHost, Priority};
use tare_nginx::{BuildOptions, ParseOptions, Payload};

#[derive(Args, Debug)]
pub(crate) struct NginxArgs {
    #[command(subcommand)]
    pub(crate) command: NginxCommand,
}

#[derive(Subcommand, Debug)]
pub(crate) enum NginxCommand {
    /// Parse a configuration (following includes): a summary, or crossplane's JSON with --json.
    Parse(ParseArgs),
    /// Write configuration files back from crossplane JSON.
    Build(BuildArgs),
    /// Check a configuration against the tuning lists of seeds 000 and 003 (docs/studies.md).
    Advise(AdviseArgs),
}

/// Flags mirror `crossplane parse`; with --json the output is byte-identical to it.
#[derive(Args, Debug)]
pub(crate) struct ParseArgs {
    /// The main configuration file (includes are resolved relative to its directory).
    pub(crate) file: String,
    /// Print crossplane's JSON (byte-identical to `crossplane parse`) instead of
    /// a summary of the files read and the errors.
    #[arg(long)]
    pub(crate) json: bool,
    /// Write the JSON to this file instead of stdout.
    #[arg(short, long)]
    pub(crate) out: Option<PathBuf>,
    /// Indent the JSON by this many spaces (default: compact, as crossplane).
    #[arg(short, long, value_name = "NUM")]
    pub(crate) indent: Option<usize>,
    /// Directives to leave out, comma-separated.
    #[arg(long, value_name = "DIRECTIVES", default_value = "")]
    pub(crate) ignore: String,
    /// Stop a file at its first error.
    #[arg(long)]
    pub(crate) no_catch: bool,
    /// One config entry with the includes spliced in.
    #[arg(long)]
    pub(crate) combine: bool,
    /// Do not follow includes.
    #[arg(long)]
    pub(crate) single_file: bool,
    /// Keep comments in the JSON.
    #[arg(long)]
    pub(crate) include_comments: bool,
    /// Unknown directives are errors.
    #[arg(long)]
    pub(crate) strict: bool,
    /// With --json, exit 1 when the configuration has errors (crossplane always
    /// exits 0; the summary always does).
    #[arg(long)]
    pub(crate) check: bool,
}

/// Flags mirror `crossplane build`, except that existing files are never
/// overwritten without `--force` (crossplane asks interactively).
#[derive(Args, Debug)]
pub(crate) struct BuildArgs {
    /// The JSON payload (`-` for stdin).
    pub(crate) file: String,
    /// Base directory for relative file names (default: the current directory).
    #[arg(short, long = "dir", value_name = "PATH")]
    pub(crate) dir: Option<PathBuf>,
    /// Overwrite existing files.
    #[arg(short, long)]
    pub(crate) force: bool,
    /// Spaces per indentation level.
    #[arg(
        short,
        long,
        value_name = "NUM",
        default_value_t = 4,
        conflicts_with = "tabs"
    )]
    pub(crate) indent: usize,
    /// Indent with tabs.
    #[arg(short, long)]
    pub(crate) tabs: bool,
    /// Do not start files with crossplane's header comment.
    #[arg(long)]
    pub(crate) no_headers: bool,
    /// Print the files (each after a `# PATH` line) instead of writing them.
    #[arg(long)]
    pub(crate) stdout: bool,
    /// Print the paths written.
    #[arg(short, long)]
    pub(crate) verbose: bool,
}

#[derive(Args, Debug)]
pub(crate) struct AdviseArgs {
    /// The main configuration file.
    pub(crate) file: String,
    /// JSON output (one object: host facts, advice list).
    #[arg(long)]
    pub(crate) json: bool,
    /// Exit 1 if any advice has this priority or higher (for CI).
    #[arg(long, value_enum, value_name = "PRIORITY")]
    pub(crate) fail_on: Option<Level>,
    /// Use this CPU count instead of this machine's.
    #[arg(long)]
    pub(crate) cpus: Option<u64>,
    /// Use this open-files limit instead of this process's `ulimit -n`.
    #[arg(long)]
    pub(crate) nofile: Option<u64>,
    /// Use this `net.core.somaxconn` instead of this machine's.
    #[arg(long)]
    pub(crate) somaxconn: Option<u64>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum Level {
    High,
    Medium,
    Low,
}

impl From<Level> for Priority {
    fn from(l: Level) -> Priority {
        match l {
            Level::High => Priority::High,
            Level::Medium => Priority::Medium,
            Level::Low => Priority::Low,
        }
    }
}

pub(crate) fn run(args: NginxArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        NginxCommand::Parse(a) => parse(a),
        NginxCommand::Build(a) => build(a),
        NginxCommand::Advise(a) => advise_cmd(a),
    }
}

fn parse(a: ParseArgs) -> anyhow::Result<ExitCode> {
    let options = ParseOptions {
        catch_errors: !a.no_catch,
        ignore: a
            .ignore
            .split(',')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect(),
        single: a.single_file,
        comments: a.include_comments,
        strict: a.strict,
        combine: a.combine,
        ..ParseOptions::default()
    };
    // Written as the files are parsed, never held whole: memory stays near
    // the largest file's size (docs/nginx.md, "Memory").
    let json = a.json || a.out.is_some() || a.indent.is_some();
    let write = |out: &mut dyn Write| -> std::io::Result<bool> {
        let failed = if json {
            let failed = tare_nginx::stream::write_json(&a.file, None, &options, a.indent, out)?;
            out.write_all(b"\n")?;
            failed
        } else {
            tare_nginx::stream::write_summary(&a.file, &options, out)?
        };
        out.flush()?;
        Ok(failed)
    };
    let failed = match &a.out {
        Some(path) => {
            let file = std::fs::File::create(path)
                .with_context(|| format!("writing {}", path.display()))?;
            write(&mut std::io::BufWriter::new(file))
                .with_context(|| format!("writing {}", path.display()))?
        }
        None => match write(&mut std::io::BufWriter::new(std::io::stdout().lock())) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => false,
            r => r.context("writing to stdout")?,
        },
    };
    Ok(if failed && (a.check || !json) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn read_payload(file: &str) -> anyhow::Result<Payload> {
    let mut text = String::new();
    if file == "-" {
        std::io::stdin().read_to_string(&mut text)?;
    } else {
        text = std::fs::read_to_string(file).with_context(|| format!("reading {file}"))?;
    }
    serde_json::from_str(&text).with_context(|| format!("{file} is not a crossplane payload"))
}

fn build(a: BuildArgs) -> anyhow::Result<ExitCode> {
    let payload = read_payload(&a.file)?;
    let options = BuildOptions {
        indent: a.indent,
        tabs: a.tabs,
        header: !a.no_headers,
    };
    let dir = match a.dir {
        Some(d) => d,
        None => std::env::current_dir()?,
    };
    if a.stdout {
        let out = tare_nginx::builder::build_stdout(&payload, &dir, &options);
        std::io::stdout().write_all(out.as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    if !a.force {
        let existing: Vec<String> = payload
            .config
            .iter()
            .map(|c| tare_nginx::builder::target_path(&dir, &c.file))
            .filter(|p| p.exists())
            .map(|p| p.display().to_string())
            .collect();
        if !existing.is_empty() {
            bail!(
                "building would overwrite {} (use --force)",
                existing.join(", ")
            );
        }
    }
    let written =
        tare_nginx::build_files(&payload, &dir, &options).context("writing config files")?;
    if a.verbose {
        for path in written {
            println!("wrote to {}", path.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn advise_cmd(a: AdviseArgs) -> anyhow::Result<ExitCode> {
    let payload = tare_nginx::parse(&a.file, &ParseOptions::default());
    if payload.status == tare_nginx::Status::Failed {
        for e in &payload.errors {
            eprintln!("tare: {}", e.describe());
        }
        bail!("{} has errors; fix them before tuning", a.file);
    }
    let host = LocalHost.with_overrides(a.cpus, a.nofile, a.somaxconn);
    let report = advise::advise(&payload, &host);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.to_text());
    }
    let failing = a
        .fail_on
        .map(Priority::from)
        .is_some_and(|p| report.any_at_least(p));
    Ok(if failing {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
