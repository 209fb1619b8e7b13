//! One run of an external load tool against one cell: its scripts written
//! into a directory of its own (its working directory), its arguments
//! filled, started pinned to the generator's CPUs and in the client's
//! network namespace, killed past its duration and grace, its own CPU read
//! from its rusage, its output parsed into a [`LoadResult`].

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tare_engine::load::Load;
use tare_record::{ExternalDetails, LatencySummary, LoadResult, Unit};

use super::args::{Template, Values};
use super::{jmeter, LoadTool, Reported};

/// The external engine's name, in records and `[load] engine`.
pub const NAME: &str = "external";

/// `tare`'s side of an external tool.
pub struct External;

/// Everything one run needs.
#[derive(Clone, Debug)]
pub struct ExternalConfig {
    /// `connections`, `threads`, `duration` fill their placeholders;
    /// `cpus` pins the tool, `netns` is where it runs.
    pub load: Load,
    pub tool: LoadTool,
    /// The program; `None`: the tool's name on PATH.
    pub binary: Option<PathBuf>,
    pub args: Vec<Template>,
    /// Script files (name, text), written into the tool's working directory.
    pub scripts: Vec<(String, String)>,
    /// How long past its duration the tool may take before it is killed.
    pub grace: Duration,
    /// The cell's address.
    pub values: Values,
    /// What the record names as its target and transport.
    pub target: String,
    pub transport: String,
}

/// Why a run has no result, in one line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ExternalError(pub String);

/// What the process did.
struct Exit {
    command: Vec<String>,
    pid: u32,
    /// `None`: killed by tare (`why`) or by a signal.
    status: Option<i32>,
    killed: Option<String>,
    stdout: String,
    stderr: String,
    wall_s: f64,
    cpu_user_s: f64,
    cpu_system_s: f64,
    started_unix_s: f64,
    /// The results file the tool wrote (JMeter's JTL), read before its
    /// working directory is removed; `None`: it wrote none.
    results: Option<String>,
}

impl External {
    /// Runs `config` once; `stop` ends it early (an interrupted run).
    pub fn run(config: &ExternalConfig, stop: &AtomicBool) -> Result<LoadResult, ExternalError> {
        let tool = config.tool;
        let binary = match &config.binary {
            Some(b) if b.is_file() => b.clone(),
            Some(b) => {
                return Err(ExternalError(format!(
                    "{} is not at {}: {}",
                    tool.name(),
                    b.display(),
                    tool.missing()
                )))
            }
            None => tool.find().map_err(ExternalError)?,
        };
        let mut values = config.values.clone();
        values.connections = config.load.connections as u64;
        values.threads = config.load.threads as u64;
        let duration = config.load.duration.unwrap_or(Duration::from_secs(1));
        // Tools take whole seconds; a shorter window is one second.
        values.duration_s = duration.as_secs_f64().ceil().max(1.0) as u64;
        let mut args = Vec::new();
        for a in &config.args {
            args.push(a.fill(&values).map_err(ExternalError)?);
        }
        let dir = WorkDir::new(&config.scripts).map_err(ExternalError)?;
        let mut argv = match tool {
            // Debian's JMeter 2.13 through tare's launcher, any other as is.
            LoadTool::Jmeter => jmeter::launcher::command(&binary).map_err(ExternalError)?,
            _ => vec![binary.display().to_string()],
        };
        if tool == LoadTool::Jmeter {
            let forced = jmeter::forced_args(dir.path(), &args);
            args.extend(forced);
        }
        argv.extend(args);
        let limit = Duration::from_secs(values.duration_s) + config.grace;
        let setup = setup_commands(tool, &argv);
        if let Some((prepare, cleanup)) = &setup {
            // Tables a killed run left behind would fail `prepare`.
            let _ = spawn_and_wait(cleanup, dir.path(), &config.load, SETUP_LIMIT, stop);
            let p = spawn_and_wait(prepare, dir.path(), &config.load, SETUP_LIMIT, stop)?;
            // With more threads than tables, a failed `prepare` exits 0
            // (sysbench 1.0.20): its `FATAL:` lines say it failed.
            let fatal = p
                .stderr
                .lines()
                .chain(p.stdout.lines())
                .any(|l| l.starts_with("FATAL:"));
            if p.killed.is_some() || p.status != Some(0) || fatal {
                let why = p.killed.clone().unwrap_or_else(|| match p.status {
                    Some(0) => "exit status 0, FATAL".into(),
                    Some(c) => format!("exit status {c}"),
                    None => "killed by a signal".into(),
                });
                return Err(ExternalError(format!(
                    "{} prepare failed ({why}){}",
                    tool.name(),
                    last_lines(&p, 3)
                )));
            }
        }
        let mut exit = spawn_and_wait(&argv, dir.path(), &config.load, limit, stop);
        if let Some((_, cleanup)) = &setup {
            let _ = spawn_and_wait(cleanup, dir.path(), &config.load, SETUP_LIMIT, stop);
        }
        // A file the tool wrote (h2load's `--log-file`), read before its
        // directory goes.
        let log = match tool {
            LoadTool::H2load => super::h2load::log_file(&argv[1..]).map(|f| {
                let path = dir.path().join(f);
                std::fs::read_to_string(&path)
                    .map_err(|e| format!("h2load wrote no --log-file {f}: {e}"))
            }),
            _ => None,
        };
        if let (LoadTool::Jmeter, Ok(e)) = (tool, &mut exit) {
            e.results = std::fs::read_to_string(dir.path().join(jmeter::RESULTS)).ok();
        }
        drop(dir);
        record(config, exit?, log)
    }
}

