//! Jobs: which benchmark program runs and what work it does; [`Sizes`]:
//! how big and how long (the engine's side, `[load.tool]` and `[load]
//! duration`). A job and its sizes make one command line ([`command`]).
//!
//! The built-in jobs are the IBM study's rows (docs/studies.md, seed 002:
//! fio random read and write 4k at queue depth 128, sequential read, the
//! 70/30 mix, all libaio with direct I/O; HPL, STREAM and RandomAccess from
//! HPC Challenge) and sysbench's cpu and memory tests. A job file is the
//! same thing written in TOML (docs/tools.md).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::parsed::{ParseError, Parsed};

/// A benchmark program tare can run and read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolKind {
    Fio,
    Hpcc,
    Sysbench,
}

impl ToolKind {
    pub const ALL: &'static [ToolKind] = &[ToolKind::Fio, ToolKind::Hpcc, ToolKind::Sysbench];

    /// Its executable's name, and its Debian package's (the same for all three).
    pub fn name(self) -> &'static str {
        match self {
            ToolKind::Fio => "fio",
            ToolKind::Hpcc => "hpcc",
            ToolKind::Sysbench => "sysbench",
        }
    }

    /// Parses one run's output (hpcc's output file, the others' stdout).
    pub fn parse(self, output: &str) -> Result<Parsed, ParseError> {
        let mut parsed = match self {
            ToolKind::Fio => crate::fio::parse(output),
            ToolKind::Hpcc => crate::hpcc::parse(output),
            ToolKind::Sysbench => crate::sysbench::parse(output),
        }?;
        // A figure that overflows once summed or scaled (two jobs' 1e308
        // IOPS, 1e306 TFLOP/s in GFLOP/s) is no measurement: left out,
        // as a metric the output lacks is (a missing primary is the
        // trial's error).
        parsed.metrics.retain(|m| m.value.is_finite());
        Ok(parsed)
    }

    /// The host's binary on PATH, else the one-line error that names the
    /// package to install.
    pub fn find(self) -> Result<PathBuf, String> {
        crate::on_path(self.name()).ok_or_else(|| self.missing())
    }

    /// `fio is not installed: install the Debian package fio (...)`.
    pub fn missing(self) -> String {
        format!(
            "{0} is not installed: install the Debian package {0} (apt-get install {0}; scripts/setup.sh does)",
            self.name()
        )
    }
}

/// Whether fio bypasses the page cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direct {
    /// `direct=1`: a filesystem that refuses it fails the run.
    On,
    /// `direct=0`: the page cache takes part.
    Off,
    /// `direct=1` where the test directory's filesystem accepts O_DIRECT,
    /// else buffered, and the record says so.
    #[default]
    Auto,
}

/// What runs. Written as TOML in a job file; the built-ins are [`builtin`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    /// The job's name (a built-in's, or the job file's stem).
    #[serde(default)]
    pub name: String,
    pub tool: ToolKind,
    /// The program to run; default: the tool's binary on the host's PATH,
    /// filled in when the job is written for a deployment (the same host
    /// binary runs in every placement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<PathBuf>,
    /// fio: `rw` (`randread`, `randwrite`, `read`, `write`, `randrw`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rw: Option<String>,
    /// fio: block size (`4k`, `1m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bs: Option<String>,
    /// fio: I/Os in flight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iodepth: Option<u32>,
    /// fio: the I/O engine (default `libaio`, the study's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ioengine: Option<String>,
    /// fio: direct I/O (default `auto`).
    #[serde(default)]
    pub direct: Direct,
    /// fio `randrw`: the read share in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rwmixread: Option<u32>,
    /// sysbench: the test, `cpu` or `memory`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<String>,
    /// The metric cells compare (a name the tool's parser gives).
    pub primary: String,
}

impl Job {
    fn fio(name: &str, rw: &str, bs: &str, iodepth: u32, primary: &str) -> Job {
        Job {
            name: name.into(),
            tool: ToolKind::Fio,
            binary: None,
            rw: Some(rw.into()),
            bs: Some(bs.into()),
            iodepth: Some(iodepth),
            ioengine: None,
            direct: Direct::Auto,
            rwmixread: None,
            test: None,
            primary: primary.into(),
        }
    }

