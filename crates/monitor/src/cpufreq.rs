//! CPU clock frequency: `/sys/devices/system/cpu/cpu*/cpufreq/scaling_cur_freq`
//! (kHz), one file per CPU, kept open and re-read like the /proc files.
//! Most virtual machines expose no cpufreq at all; then there is nothing
//! to read and the record says "not exposed" instead of guessing.

use std::path::Path;

use crate::procfile::ProcFile;

/// The open frequency files of every CPU that has one.
pub(crate) struct FreqFiles {
    files: Vec<ProcFile>,
}

impl FreqFiles {
    /// The machine's files, or `None` when no CPU exposes its frequency.
    pub(crate) fn open() -> Option<FreqFiles> {
        FreqFiles::open_under(Path::new("/sys/devices/system/cpu"))
    }

    /// Under another root (tests).
    pub(crate) fn open_under(root: &Path) -> Option<FreqFiles> {
        let mut paths: Vec<_> = std::fs::read_dir(root)
            .ok()?
            .flatten()
            .filter(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.strip_prefix("cpu")
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
            .map(|e| e.path().join("cpufreq/scaling_cur_freq"))
            .collect();
        paths.sort();
        let files: Vec<ProcFile> = paths
            .iter()
            .filter_map(|p| ProcFile::open(p).ok())
            .collect();
        (!files.is_empty()).then_some(FreqFiles { files })
    }

    /// Mean frequency over the CPUs read, in MHz; `None` if none could be read.
    pub(crate) fn mean_mhz(&mut self) -> Option<f64> {
        let khz: Vec<f64> = self
            .files
            .iter_mut()
            .filter_map(|f| f.read().ok().and_then(parse_khz))
            .collect();
        (!khz.is_empty()).then(|| khz.iter().sum::<f64>() / khz.len() as f64 / 1000.0)
    }
}

/// `scaling_cur_freq` holds one integer, in kHz.
fn parse_khz(text: &str) -> Option<f64> {
    text.trim().parse::<u64>().ok().map(|k| k as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_mean_over_cpus_and_says_when_there_is_none() {
        let root = tempfile::tempdir().unwrap();
        assert!(FreqFiles::open_under(root.path()).is_none(), "no cpufreq");
        for (cpu, khz) in [("cpu0", "2400000\n"), ("cpu1", "2600000\n")] {
            let dir = root.path().join(cpu).join("cpufreq");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("scaling_cur_freq"), khz).unwrap();
        }
        // Not CPUs: ignored.
        std::fs::create_dir_all(root.path().join("cpufreq")).unwrap();
        std::fs::create_dir_all(root.path().join("cpuidle")).unwrap();
        let mut f = FreqFiles::open_under(root.path()).unwrap();
        assert_eq!(f.mean_mhz(), Some(2500.0));
        std::fs::write(
            root.path().join("cpu1/cpufreq/scaling_cur_freq"),
            "1800000\n",
        )
        .unwrap();
        assert_eq!(f.mean_mhz(), Some(2100.0), "re-read in place");
        assert_eq!(parse_khz("garbage"), None);
    }
}
