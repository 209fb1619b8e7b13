//! QEMU's threads as the host sees them: the vCPU threads (to pin them,
//! `vm_pin = "vcpu"`) and the vhost-net kernel threads serving a guest's
//! NIC (their own part of where the CPU goes).

use tare_engine::cpu::CpuList;

/// QEMU's vCPU threads (named `CPU <n>/TCG` or `CPU <n>/KVM` with
/// `debug-threads=on`), as (vCPU index, thread id), in vCPU order.
pub(crate) fn vcpu_threads(pid: i32) -> Vec<(u32, i32)> {
    let mut found: Vec<(u32, i32)> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let tid = e.file_name().to_str()?.parse::<i32>().ok()?;
            let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
            Some((vcpu_index(comm.trim())?, tid))
        })
        .collect();
    found.sort_unstable();
    found
}

/// `CPU 3/KVM` → 3.
fn vcpu_index(comm: &str) -> Option<u32> {
    let (index, accel) = comm.strip_prefix("CPU ")?.split_once('/')?;
    (!accel.is_empty()).then_some(())?;
    index.parse().ok()
}

/// vCPU *i* on `cpus[i % len]`: libvirt's `<vcpupin>`, one host CPU each.
pub(crate) fn pin_vcpus(pid: i32, cpus: &CpuList) -> Result<(), String> {
    let threads = vcpu_threads(pid);
    if threads.is_empty() {
        return Err(format!("QEMU (pid {pid}) has no thread named CPU <n>/…"));
    }
    let list = cpus.cpus();
    if list.is_empty() {
        return Err("no CPUs to pin to".into());
    }
    for (index, tid) in threads {
        let one: CpuList = list[index as usize % list.len()].to_string().parse()?;
        let set = one.to_cpu_set();
        // SAFETY: sched_setaffinity reads `set`, a valid cpu_set_t, for
        // a thread id just read from /proc.
        let rc = unsafe { libc::sched_setaffinity(tid, std::mem::size_of_val(&set), &set) };
        if rc != 0 {
            return Err(format!(
                "vCPU {index} (thread {tid}): {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// The kernel threads of vhost-net serving QEMU `qemu_pid`'s NICs: named
/// `vhost-<qemu pid>` (drivers/vhost/vhost.c, `vhost_dev_set_owner`).
/// Since Linux 6.4 the worker is a thread of QEMU itself, counted in QEMU
/// (the server) and found by no process scan.
pub(crate) fn vhost_workers(
    qemu_pid: i32,
    processes: impl IntoIterator<Item = (i32, String)>,
) -> Vec<u32> {
    let name = format!("vhost-{qemu_pid}");
    processes
        .into_iter()
        .filter(|(_, comm)| *comm == name)
        .map(|(pid, _)| pid as u32)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vcpu_threads_are_told_by_name() {
        assert_eq!(vcpu_index("CPU 0/TCG"), Some(0));
        assert_eq!(vcpu_index("CPU 11/KVM"), Some(11));
        for other in [
            "qemu-system-x86",
            "CPU 1/",
            "CPU x/TCG",
            "worker",
            "IO mon_iothread",
        ] {
            assert_eq!(vcpu_index(other), None, "{other}");
        }
    }

    #[test]
    fn vhost_workers_are_the_threads_named_for_their_qemu() {
        let procs = vec![
            (10, "vhost-4242".to_string()),
            (11, "vhost-424".to_string()),
            (12, "kworker/0:1".to_string()),
            (13, "vhost-4242".to_string()),
            (4242, "qemu-system-x86".to_string()),
        ];
        assert_eq!(vhost_workers(4242, procs), vec![10, 13]);
        assert!(vhost_workers(1, Vec::new()).is_empty());
    }
}