    fn program(name: &str, tool: ToolKind, test: Option<&str>, primary: &str) -> Job {
        Job {
            name: name.into(),
            tool,
            binary: None,
            rw: None,
            bs: None,
            iodepth: None,
            ioengine: None,
            direct: Direct::Auto,
            rwmixread: None,
            test: test.map(Into::into),
            primary: primary.into(),
        }
    }

    /// Reads a job file (TOML); its name is the file's stem unless it says one.
    pub(crate) fn from_file(path: &Path) -> Result<Job, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading job file {}: {e}", path.display()))?;
        let mut job: Job =
            toml::from_str(&text).map_err(|e| format!("job file {}: {e}", path.display()))?;
        if job.name.is_empty() {
            job.name = path
                .file_stem()
                .map_or("job".into(), |s| s.to_string_lossy().into_owned());
        }
        job.check()?;
        Ok(job)
    }

    /// A built-in job's name or a job file's path.
    pub fn named(name_or_path: &str) -> Result<Job, String> {
        if let Some(job) = builtin(name_or_path) {
            return Ok(job);
        }
        let path = Path::new(name_or_path);
        if path.is_file() {
            return Job::from_file(path);
        }
        Err(format!(
            "`{name_or_path}` is neither a built-in job ({}) nor a job file",
            BUILTIN.join(", ")
        ))
    }

    /// Mistakes a job file can make that TOML's types do not catch.
    pub fn check(&self) -> Result<(), String> {
        let fio_only = [
            ("rw", self.rw.is_some()),
            ("bs", self.bs.is_some()),
            ("iodepth", self.iodepth.is_some()),
            ("ioengine", self.ioengine.is_some()),
            ("rwmixread", self.rwmixread.is_some()),
        ];
        if self.tool != ToolKind::Fio {
            if let Some((key, _)) = fio_only.iter().find(|(_, set)| *set) {
                return Err(format!("`{key}` is for tool = \"fio\" only"));
            }
        }
        match self.tool {
            ToolKind::Fio => {
                let rw = self.rw.as_deref().unwrap_or("");
                if !["read", "write", "randread", "randwrite", "rw", "randrw"].contains(&rw) {
                    return Err(format!(
                        "fio `rw` must be read, write, randread, randwrite, rw or randrw (got `{rw}`)"
                    ));
                }
                for (key, v) in [("bs", &self.bs), ("ioengine", &self.ioengine)] {
                    if let Some(v) = v {
                        if v.is_empty() || !v.chars().all(|c| c.is_ascii_alphanumeric()) {
                            return Err(format!("fio `{key}` must be a plain word (got `{v}`)"));
                        }
                    }
                }
                if self.iodepth == Some(0) || self.iodepth.is_some_and(|d| d > 65536) {
                    return Err("fio `iodepth` must be 1 to 65536".into());
                }
                if self.rwmixread.is_some_and(|p| p > 100) {
                    return Err("fio `rwmixread` is a percentage (0 to 100)".into());
                }
            }
            ToolKind::Sysbench => match self.test.as_deref() {
                Some("cpu" | "memory") => {}
                other => {
                    return Err(format!(
                        "sysbench `test` must be cpu or memory (got {other:?})"
                    ))
                }
            },
            ToolKind::Hpcc if self.test.is_some() => {
                return Err("`test` is for tool = \"sysbench\" only".into())
            }
            ToolKind::Hpcc => {}
        }
        if self.primary.is_empty() {
            return Err("`primary` names the metric cells compare (e.g. read_iops)".into());
        }
        Ok(())
    }
}

/// The built-in jobs' names.
pub const BUILTIN: &[&str] = &[
    "fio-randread",
    "fio-randwrite",
    "fio-seqread",
    "fio-mixed",
    "hpcc",
    "hpcc-stream",
    "hpcc-randomaccess",
    "sysbench-cpu",
    "sysbench-memory",
];

