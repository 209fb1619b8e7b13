//! `tare tool`: the field's own benchmark programs (fio, hpcc, sysbench)
//! run as a job and read into named metrics (`tare tool run JOB`), the
//! built-in jobs (`tare tool jobs`), and the agent a deployment starts
//! inside its placement (`tare tool serve`; docs/tools.md).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use tare_engine::units::{parse_duration, parse_size};
use tare_record::LoadResult;
use tare_tool::agent::{self, AgentConfig, Listen};
use tare_tool::{Job, Place, Tool, ToolConfig};

#[derive(Args, Debug)]
pub(crate) struct ToolArgs {
    #[command(subcommand)]
    pub(crate) command: ToolCommand,
}

#[derive(Subcommand, Debug)]
pub(crate) enum ToolCommand {
    /// Run a job here, in a directory, and print its metrics.
    Run(ToolRunArgs),
    /// List the built-in jobs.
    Jobs,
    /// The agent a deployment starts inside its placement: runs its job when asked.
    Serve(ToolServeArgs),
}

#[derive(Args, Debug)]
pub(crate) struct ToolRunArgs {
    /// A built-in job (`tare tool jobs`) or a job file (TOML, docs/tools.md).
    pub(crate) job: String,
    /// The working directory: fio's test file is made here.
    #[arg(long, default_value = ".")]
    pub(crate) dir: PathBuf,
    /// How long fio and sysbench run (`0`: to completion); hpcc always completes.
    #[arg(short = 'd', long, default_value = "10s", value_parser = parse_duration)]
    pub(crate) duration: Duration,
    /// fio's test file size.
    #[arg(long, default_value = "256m", value_parser = parse_size)]
    pub(crate) size: usize,
    /// hpcc's HPL matrix order N (STREAM and RandomAccess are sized from it).
    #[arg(long, default_value_t = 2000)]
    pub(crate) hpl_n: u32,
    /// sysbench threads, fio jobs.
    #[arg(short = 't', long, default_value_t = 1)]
    pub(crate) threads: usize,
    /// The metric to call primary instead of the job's (e.g. read_clat_p99_us).
    #[arg(long)]
    pub(crate) primary: Option<String>,
    /// Give up on a run after this long.
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    pub(crate) limit: Duration,
    /// Write the JSON result to PATH (`-`: stdout, instead of the text).
    #[arg(long, value_name = "PATH")]
    pub(crate) json: Option<String>,
}

#[derive(Args, Debug)]
pub(crate) struct ToolServeArgs {
    /// TCP address to listen on.
    #[arg(long, default_value = "127.0.0.1:9876")]
    pub(crate) listen: std::net::SocketAddr,
    /// Listen on this Unix socket instead.
    #[arg(long, value_name = "PATH")]
    pub(crate) unix: Option<PathBuf>,
    /// The job: a built-in name or a job file (TOML, or the JSON a deployment writes).
    #[arg(long)]
    pub(crate) job: String,
    /// The job's working directory.
    #[arg(long)]
    pub(crate) dir: PathBuf,
}

pub(crate) fn run(args: ToolArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        ToolCommand::Jobs => {
            for name in tare_tool::BUILTIN {
                let job = tare_tool::builtin(name).expect("listed");
                println!("{name:18} {:9} primary {}", job.tool.name(), job.primary);
            }
            Ok(ExitCode::SUCCESS)
        }
        ToolCommand::Serve(a) => {
            let job = load_job(&a.job)?;
            let listen = match a.unix {
                Some(p) => Listen::Unix(p),
                None => Listen::Tcp(a.listen),
            };
            agent::serve(AgentConfig {
                listen,
                job,
                dir: a.dir,
            })
            .context("tare tool serve")?;
            Ok(ExitCode::SUCCESS)
        }
        ToolCommand::Run(a) => {
            check(&a)?;
            let job = load_job(&a.job)?;
            let mut config = ToolConfig::new(Place::Local { job, dir: a.dir });
            config.load.duration = (!a.duration.is_zero()).then_some(a.duration);
            config.load.threads = a.threads.max(1);
            config.file_bytes = a.size as u64;
            config.hpl_n = a.hpl_n;
            config.limit = a.limit;
            config.primary = a.primary;
            let stop = super::emit::ctrl_c_flag()?;
            let result = <Tool as tare_engine::Engine>::run(&config, stop.clone())
                .map_err(|e| anyhow::anyhow!(e))?;
            if stop.load(Ordering::Relaxed) {
                anyhow::bail!("interrupted");
            }
            super::emit::result(a.json.as_deref(), &result, || text(&result))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// A built-in, a TOML job file, or the JSON job a deployment writes.
fn load_job(name: &str) -> anyhow::Result<Job> {
    if name.ends_with(".json") {
        let text = std::fs::read_to_string(name).with_context(|| format!("reading {name}"))?;
        let job: Job = serde_json::from_str(&text).with_context(|| format!("job {name}"))?;
        job.check()
            .map_err(|e| anyhow::anyhow!("job {name}: {e}"))?;
        return Ok(job);
    }
    Job::named(name).map_err(|e| anyhow::anyhow!(e))
}

/// The metrics, the primary first, then what ran where.
fn text(r: &LoadResult) -> String {
    let mut out = String::new();
    let p = r.primary();
    if let Some(t) = &r.tool {
        out.push_str(&format!("{} ({}), {:.1} s\n", t.job, t.version, t.wall_s));
    }
    out.push_str(&format!(
        "  {:28} {:>14} {} ({}, primary)\n",
        p.name,
        fmt(p.value),
        p.unit,
        p.better.words()
    ));
    for m in r.metrics.iter().filter(|m| m.name != p.name) {
        out.push_str(&format!(
            "  {:28} {:>14} {}\n",
            m.name,
            fmt(m.value),
            m.unit
        ));
    }
    if let Some(t) = &r.tool {
        out.push_str(&format!(
            "  data on {}",
            t.data_fs.as_deref().unwrap_or("an unknown filesystem")
        ));
        if let Some(d) = t.direct {
            out.push_str(if d { ", direct I/O" } else { ", buffered I/O" });
        }
        out.push_str(&format!(
            ", CPU {:.2} s user + {:.2} s system\n",
            t.cpu_user_s, t.cpu_system_s
        ));
        for n in &t.notes {
            out.push_str(&format!("  note: {n}\n"));
        }
        out.push_str(&format!("  command: {}\n", t.command.join(" ")));
    }
    out
}

/// Four significant digits, without exponents for everyday magnitudes.
fn fmt(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

/// The bounds `[load.tool]` has too (docs/experiments.md, "Limits").
fn check(a: &ToolRunArgs) -> anyhow::Result<()> {
    use tare_engine::bounds::{self, duration_at_most};
    let size = a.size as u64;
    if !(bounds::MIN_TOOL_FILE..=bounds::MAX_TOOL_FILE).contains(&size) {
        anyhow::bail!(
            "--size must be from {} to {}",
            bounds::show_bytes(bounds::MIN_TOOL_FILE),
            bounds::show_bytes(bounds::MAX_TOOL_FILE)
        );
    }
    duration_at_most(a.duration, bounds::MAX_DURATION)
        .map_err(|m| anyhow::anyhow!("--duration {m}"))?;
    duration_at_most(a.limit, bounds::MAX_TOOL_LIMIT)
        .map_err(|m| anyhow::anyhow!("--limit {m}"))?;
    if !(1..=bounds::MAX_THREADS).contains(&a.threads) {
        anyhow::bail!("--threads must be between 1 and {}", bounds::MAX_THREADS);
    }
    Ok(())
}
