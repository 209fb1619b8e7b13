//! Factors: the things an experiment varies, and the levels each may take.
//!
//! The names are fixed so that the runner knows how to apply each one (a
//! placement is a deployment, `connections` is a load setting, `delay` is a
//! netem qdisc). A level is kept as its text form: that text is what a cell
//! id, `trials.jsonl` and the reports show, so it must be canonical
//! (`"1ms"`, never `"1 ms"` in one cell and `"1ms"` in the other).

use std::time::Duration;

use tare_deploy::{PlacementKind, SpecOption};
use tare_engine::bounds;

/// A factor the experiment file may vary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FactorKind {
    /// Where the target runs and how load reaches it.
    Placement,
    /// A named config variant of the target (`[target.configs.NAME]`).
    Config,
    /// `on` / `off`: the target's access log.
    AccessLog,
    /// Concurrent connections (HTTP) or clients (pg): overrides `[load]`.
    Connections,
    /// `tcp` / `unix`.
    Transport,
    /// Containers: where content and logs live (`image` overlayfs, `volume`,
    /// `host` bind mount, `tmpfs` over the content directory).
    Storage,
    /// Containers: `default` or `unconfined` seccomp profile.
    Seccomp,
    /// Containers: CPU limit (`--cpus`), `none` for unlimited.
    Cpus,
    /// Containers: memory limit (`--memory`, e.g. `512m`), `none` for unlimited.
    Memory,
    /// Lab placements: netem delay added on the path, a known ground truth.
    Delay,
    /// VM placements: the guest's vCPUs (`auto`: as many as the server
    /// may use on the host).
    VmCpus,
    /// VM placements: the guest's memory (e.g. `512m`, `2g`).
    VmMemory,
    /// What the engine sends, in its own words (redis: a test name such
    /// as `get`, or tests joined by `+`): overrides `[load.<engine>]`.
    Workload,
    /// VM placements: `process` (QEMU on the server's CPUs) or `vcpu`
    /// (each vCPU thread on one of them).
    VmPin,
}