/// A built-in job (the IBM study's queue depth 128 for random I/O, 1 MiB
/// blocks for the sequential read); `default` is `fio-randread`, the
/// study's first disk row.
pub fn builtin(name: &str) -> Option<Job> {
    Some(match name {
        "default" | "fio-randread" => Job::fio("fio-randread", "randread", "4k", 128, "read_iops"),
        "fio-randwrite" => Job::fio("fio-randwrite", "randwrite", "4k", 128, "write_iops"),
        "fio-seqread" => Job::fio("fio-seqread", "read", "1m", 16, "read_mb_s"),
        "fio-mixed" => Job {
            rwmixread: Some(70),
            ..Job::fio("fio-mixed", "randrw", "4k", 128, "iops")
        },
        "hpcc" => Job::program("hpcc", ToolKind::Hpcc, None, "hpl_gflops"),
        "hpcc-stream" => Job::program("hpcc-stream", ToolKind::Hpcc, None, "stream_triad_gb_s"),
        "hpcc-randomaccess" => Job::program(
            "hpcc-randomaccess",
            ToolKind::Hpcc,
            None,
            "randomaccess_gups",
        ),
        "sysbench-cpu" => Job::program(
            "sysbench-cpu",
            ToolKind::Sysbench,
            Some("cpu"),
            "events_per_s",
        ),
        "sysbench-memory" => Job::program(
            "sysbench-memory",
            ToolKind::Sysbench,
            Some("memory"),
            "mib_per_s",
        ),
        _ => return None,
    })
}

/// How big and how long one run is: the engine's settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sizes {
    /// fio and sysbench run this long; zero: to completion (fio through
    /// its file once, sysbench 10,000 events). hpcc always runs to
    /// completion.
    pub duration: Duration,
    /// fio: the test file's size in bytes.
    pub file_bytes: u64,
    /// hpcc: HPL's matrix order N (STREAM's and RandomAccess's arrays are
    /// sized from it: hpcc gives them the memory HPL's matrix takes).
    pub hpl_n: u32,
    /// sysbench threads, fio jobs.
    pub threads: u32,
}

impl Default for Sizes {
    fn default() -> Sizes {
        Sizes {
            duration: Duration::from_secs(10),
            file_bytes: 256 << 20,
            hpl_n: 2000,
            threads: 1,
        }
    }
}

/// One command: the program and arguments, the input files it reads from
/// its working directory, and the file it writes its results to (`None`:
/// stdout).
#[derive(Clone, Debug, PartialEq)]
pub struct Command {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub inputs: Vec<(String, String)>,
    pub output_file: Option<String>,
}

/// The command `job` runs with `sizes` in `dir` (its working directory,
/// where fio's test file lives); `direct` is whether fio uses O_DIRECT.
pub fn command(job: &Job, binary: &Path, sizes: &Sizes, dir: &Path, direct: bool) -> Command {
    let mut argv = vec![binary.display().to_string()];
    let secs = sizes.duration.as_secs_f64().ceil().max(1.0) as u64;
    let timed = !sizes.duration.is_zero();
    let mut cmd = Command {
        argv: Vec::new(),
        env: Vec::new(),
        inputs: Vec::new(),
        output_file: None,
    };
    match job.tool {
        ToolKind::Fio => {
            argv.extend([
                format!("--name={}", job.name),
                format!("--filename={}", dir.join("fio.dat").display()),
                format!("--size={}", sizes.file_bytes),
                format!("--rw={}", job.rw.as_deref().unwrap_or("randread")),
                format!("--bs={}", job.bs.as_deref().unwrap_or("4k")),
                format!("--iodepth={}", job.iodepth.unwrap_or(1)),
                format!("--ioengine={}", job.ioengine.as_deref().unwrap_or("libaio")),
                format!("--direct={}", u8::from(direct)),
                format!("--numjobs={}", sizes.threads.max(1)),
                "--group_reporting".into(),
                "--output-format=json".into(),
            ]);
            if let Some(p) = job.rwmixread {
                argv.push(format!("--rwmixread={p}"));
            }
            if timed {
                argv.extend([format!("--runtime={secs}"), "--time_based".into()]);
            }
        }
        ToolKind::Hpcc => {
            cmd.inputs
                .push(("hpccinf.txt".into(), hpccinf(sizes.hpl_n)));
            cmd.output_file = Some("hpccoutf.txt".into());
            // A singleton MPI process that starts no orted daemon: the
            // image then needs no MPI launcher, only the library's plugins.
            cmd.env
                .push(("OMPI_MCA_ess_singleton_isolated".into(), "1".into()));
        }
        ToolKind::Sysbench => {
            let test = job.test.clone().unwrap_or_else(|| "cpu".into());
            argv.push(test.clone());
            argv.push(format!("--threads={}", sizes.threads.max(1)));
            if timed {
                argv.push(format!("--time={secs}"));
            } else {
                argv.extend(["--time=0".into(), "--events=10000".into()]);
            }
            if test == "memory" {
                // Large enough never to end before the time does.
                argv.extend([
                    "--memory-block-size=1M".into(),
                    "--memory-total-size=1000000G".into(),
                ]);
            }
            argv.push("run".into());
        }
    }
    cmd.argv = argv;
    cmd
}

