//! `tool`: the tool engine's agent (`tare tool serve`), which runs a
//! benchmark program (fio, hpcc, sysbench) inside the placement with its
//! data directory on the storage under test (docs/tools.md). The config
//! variant is the job: a built-in's name (`fio-randread`, `hpcc`, ...;
//! `default` is `fio-randread`) or a job file. The host's own tool
//! binaries, with their libraries (and hpcc's MPI plugins), go into the
//! image beside tare, so every placement runs the same programs.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use tare_engine::Endpoint;
use tare_tool::wire::Request;
use tare_tool::{Job, ToolKind};

use super::{tare_listen_args, Prepare, Protocol, Recipe, Server, Target, TargetKind};
use crate::error::DeployError;
use crate::host::{shared_libraries, walk};

pub(crate) struct Tool;

/// The agent's port in a network namespace of its own.
const PORT: u16 = 9876;

/// hpcc's MPI library loads its components with dlopen (ldd cannot see
/// them) and reads its parameter and help files: all of them go into the
/// image, each component with its own libraries.
const MPI_TREES: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/openmpi",
    "/usr/lib/x86_64-linux-gnu/pmix2",
    "/etc/openmpi",
    "/usr/share/openmpi",
];

impl Recipe for Tool {
    fn name(&self) -> &'static str {
        "tool"
    }

    fn about(&self) -> &'static str {
        "a benchmark program (fio, hpcc, sysbench) run by tare's agent inside the placement"
    }

    /// The config variant is the job: `default` or a built-in's name
    /// (`fio-randread`, `hpcc`, ...), or a job file.
    fn target(&self) -> Target {
        let mut variants = vec!["default".to_string()];
        variants.extend(tare_tool::BUILTIN.iter().map(|v| v.to_string()));
        variants.dedup();
        Target {
            variants,
            config_files: true,
            fills_own_content: true,
            image: "tare-tool".into(),
            ..Target::of(TargetKind(&Tool), Protocol::Tool, PORT)
        }
    }

    /// The running tare: its agent runs the job.
    fn default_binary(&self, _target: &Target) -> Result<PathBuf, DeployError> {
        crate::host::running_tare()
    }

    /// The version of each tool installed here (`fio-3.33, hpcc, sysbench 1.0.20`).
    fn version(&self, _binary: &Path) -> Option<String> {
        let v: Vec<String> = ToolKind::ALL
            .iter()
            .filter_map(|t| {
                let bin = t.find().ok()?;
                Some(match t {
                    ToolKind::Hpcc => "hpcc".to_string(),
                    _ => crate::host::version_line(&bin, "--version")
                        .unwrap_or_else(|| t.name().into()),
                })
            })
            .collect();
        Some(v.join(", "))
    }

    /// The tools' paths and sizes: an upgraded fio makes a new image.
    fn image_key(&self, _target: &Target) -> String {
        ToolKind::ALL
            .iter()
            .filter_map(|t| t.find().ok())
            .map(|p| {
                let len = std::fs::metadata(&p).map_or(0, |m| m.len());
                format!("{}:{len}", p.display())
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    fn image_files(&self, _target: &Target, _binary: &Path) -> Result<Vec<PathBuf>, String> {
        let mut files = BTreeSet::new();
        let mut elf = Vec::new();
        for t in ToolKind::ALL {
            // A tool missing here is missing in the image too: its job's
            // deployment fails with the package to install.
            if let Ok(bin) = t.find() {
                elf.push(bin);
            }
        }
        if elf.iter().any(|b| b.ends_with("hpcc")) {
            for tree in MPI_TREES {
                let mut found = BTreeSet::new();
                walk(Path::new(tree), &mut found);
                elf.extend(found.iter().filter(|p| is_elf(p)).cloned());
                files.extend(found);
            }
        }
        for bin in elf {
            files.extend(shared_libraries(&bin)?);
            files.insert(bin);
        }
        Ok(files.into_iter().collect())
    }

    fn prepare(&self, cx: &Prepare<'_>) -> Result<Server, DeployError> {
        let dir = cx.dir;
        // A job file's path, or a built-in's name (`default` is one).
        let named = cx.spec.variant.to_string();
        let mut job = Job::named(&named).map_err(DeployError::Invalid)?;
        if job.binary.is_none() {
            job.binary = Some(job.tool.find().map_err(|hint| DeployError::MissingBinary {
                binary: job.tool.name().into(),
                hint,
            })?);
        }
        let text = serde_json::to_string_pretty(&job)
            .map_err(|e| DeployError::Invalid(format!("job {}: {e}", job.name)))?;
        let job_file = dir.join("tool-job.json");
        std::fs::write(&job_file, &text)
            .map_err(|e| DeployError::io(format!("writing {}", job_file.display()), e))?;
        let data = dir.join("data");
        std::fs::create_dir_all(&data)
            .map_err(|e| DeployError::io(format!("making {}", data.display()), e))?;
        let mut args = vec!["tool".to_string(), "serve".to_string()];
        args.extend(tare_listen_args(cx.listen));
        args.extend([
            "--job".into(),
            job_file.display().to_string(),
            "--dir".into(),
            data.display().to_string(),
        ]);
        Ok(Server {
            access_log: "off".into(),
            content_path: data,
            ..Server::new(cx, args, text.as_bytes())
        })
    }
}

/// A `ping` the agent answers with its job: the tool protocol's
/// readiness check (`Protocol::probe`).
pub(super) fn ping_agent(endpoint: &Endpoint, _timeout: Duration) -> Result<(), String> {
    tare_tool::run::ask(endpoint, None, &Request::Ping, &AtomicBool::new(false))
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Whether `path` starts with the ELF magic (a component or tool, not a
/// help text).
fn is_elf(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == *b"\x7fELF"
}
