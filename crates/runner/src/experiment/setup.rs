//! A cell's levels typed ([`Setup`]): parsed once when the experiment file
//! is read, from the canonical texts `FactorKind::canonical` checked, so
//! the runner builds deployments and loads from types, never from strings
//! with fallbacks. A factor a cell does not name takes its default level
//! (`FactorKind::default_level`).

use std::time::Duration;

use tare_deploy::{AccessLog, PlacementKind, Storage, Transport, VmPin};

use super::factor::{parse_bytes, FactorKind};

/// What one cell deploys and loads.
#[derive(Clone, Debug, PartialEq)]
pub struct Setup {
    pub placement: PlacementKind,
    /// The config variant's name (checked against the target's variants
    /// and `[target.configs]` when the file was read).
    pub config: String,
    /// `None`: the config's own logging.
    pub access_log: Option<AccessLog>,
    /// `None`: `[load] connections`.
    pub connections: Option<usize>,
    pub transport: Transport,
    pub storage: Storage,
    pub seccomp_unconfined: bool,
    /// A container's CPU limit; `None`: unlimited.
    pub cpus: Option<f64>,
    /// A container's memory limit in bytes; `None`: unlimited.
    pub memory: Option<u64>,
    /// Injected one-way delay; `None`: none.
    pub delay: Option<Duration>,
    /// A guest's vCPUs; `None`: as many as the server may use.
    pub vm_cpus: Option<u32>,
    /// A guest's memory in bytes.
    pub vm_memory: u64,
    /// `None`: `[load.<engine>]`'s own.
    pub workload: Option<String>,
    pub vm_pin: VmPin,
}

impl Setup {
    /// The setup of a cell with these (canonical) levels.
    pub fn of(levels: &[(String, String)]) -> Result<Setup, String> {
        let level = |kind: FactorKind| -> Option<&str> {
            levels
                .iter()
                .find(|(k, _)| k == kind.name())
                .map(|(_, v)| v.as_str())
                .or(kind.default_level())
        };
        let named = |kind: FactorKind| -> Result<&str, String> {
            level(kind).ok_or_else(|| format!("no level for {}", kind.name()))
        };
        let bad = |kind: FactorKind, text: &str| format!("`{text}` is not a {} level", kind.name());
        let typed = |kind: FactorKind| -> Result<Option<&str>, String> {
            // `none` and `auto` are "no option" levels.
            Ok(level(kind).filter(|l| !matches!(*l, "none" | "auto")))
        };
        let placement = named(FactorKind::Placement)?;
        let delay = named(FactorKind::Delay)?;
        let vm_memory = named(FactorKind::VmMemory)?;
        Ok(Setup {
            placement: placement.parse().map_err(|e| format!("{e}"))?,
            config: named(FactorKind::Config)?.to_string(),
            access_log: level(FactorKind::AccessLog)
                .map(|l| l.parse().map_err(|e| format!("{e}")))
                .transpose()?,
            connections: level(FactorKind::Connections)
                .map(|c| c.parse().map_err(|_| bad(FactorKind::Connections, c)))
                .transpose()?,
            transport: named(FactorKind::Transport)?
                .parse()
                .map_err(|e| format!("{e}"))?,
            storage: named(FactorKind::Storage)?
                .parse()
                .map_err(|e| format!("{e}"))?,
            seccomp_unconfined: named(FactorKind::Seccomp)? == "unconfined",
            cpus: typed(FactorKind::Cpus)?
                .map(|c| c.parse().map_err(|_| bad(FactorKind::Cpus, c)))
                .transpose()?,
            memory: typed(FactorKind::Memory)?
                .map(|m| parse_bytes(m).ok_or_else(|| bad(FactorKind::Memory, m)))
                .transpose()?,
            delay: Some(
                humantime::parse_duration(delay).map_err(|_| bad(FactorKind::Delay, delay))?,
            )
            .filter(|d| !d.is_zero()),
            vm_cpus: typed(FactorKind::VmCpus)?
                .map(|c| c.parse().map_err(|_| bad(FactorKind::VmCpus, c)))
                .transpose()?,
            vm_memory: parse_bytes(vm_memory)
                .ok_or_else(|| bad(FactorKind::VmMemory, vm_memory))?,
            workload: level(FactorKind::Workload).map(str::to_string),
            vm_pin: match named(FactorKind::VmPin)? {
                "process" => VmPin::Process,
                "vcpu" => VmPin::Vcpu,
                other => return Err(bad(FactorKind::VmPin, other)),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn levels(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_cell_without_factors_has_the_defaults() {
        let s = Setup::of(&[]).unwrap();
        assert_eq!(s.placement, PlacementKind::reference());
        assert_eq!(s.config, "default");
        assert_eq!(s.transport, Transport::Tcp);
        assert_eq!(s.storage, Storage::Image);
        assert_eq!(
            (s.cpus, s.memory, s.delay, s.vm_cpus),
            (None, None, None, None)
        );
        assert_eq!(s.vm_memory, 512 << 20);
        assert_eq!((s.access_log, s.connections), (None, None));
    }

    #[test]
    fn levels_become_types_and_a_bad_one_is_an_error() {
        let s = Setup::of(&levels(&[
            ("placement", "docker-host"),
            ("storage", "volume"),
            ("cpus", "1.5"),
            ("memory", "512m"),
            ("delay", "2ms"),
            ("vm_pin", "vcpu"),
            ("access_log", "buffered"),
            ("connections", "16"),
        ]))
        .unwrap();
        assert_eq!(s.placement.name(), "docker-host");
        assert_eq!(s.storage, Storage::Volume);
        assert_eq!((s.cpus, s.memory), (Some(1.5), Some(512 << 20)));
        assert_eq!(s.delay, Some(Duration::from_millis(2)));
        assert_eq!(s.vm_pin, VmPin::Vcpu);
        assert_eq!(s.access_log, Some(AccessLog::Buffered));
        assert_eq!(s.connections, Some(16));
        // No silent fallback: a level that does not parse is refused.
        assert!(Setup::of(&levels(&[("storage", "nfs")])).is_err());
        assert!(Setup::of(&levels(&[("transport", "udp")])).is_err());
    }
}