/// hpcc's input file for one process (P = Q = 1) and HPL order `n`, block
/// size 80, otherwise Debian's example file
/// (/usr/share/doc/hpcc/examples/_hpccinf.txt).
fn hpccinf(n: u32) -> String {
    format!(
        "HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
{n}         Ns
1            # of NBs
80           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
1            Ps
1            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                      \tNumber of additional problem sizes for PTRANS
1200 10000 30000        \tvalues of N
0                       \tnumber of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64       \tvalues of NB
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_that_overflows_once_scaled_is_left_out() {
        let out = "Begin of Summary section.\nVersionMajor=1\nVersionMinor=5\n\
                   VersionMicro=0\nHPL_Tflops=1e306\nSingleSTREAM_Triad=12.5\n\
                   End of Summary section.\n";
        let p = ToolKind::Hpcc.parse(out).unwrap();
        let names: Vec<&str> = p.metrics.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["stream_triad_gb_s"], "{:?}", p.metrics);
    }

    #[test]
    fn every_builtin_checks_and_default_is_the_first_disk_row() {
        for name in BUILTIN {
            let job = builtin(name).unwrap();
            assert_eq!(&job.name, name);
            job.check().unwrap();
        }
        assert_eq!(builtin("default").unwrap().name, "fio-randread");
        assert!(builtin("iperf").is_none());
    }

    #[test]
    fn job_file_mistakes_are_one_line_errors() {
        let parse = |t: &str| {
            toml::from_str::<Job>(t)
                .map_err(|e| e.to_string())
                .and_then(|j| j.check().map(|_| j))
        };
        assert!(parse("tool = \"fio\"\nrw = \"randread\"\nprimary = \"read_iops\"\n").is_ok());
        for (text, want) in [
            ("tool = \"fio\"\nrw = \"sideways\"\nprimary = \"x\"\n", "rw"),
            ("tool = \"hpcc\"\nrw = \"read\"\nprimary = \"x\"\n", "fio"),
            (
                "tool = \"sysbench\"\ntest = \"disk\"\nprimary = \"x\"\n",
                "cpu or memory",
            ),
            (
                "tool = \"fio\"\nrw = \"read\"\nbs = \"4k --exec\"\nprimary = \"x\"\n",
                "plain word",
            ),
            ("tool = \"stress\"\nprimary = \"x\"\n", "unknown variant"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn commands_carry_sizes_and_direct() {
        let dir = Path::new("/d");
        let sizes = Sizes {
            duration: Duration::from_millis(2500),
            ..Sizes::default()
        };
        let c = command(
            &builtin("fio-randread").unwrap(),
            Path::new("/usr/bin/fio"),
            &sizes,
            dir,
            false,
        );
        assert!(c.argv.contains(&"--direct=0".to_string()));
        assert!(c.argv.contains(&"--runtime=3".to_string()));
        assert!(c.argv.contains(&"--filename=/d/fio.dat".to_string()));
        let h = command(
            &builtin("hpcc").unwrap(),
            Path::new("/usr/bin/hpcc"),
            &sizes,
            dir,
            true,
        );
        assert_eq!(h.output_file.as_deref(), Some("hpccoutf.txt"));
        assert!(h.inputs[0].1.contains("2000         Ns"));
        let s = command(
            &builtin("sysbench-memory").unwrap(),
            Path::new("sysbench"),
            &Sizes {
                duration: Duration::ZERO,
                ..sizes
            },
            dir,
            true,
        );
        assert!(s.argv.contains(&"--events=10000".to_string()) && s.argv.last().unwrap() == "run");
    }
}
