//! The tool engine: one run of a job, either through the agent a
//! deployment started inside its placement, or right here in a directory
//! (`tare tool run`), made into a [`LoadResult`] whose metrics are the
//! tool's own (docs/tools.md).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tare_engine::load::Load;
use tare_engine::Endpoint;
use tare_record::{LoadResult, ToolDetails, Unit};

use crate::exec::{execute, Outcome};
use crate::job::{Job, Sizes};
use crate::wire::{Reply, Request};

/// `tare tool` as an engine.
pub struct Tool;

/// Where a run happens.
#[derive(Clone, Debug)]
pub enum Place {
    /// Ask the agent at this endpoint (a deployment's `tare tool serve`).
    Agent(Endpoint),
    /// Run `job` here, in `dir`.
    Local { job: Job, dir: PathBuf },
}

/// Everything one run needs.
#[derive(Clone, Debug)]
pub struct ToolConfig {
    /// `duration` (fio's and sysbench's run time; `None`: to completion)
    /// and `threads` (sysbench threads, fio jobs) are the tool's; the
    /// other shared settings do not apply to a program that makes its own
    /// load.
    pub load: Load,
    pub place: Place,
    /// fio's test file.
    pub file_bytes: u64,
    /// hpcc's HPL order.
    pub hpl_n: u32,
    /// The longest a run may take before it is ended and recorded as an error.
    pub limit: Duration,
    /// The metric cells compare, instead of the job's.
    pub primary: Option<String>,
}

impl ToolConfig {
    pub fn new(place: Place) -> ToolConfig {
        let d = Sizes::default();
        ToolConfig {
            load: Load {
                threads: 1,
                connections: 1,
                duration: Some(d.duration),
                ..Load::default()
            },
            place,
            file_bytes: d.file_bytes,
            hpl_n: d.hpl_n,
            limit: Duration::from_secs(600),
            primary: None,
        }
    }

    pub fn sizes(&self) -> Sizes {
        Sizes {
            duration: self.load.duration.unwrap_or(Duration::ZERO),
            file_bytes: self.file_bytes,
            hpl_n: self.hpl_n,
            threads: self.load.threads.max(1) as u32,
        }
    }
}

/// Why a run has no result: the program failed, its output did not parse,
/// the agent could not be reached.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

tare_engine::holds_load!(ToolConfig);

impl tare_engine::Engine for Tool {
    type Config = ToolConfig;
    type Error = ToolError;
    const NAME: &'static str = "tool";
    const UNIT: Unit = Unit::Runs;

    fn format_time(us: f64) -> String {
        format!("{us:.1}us")
    }

    fn quiet(_config: &mut ToolConfig) {}

    fn run(config: &ToolConfig, stop: Arc<AtomicBool>) -> Result<LoadResult, ToolError> {
        let started = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let sizes = config.sizes();
        let (job, outcome, target, transport) = match &config.place {
            Place::Local { job, dir } => {
                std::fs::create_dir_all(dir)
                    .map_err(|e| ToolError(format!("making {}: {e}", dir.display())))?;
                let o = execute(job, &sizes, dir, config.limit, &mut || {
                    stop.load(Ordering::Relaxed)
                });
                (job.clone(), o, dir.display().to_string(), "local")
            }
            Place::Agent(endpoint) => {
                let reply = ask(
                    endpoint,
                    config.load.netns.clone(),
                    &Request::Run {
                        sizes,
                        limit_s: config.limit.as_secs_f64(),
                    },
                    &stop,
                )?;
                let outcome = reply.outcome.ok_or_else(|| {
                    ToolError(
                        reply
                            .error
                            .unwrap_or_else(|| "the agent ran nothing".into()),
                    )
                })?;
                (
                    reply.job,
                    outcome,
                    endpoint.to_string(),
                    endpoint.transport(),
                )
            }
        };
        let mut r = record(&job, outcome, config.primary.as_deref())?;
        r.target = format!("{} at {target}", job.name);
        r.transport = transport.into();
        r.started_unix_s = started;
        r.threads = config.load.threads as u64;
        Ok(r)
    }
}