impl FactorKind {
    pub const ALL: &'static [FactorKind] = &[
        FactorKind::Placement,
        FactorKind::Config,
        FactorKind::AccessLog,
        FactorKind::Connections,
        FactorKind::Transport,
        FactorKind::Storage,
        FactorKind::Seccomp,
        FactorKind::Cpus,
        FactorKind::Memory,
        FactorKind::Delay,
        FactorKind::VmCpus,
        FactorKind::VmMemory,
        FactorKind::Workload,
        FactorKind::VmPin,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FactorKind::Placement => "placement",
            FactorKind::Config => "config",
            FactorKind::AccessLog => "access_log",
            FactorKind::Connections => "connections",
            FactorKind::Transport => "transport",
            FactorKind::Storage => "storage",
            FactorKind::Seccomp => "seccomp",
            FactorKind::Cpus => "cpus",
            FactorKind::Memory => "memory",
            FactorKind::Delay => "delay",
            FactorKind::VmCpus => "vm_cpus",
            FactorKind::VmMemory => "vm_memory",
            FactorKind::Workload => "workload",
            FactorKind::VmPin => "vm_pin",
        }
    }

    pub fn from_name(name: &str) -> Option<FactorKind> {
        FactorKind::ALL.iter().copied().find(|k| k.name() == name)
    }

    /// The deployment option this factor sets, when only some placements
    /// honour it (container factors, netem delay).
    pub fn needs(self) -> Option<SpecOption> {
        match self {
            FactorKind::Storage => Some(SpecOption::Storage),
            FactorKind::Seccomp | FactorKind::Cpus | FactorKind::Memory => {
                Some(SpecOption::Container)
            }
            FactorKind::Delay => Some(SpecOption::Netem),
            FactorKind::VmCpus | FactorKind::VmMemory | FactorKind::VmPin => Some(SpecOption::Vm),
            _ => None,
        }
    }

    /// Checks one level and returns its canonical text. `configs` are the
    /// target's config variant names, its own then `[target.configs]`'s
    /// (for the `config` factor: each target lists its own, so a variant
    /// another target has is refused when the file is read).
    pub fn canonical(self, level: &str, configs: &[String]) -> Result<String, String> {
        let one_of = |allowed: &[&str]| -> Result<String, String> {
            if allowed.contains(&level) {
                Ok(level.to_string())
            } else {
                Err(format!(
                    "`{level}` is not a {} level (one of: {})",
                    self.name(),
                    allowed.join(", ")
                ))
            }
        };
        match self {
            FactorKind::Placement => placement_level(level),
            FactorKind::Config => {
                if configs.iter().any(|c| c == level) {
                    Ok(level.to_string())
                } else {
                    Err(format!(
                        "config `{level}` is not defined: add [target.configs.{level}] (known: {})",
                        configs.join(", ")
                    ))
                }
            }
            FactorKind::AccessLog => match level {
                "on" | "true" => Ok("on".into()),
                "off" | "false" => Ok("off".into()),
                "buffered" => Ok("buffered".into()),
                _ => Err(format!(
                    "`{level}` is not an access_log level (on, off, buffered)"
                )),
            },
            FactorKind::Connections => match level.parse::<u64>() {
                Ok(n) if n > 0 => Ok(n.to_string()),
                _ => Err(format!("`{level}` is not a positive connection count")),
            },
            FactorKind::Transport => one_of(&["tcp", "unix"]),
            // `host` is the name for a bind-mounted host path.
            FactorKind::Storage if level == "host" => Ok("host-path".into()),
            FactorKind::Storage => one_of(&["image", "volume", "host-path", "tmpfs"]),
            FactorKind::Seccomp => one_of(&["default", "unconfined"]),
            FactorKind::Cpus => cpus_level(level),
            FactorKind::Memory => {
                if level == "none" || parse_bytes(level).is_some() {
                    Ok(level.to_string())
                } else {
                    Err(format!(
                        "`{level}` is not a memory limit (e.g. 512m, 2g, or none)"
                    ))
                }
            }
            FactorKind::Delay => match humantime::parse_duration(level) {
                Ok(d) => Ok(format_delay(d)),
                Err(_) => Err(format!("`{level}` is not a delay (e.g. 0ms, 500us, 2ms)")),
            },
            FactorKind::VmCpus => vm_cpus_level(level),
            FactorKind::Workload => workload_level(level),
            FactorKind::VmMemory => vm_memory_level(level),
            FactorKind::VmPin => match level {
                "process" | "vcpu" => Ok(level.into()),
                _ => Err(format!("`{level}` is not a vm_pin level (process or vcpu)")),
            },
        }
    }

    /// The level a cell takes when it does not name this factor: what the
    /// placement does with no option given. `None` (access_log,
    /// connections, workload): the config or `[load]` decides, so a cell list that
    /// varies it must name it in every cell.
    pub fn default_level(self) -> Option<&'static str> {
        match self {
            FactorKind::Placement => Some(PlacementKind::reference().name()),
            FactorKind::Transport => Some("tcp"),
            FactorKind::Config => Some("default"),
            FactorKind::Storage => Some("image"),
            FactorKind::Seccomp => Some("default"),
            FactorKind::Cpus | FactorKind::Memory => Some("none"),
            FactorKind::Delay => Some("0ms"),
            FactorKind::VmCpus => Some("auto"),
            FactorKind::VmMemory => Some("512m"),
            FactorKind::VmPin => Some("process"),
            FactorKind::AccessLog | FactorKind::Connections | FactorKind::Workload => None,
        }
    }
}

/// Docker's memory syntax: a number with an optional b/k/m/g suffix.
pub(crate) fn parse_bytes(text: &str) -> Option<u64> {
    let t = text.trim().to_ascii_lowercase();
    let (digits, mult) = match t.chars().last()? {
        'b' => (&t[..t.len() - 1], 1),
        'k' => (&t[..t.len() - 1], 1 << 10),
        'm' => (&t[..t.len() - 1], 1 << 20),
        'g' => (&t[..t.len() - 1], 1 << 30),
        _ => (&t[..], 1),
    };
    let n: u64 = digits.parse().ok()?;
    // More than 16 EiB does not fit: not a limit, an error.
    n.checked_mul(mult).filter(|_| n > 0)
}

/// The canonical text of a netem delay: whole milliseconds as `Nms`,
/// anything finer in microseconds, so `"1ms"` and `"1000us"` are one level.
pub(crate) fn format_delay(d: Duration) -> String {
    let us = d.as_micros();
    let (ms, rest) = (us / 1000, us % 1000);
    if rest == 0 {
        format!("{ms}ms")
    } else {
        format!("{us}us")
    }
}