/// How long sysbench's `prepare` or `cleanup` may take.
const SETUP_LIMIT: Duration = Duration::from_secs(600);

/// sysbench's `prepare` and `cleanup` commands for a `run` command line
/// (its last `run` argument replaced): the tables a test needs, made
/// before each measured run and dropped after it, neither measured.
/// `None` for the other tools and for a sysbench line without `run`.
fn setup_commands(tool: LoadTool, argv: &[String]) -> Option<(Vec<String>, Vec<String>)> {
    if tool != LoadTool::Sysbench {
        return None;
    }
    let at = argv.iter().rposition(|a| a == "run").filter(|i| *i > 0)?;
    let with = |cmd: &str| {
        let mut v = argv.to_vec();
        v[at] = cmd.to_string();
        v
    };
    Some((with("prepare"), with("cleanup")))
}

/// A directory of the run's own under the temporary directory
/// (`tare-external-<pid>-<n>`), removed when dropped: after the tool has
/// exited or been killed, whatever the outcome.
struct WorkDir(PathBuf);

impl WorkDir {
    fn new(scripts: &[(String, String)]) -> Result<WorkDir, String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "tare-external-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).map_err(|e| format!("making {}: {e}", dir.display()))?;
        let w = WorkDir(dir);
        for (name, text) in scripts {
            let p = w.0.join(name);
            std::fs::write(&p, text).map_err(|e| format!("writing {}: {e}", p.display()))?;
        }
        Ok(w)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Starts `argv` in `dir` (its own process group, pinned to `load.cpus`,
/// in `load.netns`) and waits for it, killing its group past `limit` or
/// when `stop` is set.
fn spawn_and_wait(
    argv: &[String],
    dir: &Path,
    load: &Load,
    limit: Duration,
    stop: &AtomicBool,
) -> Result<Exit, ExternalError> {
    let name = argv[0].rsplit('/').next().unwrap_or(&argv[0]).to_string();
    let netns = match &load.netns {
        Some(p) => Some(
            std::fs::File::open(p)
                .map_err(|e| ExternalError(format!("network namespace {}: {e}", p.display())))?,
        ),
        None => None,
    };
    let ns_fd = netns.as_ref().map(|f| f.as_raw_fd());
    let cpus = load.cpus.as_ref().map(|c| c.to_cpu_set());
    let mut cmd = std::process::Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: between fork and exec only async-signal-safe syscalls run
    // (setns, sched_setaffinity), on values made before the fork.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(fd) = ns_fd {
                if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if let Some(set) = &cpus {
                let size = std::mem::size_of::<libc::cpu_set_t>();
                if libc::sched_setaffinity(0, size, set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let started_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let t0 = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| ExternalError(format!("starting {name}: {e}")))?;
    drop(netns);
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let pid = child.id() as libc::pid_t;
    let (status, ru, killed) = wait(pid, &name, t0, limit, stop);
    // The child is reaped (by wait4): dropping it does nothing more.
    drop(child);
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok(Exit {
        command: argv.to_vec(),
        pid: pid as u32,
        status,
        killed,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        wall_s: t0.elapsed().as_secs_f64(),
        cpu_user_s: secs(ru.ru_utime),
        cpu_system_s: secs(ru.ru_stime),
        started_unix_s,
        results: None,
    })
}

/// Waits for `pid` with `wait4` (its own rusage, its reaped children's
/// included), polling every 20 ms; past `limit` or on `stop` its process
/// group is killed first. The exit code, the rusage, and why tare killed it.
fn wait(
    pid: libc::pid_t,
    name: &str,
    t0: Instant,
    limit: Duration,
    stop: &AtomicBool,
) -> (Option<i32>, libc::rusage, Option<String>) {
    let mut killed = None;
    loop {
        let mut status = 0;
        // SAFETY: an all-zero rusage is valid, and wait4 only writes it.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let flags = if killed.is_some() { 0 } else { libc::WNOHANG };
        // SAFETY: pid is our unreaped child; status and ru are valid.
        let rc = unsafe { libc::wait4(pid, &mut status, flags, &mut ru) };
        if rc == pid {
            let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
            return (code, ru, killed);
        }
        if rc < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return (None, ru, Some(format!("waiting for {name} failed")));
        }
        if killed.is_none() {
            let why = if t0.elapsed() > limit {
                Some(format!(
                    "{name} ran past its duration: killed after {:.0} s",
                    limit.as_secs_f64()
                ))
            } else if stop.load(Ordering::Relaxed) {
                Some("interrupted".to_string())
            } else {
                None
            };
            if let Some(why) = why {
                // SAFETY: a signal to the process group we made for it.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
                killed = Some(why);
                continue;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A pipe read to its end on its own thread (a full pipe would stall the
/// tool); at most 16 MiB is kept.
fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(p) = pipe {
            let _ = p.take(16 << 20).read_to_end(&mut buf);
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// The last `n` non-empty lines of stderr then stdout, joined by ` | `.
fn last_lines(exit: &Exit, n: usize) -> String {
    let lines: Vec<&str> = exit
        .stderr
        .lines()
        .chain(exit.stdout.lines())
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let tail = lines[lines.len().saturating_sub(n)..].join(" | ");
    if tail.is_empty() {
        " (it printed nothing)".into()
    } else {
        let mut t: String = tail.chars().take(400).collect();
        t.insert_str(0, ": ");
        t
    }
}

/// The record of one exit: an error with the tool's last lines when it was
/// killed, failed or printed nothing readable.
/// `log`: the text of a file the tool wrote beside its output (h2load's
/// `--log-file`), or why there is none.
fn record(
    config: &ExternalConfig,
    exit: Exit,
    log: Option<Result<String, String>>,
) -> Result<LoadResult, ExternalError> {
    let tool = config.tool.name();
    if let Some(why) = &exit.killed {
        return Err(ExternalError(format!("{why}{}", last_lines(&exit, 3))));
    }
    let Some(code) = exit.status else {
        return Err(ExternalError(format!(
            "{tool} was killed by a signal{}",
            last_lines(&exit, 3)
        )));
    };
    if let Some(line) = script_error(config, &exit.stderr) {
        return Err(ExternalError(format!("{tool}'s script failed: {line}")));
    }
    if config.tool == LoadTool::Jmeter {
        jmeter_failure(&exit)?;
    }
    let output = match &exit.results {
        Some(jtl) => jtl.as_str(),
        None => config.tool.output(&exit.stdout, &exit.stderr),
    };
    let parsed = config.tool.parse(output);
    if code != 0 {
        return Err(ExternalError(format!(
            "{tool} exited with status {code}{}",
            last_lines(&exit, 3)
        )));
    }
    let mut parsed = parsed.map_err(|e| {
        ExternalError(format!(
            "{tool}'s output does not parse ({e}){}",
            last_lines(&exit, 3)
        ))
    })?;
    if let Some(log) = log {
        let text = log.map_err(ExternalError)?;
        let pairs = super::h2load::log(&text)
            .map_err(|e| ExternalError(format!("{tool}'s --log-file does not parse ({e})")))?;
        parsed.histogram = Some(pairs);
    }
    Ok(result(config, exit, parsed))
}

/// JMeter exits 0 when it cannot run a plan (2.13, 5.x alike): its
/// `Error in NonGUIDriver ...` line, or a results file it never wrote,
/// fails the trial in one line.
fn jmeter_failure(exit: &Exit) -> Result<(), ExternalError> {
    let said = exit
        .stdout
        .lines()
        .chain(exit.stderr.lines())
        .map(str::trim)
        .find(|l| l.starts_with("Error in NonGUIDriver"));
    if let Some(line) = said {
        let line: String = line.chars().take(300).collect();
        return Err(ExternalError(format!(
            "jmeter could not run the plan: {line}"
        )));
    }
    if exit.results.is_none() {
        return Err(ExternalError(format!(
            "jmeter wrote no results file{}",
            last_lines(exit, 3)
        )));
    }
    Ok(())
}

/// A line of stderr that starts with one of the scripts' names: wrk
/// reports a Lua error so (`post.lua: post.lua:2: ...`) and then runs on
/// without the script, exiting 0, so its exit says nothing.
fn script_error(config: &ExternalConfig, stderr: &str) -> Option<String> {
    stderr
        .lines()
        .map(str::trim)
        .find(|l| {
            config
                .scripts
                .iter()
                .any(|(name, _)| l.starts_with(&format!("{name}:")))
        })
        .map(|l| l.chars().take(300).collect())
}

/// The common record's latency fields, in order, by their map names.
const LATENCY: [&str; 10] = [
    "min", "mean", "stdev", "max", "p50", "p75", "p90", "p99", "p999", "p9999",
];

fn summary(m: &std::collections::BTreeMap<String, f64>) -> LatencySummary {
    let g = |k: &str| m.get(k).copied().unwrap_or(0.0);
    LatencySummary {
        min: g("min"),
        mean: g("mean"),
        stdev: g("stdev"),
        max: g("max"),
        p50: g("p50"),
        p75: g("p75"),
        p90: g("p90"),
        p99: g("p99"),
        p999: g("p999"),
        p9999: g("p9999"),
    }
}

fn result(config: &ExternalConfig, exit: Exit, p: Reported) -> LoadResult {
    let timeline = match config.tool {
        LoadTool::Pgbench => super::pgbench::timeline(&exit.stderr),
        LoadTool::Sysbench => super::sysbench::timeline(&exit.stdout),
        _ => p.timeline.clone().unwrap_or_default(),
    };
    let mut not_reported: Vec<String> = ["in_flight", "thread_rate"]
        .into_iter()
        .map(String::from)
        .collect();
    // The whole distribution where the tool gave one (wrk with tare's
    // `done()`, h2load's `--log-file`, sysbench's histogram, JMeter's JTL), recorded as
    // tare's own engines record theirs.
    let hdr = p.encoded_hdr.clone().or_else(|| p.hdr());
    if hdr.is_none() {
        not_reported.insert(0, "hdr".into());
    }
    if timeline.is_empty() {
        not_reported.push("timeline".into());
    }
    if p.bytes_read.is_none() {
        not_reported.push("bytes_read".into());
    }
    for kind in ["connect", "read", "write", "timeout", "status"] {
        if !p.error_kinds.contains(&kind) {
            not_reported.push(format!("errors.{kind}"));
        }
    }
    for k in LATENCY {
        if !p.latency_us.contains_key(k) {
            not_reported.push(format!("latency_us.{k}"));
        }
    }
    let requests = p.requests.unwrap_or(0);
    let cpu = exit.cpu_user_s + exit.cpu_system_s;
    let unit = config.tool.unit();
    // A response with status >= 400 is a completed request; a failed
    // transaction is not among pgbench's processed ones (as tare pg counts).
    let attempts = match unit {
        Unit::Requests => requests + p.errors.total() - p.errors.status,
        _ => requests + p.errors.total(),
    };
    // Transactions per second are `tps`; requests and commands (as tare
    // redis writes them) `rps`.
    let rate = Some(p.throughput());
    let (rps, tps) = match unit {
        Unit::Transactions => (None, rate),
        _ => (rate, None),
    };
    LoadResult {
        engine: NAME.into(),
        unit: Some(unit),
        attempts: Some(attempts),
        target: config.target.clone(),
        transport: config.transport.clone(),
        started_unix_s: p.started_unix_s.unwrap_or(exit.started_unix_s),
        duration_s: p.duration_s.unwrap_or(exit.wall_s),
        connections: config.load.connections as u64,
        threads: config.load.threads as u64,
        // ab opens a connection per request unless told `-k`; the others
        // keep theirs.
        keepalive: config.tool != LoadTool::Ab || exit.command.iter().any(|a| a == "-k"),
        requests,
        errors: p.errors,
        rps,
        tps,
        bytes_read: p.bytes_read.unwrap_or(0),
        latency_us: summary(&p.latency_us),
        hdr: hdr.unwrap_or_default(),
        timeline,
        generator_cpu_s: cpu,
        generator_cpu_user_s: exit.cpu_user_s,
        generator_cpu_system_s: exit.cpu_system_s,
        external: Some(ExternalDetails {
            tool: config.tool.name().into(),
            command: exit.command,
            scripts: config.scripts.iter().map(|(n, _)| n.clone()).collect(),
            pid: Some(exit.pid),
            wall_s: exit.wall_s,
            cpu_user_s: exit.cpu_user_s,
            cpu_system_s: exit.cpu_system_s,
            protocol: p.protocol,
            latency_us: p.latency_us,
            errors_by_kind: p.errors_by_kind,
            not_reported,
        }),
        tare_version: env!("CARGO_PKG_VERSION").into(),
        ..LoadResult::default()
    }
}
