//! The experiment file exactly as TOML gives it, with the byte span of
//! every value that validation may complain about (so an error names the
//! file, line and key). [`super::validate`] turns this into an
//! [`super::Experiment`]. Every key is documented in `docs/experiments.md`.

use indexmap::IndexMap;
use serde::Deserialize;
use toml::Spanned;

/// `[factors]`: factor name -> its levels.
pub(super) type RawFactors = IndexMap<Spanned<String>, Spanned<Vec<Spanned<Level>>>>;
/// One `[[cells]]` entry: factor name -> level.
pub(super) type RawCell = IndexMap<Spanned<String>, Spanned<Level>>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExperiment {
    pub name: Option<String>,
    pub description: Option<String>,
    pub target: Spanned<RawTarget>,
    #[serde(default)]
    pub factors: Option<Spanned<RawFactors>>,
    #[serde(default)]
    pub cells: Option<Spanned<Vec<Spanned<RawCell>>>>,
    /// Optional: absent, every shared setting and the engine's table take
    /// their defaults (docs/experiments.md). Not `Spanned`: toml cannot
    /// give the span of a table made only by `[load.http]`'s dotted
    /// header, and failed on it; `validate` finds the header instead.
    #[serde(default)]
    pub load: Option<RawLoad>,
    #[serde(default)]
    pub trials: Option<Spanned<RawTrials>>,
    #[serde(default)]
    pub attribution: Option<RawAttribution>,
    #[serde(default)]
    pub cpus: Option<Spanned<RawCpus>>,
    /// `[hosts.NAME]`: remote hosts over SSH (`super::hosts`).
    #[serde(default)]
    pub hosts: IndexMap<Spanned<String>, Spanned<RawHost>>,
    /// `[monitor]`: the profile's switch and rate (`super::monitor`).
    #[serde(default)]
    pub monitor: Option<Spanned<RawMonitor>>,
}

/// `[monitor]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMonitor {
    pub profile: Option<Spanned<RawProfileSetting>>,
}

/// `profile = true | false | "on" | "off" | HZ`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawProfileSetting {
    Bool(bool),
    Integer(i64),
    Text(String),
    /// Anything else TOML holds (a float, a table): refused by
    /// `super::monitor` with the same line as a bad word (only its span
    /// is read).
    Other(#[allow(dead_code)] serde::de::IgnoredAny),
}

/// `[hosts.NAME]`: a remote host.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHost {
    /// `user@address` (or `address`).
    pub ssh: Spanned<String>,
    pub port: Option<Spanned<i64>>,
    pub identity: Option<Spanned<String>>,
    pub known_hosts: Option<Spanned<String>>,
    pub check_host_key: Option<Spanned<bool>>,
    pub dir: Option<Spanned<String>>,
    /// The address load reaches it at, when not the ssh address.
    pub address: Option<Spanned<String>>,
}

/// `[cpus]`: `auto`, `none` or a CPU list for each side; `server`, `none`
/// or a CPU list for the placement's helpers.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCpus {
    pub server: Option<Spanned<String>>,
    pub generator: Option<Spanned<String>>,
    pub helpers: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTarget {
    pub kind: Spanned<String>,
    /// Server binary (nginx, postgres); default: found on PATH by the placement.
    pub binary: Option<Spanned<String>>,
    /// Docker image for container placements; kind = "image": the image.
    pub image: Option<Spanned<String>>,
    /// kind = "image": a Dockerfile directory tare builds.
    pub build: Option<Spanned<String>>,
    /// The user rootless Podman runs as (podman-rootless-* placements).
    pub rootless_user: Option<Spanned<String>>,
    /// nginx-proxy: the `tare` binary whose `serve` is the backend; default:
    /// the running `tare`.
    pub backend_binary: Option<Spanned<String>>,
    /// The `[hosts.NAME]` the target runs on; default: this machine.
    pub host: Option<Spanned<String>>,
    #[serde(default)]
    pub configs: IndexMap<Spanned<String>, Spanned<RawConfig>>,
    /// kind = "command": the program and its arguments, with placeholders
    /// (`experiment::service`).
    pub command: Option<Spanned<Vec<Spanned<String>>>>,
    /// kind = "command": the load engine that speaks its protocol.
    pub engine: Option<Spanned<String>>,
    /// kind = "command": `tcp`, `http:/path` or `engine`.
    pub ready: Option<Spanned<String>>,
    /// kind = "command": how long it may take to answer first.
    pub ready_timeout: Option<Spanned<String>>,
    /// kind = "command": environment variables.
    pub env: Option<Spanned<IndexMap<Spanned<String>, Spanned<String>>>>,
    /// kind = "command": its working directory.
    pub workdir: Option<Spanned<String>>,
    /// kind = "command": the host's files (absolute) and the app's
    /// (relative to this file) it needs in every placement.
    pub files: Option<Spanned<Vec<Spanned<String>>>>,
    /// kind = "command": the HTTP path load asks for.
    pub path: Option<Spanned<String>>,
    /// kind = "command": its port in a namespace of its own.
    pub port: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    /// Path of the config file, relative to the experiment file.
    pub file: Option<Spanned<String>>,
    /// The config text itself.
    pub text: Option<String>,
}

