//! `[monitor]`: what the resource monitor of every measured load does
//! beyond the CPU table, typed once when the file is read
//! (docs/experiments.md, docs/profiles.md).

use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::error::{ExperimentError, Locator};
use super::raw::{RawMonitor, RawProfileSetting};

/// The highest profile rate accepted: 10 kHz per CPU is already ten times
/// the cost bench/profile-overhead.sh measures at the default.
const MAX_PROFILE_HZ: u32 = 10_000;

/// `[monitor]`, typed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MonitorSettings {
    /// Whole-machine stack samples per second of CPU, per CPU, in every
    /// monitored trial; 0: no profile (`profile = false`).
    pub profile_hz: u32,
}

impl Default for MonitorSettings {
    fn default() -> Self {
        MonitorSettings {
            profile_hz: tare_monitor::profile::DEFAULT_HZ,
        }
    }
}

/// `[monitor]` typed; a bad value is one error at its line and key.
pub(super) fn monitor(
    loc: &Locator,
    raw: Option<&Spanned<RawMonitor>>,
) -> Result<MonitorSettings, ExperimentError> {
    let mut out = MonitorSettings::default();
    let Some(p) = raw.and_then(|m| m.get_ref().profile.as_ref()) else {
        return Ok(out);
    };
    out.profile_hz = match p.get_ref() {
        RawProfileSetting::Bool(true) => out.profile_hz,
        RawProfileSetting::Bool(false) => 0,
        RawProfileSetting::Text(t) if t == "on" => out.profile_hz,
        RawProfileSetting::Text(t) if t == "off" => 0,
        RawProfileSetting::Integer(hz) if (1..=MAX_PROFILE_HZ as i64).contains(hz) => *hz as u32,
        _ => {
            return Err(loc.error(
                p.span(),
                "monitor.profile",
                format!(
                    "must be true, false, \"on\", \"off\" or a rate in Hz from 1 to {MAX_PROFILE_HZ} (default {})",
                    tare_monitor::profile::DEFAULT_HZ
                ),
            ))
        }
    };
    Ok(out)
}