/// One request to the agent at `endpoint` and its reply, from `netns` when
/// the placement puts the client in a namespace; `stop` closes the
/// connection, which ends the agent's run.
pub fn ask(
    endpoint: &Endpoint,
    netns: Option<PathBuf>,
    request: &Request,
    stop: &AtomicBool,
) -> Result<Reply, ToolError> {
    let endpoint = endpoint.clone();
    let line = request.encode();
    let unreachable =
        |e: std::io::Error| ToolError(format!("the tool agent at {endpoint} does not answer: {e}"));
    // A namespace is entered by a thread of its own (the caller's stays put).
    let stream: Box<dyn ReadWrite> = std::thread::scope(|s| {
        s.spawn(|| -> std::io::Result<Box<dyn ReadWrite>> {
            if let Some(ns) = &netns {
                tare_engine::netns::enter(ns)?;
            }
            Ok(match &endpoint {
                Endpoint::Tcp(a) => {
                    let t = TcpStream::connect_timeout(a, Duration::from_secs(5))?;
                    t.set_read_timeout(Some(Duration::from_millis(200)))?;
                    Box::new(t)
                }
                Endpoint::Unix(p) => {
                    let u = UnixStream::connect(p)?;
                    u.set_read_timeout(Some(Duration::from_millis(200)))?;
                    Box::new(u)
                }
            })
        })
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("connecting thread panicked")))
    })
    .map_err(unreachable)?;
    let mut r = BufReader::new(stream);
    r.get_mut().write_all(&line).map_err(unreachable)?;
    let mut reply = Vec::new();
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err(ToolError("interrupted".into()));
        }
        match r.read_until(b'\n', &mut reply) {
            Ok(0) => break,
            Ok(_) if reply.ends_with(b"\n") => break,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(unreachable(e)),
        }
    }
    Reply::decode(reply.trim_ascii_end()).map_err(ToolError)
}

trait ReadWrite: std::io::Read + Write + Send {}
impl<T: std::io::Read + Write + Send> ReadWrite for T {}

/// The record of one outcome of `job`: its metrics, the primary one
/// (`primary`, else the job's), latency where the tool gives one. A run
/// that failed, or whose output does not parse, or lacks the primary
/// metric, is an error with the program's last words.
pub fn record(job: &Job, o: Outcome, primary: Option<&str>) -> Result<LoadResult, ToolError> {
    let tool = job.tool.name();
    let said = |o: &Outcome| {
        let t = o.stderr_tail.trim();
        if t.is_empty() {
            String::new()
        } else {
            format!(
                ": {}",
                t.lines()
                    .rev()
                    .take(3)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect::<Vec<_>>()
                    .join(" | ")
            )
        }
    };
    if let Some(e) = &o.error {
        return Err(ToolError(format!("{tool}: {e}{}", said(&o))));
    }
    // fio reports a job's error in its JSON too: parse first, so its
    // errno in words wins over a bare exit code.
    let parsed = job.tool.parse(&o.output);
    if o.status != Some(0) {
        let why = parsed.err().map_or(String::new(), |e| format!(" ({e})"));
        return Err(ToolError(format!(
            "{tool} exited with status {}{why}{}",
            o.status.map_or("?".into(), |c| c.to_string()),
            said(&o)
        )));
    }
    let parsed = parsed.map_err(|e| ToolError(format!("{tool}'s output: {e}{}", said(&o))))?;
    let primary = primary.unwrap_or(&job.primary).to_string();
    if parsed.metric(&primary).is_none() {
        let names: Vec<&str> = parsed.metrics.iter().map(|m| m.name.as_str()).collect();
        return Err(ToolError(format!(
            "{tool} reported no `{primary}` (it reported: {})",
            names.join(", ")
        )));
    }
    Ok(LoadResult {
        engine: "tool".into(),
        unit: Some(Unit::Runs),
        attempts: Some(1),
        duration_s: o.wall_s,
        connections: 1,
        requests: 1,
        latency_us: parsed.latency.unwrap_or_default(),
        metrics: parsed.metrics,
        primary: Some(primary),
        tool: Some(ToolDetails {
            tool: tool.into(),
            job: job.name.clone(),
            version: parsed.version,
            command: o.command,
            wall_s: o.wall_s,
            cpu_user_s: o.cpu_user_s,
            cpu_system_s: o.cpu_system_s,
            data_fs: o.data_fs,
            direct: o.direct,
            notes: o.notes,
        }),
        tare_version: env!("CARGO_PKG_VERSION").into(),
        ..LoadResult::default()
    })
}