/// `[load]`'s shared keys. Its other keys are the engines' tables
/// (`[load.http]`, read by `crate::engines`); any key that is neither is
/// refused by `settings::load` with its line (so no `deny_unknown_fields`
/// here: serde cannot know the registry).
#[derive(Debug, Default, Deserialize)]
pub(super) struct RawLoad {
    pub engine: Option<Spanned<String>>,
    pub threads: Option<Spanned<i64>>,
    pub connections: Option<Spanned<i64>>,
    pub duration: Option<Spanned<String>>,
    pub warmup: Option<Spanned<String>>,
    pub timeout: Option<Spanned<String>>,
    pub rate: Option<Spanned<f64>>,
    pub arrivals: Option<Spanned<String>>,
    pub ramp: Option<Spanned<String>>,
    pub slo: Option<Spanned<String>>,
    pub io: Option<Spanned<String>>,
    /// The `[hosts.NAME]` the generators run on, one generator each.
    pub hosts: Option<Spanned<Vec<Spanned<String>>>>,
}

/// The keys of [`RawLoad`], in its order, for the unknown-key error.
pub(super) const LOAD_KEYS: &[&str] = &[
    "engine",
    "threads",
    "connections",
    "duration",
    "warmup",
    "timeout",
    "rate",
    "arrivals",
    "ramp",
    "slo",
    "io",
    "hosts",
];

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTrials {
    pub count: Option<Spanned<i64>>,
    pub max: Option<Spanned<i64>>,
    pub max_rsd: Option<Spanned<f64>>,
    pub precision: Option<Spanned<RawFraction>>,
    pub budget: Option<Spanned<String>>,
    pub seed: Option<Spanned<i64>>,
    pub cooldown: Option<Spanned<String>>,
    pub deployment: Option<Spanned<String>>,
    pub exclude_disturbed: Option<Spanned<bool>>,
    pub focus: Option<Spanned<String>>,
}

/// A fraction written as `"3%"` or as `0.03`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawFraction {
    Number(f64),
    Text(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAttribution {
    pub chain: Spanned<Vec<Spanned<String>>>,
    /// Used instead of `chain` when one of its cells cannot run on this machine.
    #[serde(default)]
    pub fallback: Option<Spanned<Vec<Spanned<String>>>>,
    /// Split each container ↔ process step into seccomp, storage and the rest.
    #[serde(default)]
    pub split: Option<Spanned<bool>>,
}

/// A factor level as written: TOML lets people write `access_log = [true,
/// false]` or `connections = [16, 48]`, and all of them mean their text.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(super) enum Level {
    Text(String),
    Integer(i64),
    Float(f64),
    Bool(bool),
}

impl Level {
    pub(super) fn text(&self) -> String {
        match self {
            Level::Text(s) => s.clone(),
            Level::Integer(i) => i.to_string(),
            Level::Float(f) => f.to_string(),
            Level::Bool(b) => b.to_string(),
        }
    }
}
