//! Which accelerator guests get, found by trying, never assumed: `/dev/kvm`
//! existing proves nothing (on this project's machine it is a nested PVM
//! whose `-cpu host` aborts at once with "failed to set MSR 0x10a", and
//! whose `-cpu qemu64` guests die in its instruction emulator after 15-100
//! s, measured here when the vm placements were built). So a small guest is booted once with KVM; KVM is
//! used only if it reaches userspace within `TRIAL_LIMIT`, else TCG, QEMU's
//! emulator (functional, not a speed result). The verdict is cached per
//! kernel, QEMU version and /dev/kvm.

use std::path::Path;
use std::time::{Duration, Instant};

use super::initramfs;
use super::kernel::Kernel;
use super::qemu::{self, Accel};
use crate::host::sha256_hex;

/// What every TCG result carries, wherever it is shown.
pub const TCG_LABEL: &str = "emulated: functional, not a speed result";

/// The accelerator and why.
#[derive(Clone, Debug)]
pub(crate) struct Verdict {
    pub accel: Accel,
    pub reason: String,
}

/// The `-name` of a trial guest, before the pid of the tare that runs it
/// (`tare cleanup` leaves a live one alone).
pub(crate) const TRIAL_PREFIX: &str = "tare-vm-trial-";

/// How long the trial guest may take to reach userspace under KVM (a
/// stock kernel does it in well under a second there).
const TRIAL_LIMIT: Duration = Duration::from_secs(20);

/// The accelerator for this machine, from the cache or a trial boot.
/// `TARE_VM_ACCEL=tcg` skips the trial (a user's choice, said as such).
pub(crate) fn detect(qemu_bin: &Path, kernel: &Kernel, cache: &Path) -> Verdict {
    if std::env::var("TARE_VM_ACCEL").as_deref() == Ok("tcg") {
        return Verdict {
            accel: Accel::Tcg,
            reason: "TARE_VM_ACCEL=tcg".into(),
        };
    }
    if let Err(e) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
    {
        return Verdict {
            accel: Accel::Tcg,
            reason: format!("/dev/kvm: {e}"),
        };
    }
    let qemu_version = crate::host::version_line(qemu_bin, "--version").unwrap_or_default();
    let key =
        sha256_hex(format!("{}\n{qemu_version}\n{}", kernel.identity(), kvm_identity()).as_bytes());
    let file = cache.join(format!("accel-{}", &key[..16]));
    if let Some(v) = std::fs::read_to_string(&file).ok().and_then(|t| parse(&t)) {
        return v;
    }
    let v = trial(qemu_bin, kernel, cache);
    let _ = std::fs::write(&file, format!("{}\n{}\n", v.accel.name(), v.reason));
    v
}

/// What identifies this machine's KVM: its modules (kvm_intel, kvm_amd,
/// kvm_pvm) and /dev/kvm's device number.
fn kvm_identity() -> String {
    use std::os::unix::fs::MetadataExt;
    let modules: Vec<String> = std::fs::read_to_string("/proc/modules")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|m| m.starts_with("kvm"))
        .map(String::from)
        .collect();
    let rdev = std::fs::metadata("/dev/kvm").map(|m| m.rdev()).unwrap_or(0);
    format!("{} {rdev}", modules.join(","))
}

fn parse(text: &str) -> Option<Verdict> {
    let (accel, reason) = text.split_once('\n')?;
    let accel = match accel.trim() {
        "kvm" => Accel::Kvm,
        "tcg" => Accel::Tcg,
        _ => return None,
    };
    Some(Verdict {
        accel,
        reason: format!("{} (cached)", reason.trim()),
    })
}

/// Boots a guest whose init only says it runs, with KVM.
fn trial(qemu_bin: &Path, kernel: &Kernel, cache: &Path) -> Verdict {
    let tcg = |reason: String| Verdict {
        accel: Accel::Tcg,
        reason,
    };
    let work = cache.join(format!(".trial-{}", std::process::id()));
    if std::fs::create_dir_all(&work).is_err() {
        return tcg("no directory for the KVM trial boot".into());
    }
    let verdict = trial_in(qemu_bin, kernel, &work);
    let _ = std::fs::remove_dir_all(&work);
    verdict
}

fn trial_in(qemu_bin: &Path, kernel: &Kernel, work: &Path) -> Verdict {
    let tcg = |reason: String| Verdict {
        accel: Accel::Tcg,
        reason,
    };
    let initrd = work.join("initrd.cpio");
    let init = "#!/bin/busybox sh\n/bin/busybox echo tare-vm: trial ok\n/bin/busybox reboot -f\n";
    if let Err(e) = initramfs::build_trial(kernel, init, &initrd) {
        return tcg(format!("the KVM trial guest could not be built: {e}"));
    }
    let machine = qemu::Machine {
        name: format!("{TRIAL_PREFIX}{}", std::process::id()),
        accel: Accel::Kvm,
        cpus: 1,
        memory_mib: 128,
        kernel,
        initrd: &initrd,
        append: String::new(),
        nic: qemu::Nic::None,
        disk: None,
    };
    let log = work.join("console.log");
    let Ok(out) = std::fs::File::create(&log) else {
        return tcg("no log file for the KVM trial boot".into());
    };
    let err = out.try_clone().ok();
    let started = Instant::now();
    let mut child = match std::process::Command::new(qemu_bin)
        .args(machine.args())
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err.map_or_else(std::process::Stdio::null, Into::into))
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return tcg(format!("starting {}: {e}", qemu_bin.display())),
    };
    let verdict = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("tare-vm: trial ok") {
            break Verdict {
                accel: Accel::Kvm,
                reason: format!(
                    "a KVM trial guest reached userspace in {:.1} s",
                    started.elapsed().as_secs_f64()
                ),
            };
        }
        if let Ok(Some(status)) = child.try_wait() {
            let last = text
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no output")
                .trim()
                .to_string();
            break tcg(format!("the KVM trial boot failed ({status}): {last}"));
        }
        if started.elapsed() > TRIAL_LIMIT {
            break tcg(format!(
                "a KVM trial guest did not reach userspace within {} s",
                TRIAL_LIMIT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = child.kill();
    let _ = child.wait();
    verdict
}

/// The host's TSC frequency in kHz, measured against the monotonic clock
/// over 20 ms. A TCG guest's TSC is the host's (QEMU's `cpu_get_host_ticks`),
/// and telling its kernel the rate (`tsc_early_khz`) skips the calibration
/// that hung 2 of 10 microvm boots under TCG here.
pub(crate) fn tsc_khz() -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        let t0 = Instant::now();
        // SAFETY: rdtsc has no preconditions on x86-64.
        let c0 = unsafe { core::arch::x86_64::_rdtsc() };
        std::thread::sleep(Duration::from_millis(20));
        // SAFETY: as above.
        let c1 = unsafe { core::arch::x86_64::_rdtsc() };
        let secs = t0.elapsed().as_secs_f64();
        let khz = (c1.wrapping_sub(c0) as f64 / secs / 1000.0) as u64;
        (100_000..20_000_000).contains(&khz).then_some(khz)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_verdicts_read_back() {
        let v = parse("tcg\nthe KVM trial boot failed\n").unwrap();
        assert_eq!(v.accel, Accel::Tcg);
        assert!(v.reason.contains("cached"));
        assert!(parse("maybe\nx").is_none());
    }

    #[test]
    fn the_tsc_rate_is_plausible() {
        if let Some(khz) = tsc_khz() {
            assert!((100_000..20_000_000).contains(&khz), "{khz}");
        }
    }
}