/// A placement level, checked against the registry, so a typo fails at
/// load time, not after an hour.
fn placement_level(level: &str) -> Result<String, String> {
    level
        .parse::<PlacementKind>()
        .map(|p| p.name().to_string())
        .map_err(|_| {
            let names: Vec<&str> = PlacementKind::all().map(PlacementKind::name).collect();
            format!(
                "`{level}` is not a placement level (one of: {})",
                names.join(", ")
            )
        })
}

/// A CPU limit: a positive number, or none.
fn cpus_level(level: &str) -> Result<String, String> {
    if level == "none" {
        return Ok(level.into());
    }
    match level.parse::<f64>() {
        Ok(c) if c > 0.0 && c.is_finite() => Ok(c.to_string()),
        _ => Err(format!(
            "`{level}` is not a CPU limit (a positive number, or none)"
        )),
    }
}

/// A guest's vCPU count, or auto.
fn vm_cpus_level(level: &str) -> Result<String, String> {
    match level.parse::<u32>() {
        _ if level == "auto" => Ok(level.into()),
        Ok(n) if (1..=bounds::MAX_VCPUS).contains(&n) => Ok(n.to_string()),
        _ => Err(format!(
            "`{level}` is not a vCPU count (1 to {}, or auto)",
            bounds::MAX_VCPUS
        )),
    }
}

/// A workload level: the engine checks the words
/// (`validate::check_workloads`); here only the spelling a cell id can carry.
fn workload_level(level: &str) -> Result<String, String> {
    let l = level.trim().to_ascii_lowercase();
    let word = |w: &str| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    if l.split('+').all(word) {
        Ok(l)
    } else {
        Err(format!(
            "`{level}` is not a workload level (a name such as get, or names joined by +)"
        ))
    }
}

/// A guest's memory size, within the bounds.
fn vm_memory_level(level: &str) -> Result<String, String> {
    match parse_bytes(level) {
        Some(b) if (bounds::MIN_GUEST_MEMORY..=bounds::MAX_GUEST_MEMORY).contains(&b) => {
            Ok(level.to_string())
        }
        _ => Err(format!(
            "`{level}` is not a guest memory size ({} to {}, e.g. 512m, 2g)",
            bounds::show_bytes(bounds::MIN_GUEST_MEMORY),
            bounds::show_bytes(bounds::MAX_GUEST_MEMORY)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_canonical() {
        let k = FactorKind::Delay;
        assert_eq!(k.canonical("1000us", &[]).unwrap(), "1ms");
        assert_eq!(k.canonical("250us", &[]).unwrap(), "250us");
        assert_eq!(FactorKind::AccessLog.canonical("true", &[]).unwrap(), "on");
        assert_eq!(FactorKind::Cpus.canonical("1.50", &[]).unwrap(), "1.5");
        assert!(FactorKind::Connections.canonical("0", &[]).is_err());
        assert!(FactorKind::Placement.canonical("docker", &[]).is_err());
        assert!(FactorKind::Memory.canonical("12x", &[]).is_err());
        let w = FactorKind::Workload;
        assert_eq!(w.canonical(" SET+Get ", &[]).unwrap(), "set+get");
        assert!(w.canonical("get,set", &[]).is_err());
        assert!(w.canonical("get+", &[]).is_err());
        assert_eq!(parse_bytes("512m"), Some(512 << 20));
    }

    /// Regression: a memory level over 16 EiB (`"99999999999g"`)
    /// overflowed `n * mult` (a panic in debug builds, a wrapped limit
    /// passed to Docker in release); it is not a memory limit now.
    #[test]
    fn memory_limit_beyond_u64_is_refused_not_wrapped() {
        assert_eq!(parse_bytes("17179869183g"), Some(17179869183 << 30));
        assert_eq!(parse_bytes("17179869184g"), None);
        assert_eq!(parse_bytes("18446744073709551615k"), None);
        assert!(FactorKind::Memory
            .canonical("99999999999999g", &[])
            .is_err());
    }

    #[test]
    fn config_levels_must_be_defined() {
        let configs = vec!["default".to_string(), "tuned".to_string()];
        assert!(FactorKind::Config.canonical("tuned", &configs).is_ok());
        let configs = vec!["default".into(), "tuned".into(), "mine".to_string()];
        let err = FactorKind::Config.canonical("fast", &configs).unwrap_err();
        assert!(err.contains("default, tuned, mine"), "{err}");
    }
}
