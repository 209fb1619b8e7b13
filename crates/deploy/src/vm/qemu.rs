//! The QEMU command line of a guest: a `microvm` machine (no PCI, no
//! firmware tables to walk, virtio over MMIO), the kernel booted directly,
//! the serial console on QEMU's stdout, one virtio-net NIC, and a
//! virtio-blk data disk when the storage is a volume (`disk`).

use std::net::SocketAddr;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::disk::Disk;
use super::kernel::Kernel;

/// How a guest's CPU runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Accel {
    /// Hardware virtualisation through /dev/kvm.
    Kvm,
    /// QEMU's Tiny Code Generator: every guest instruction translated.
    Tcg,
}

impl Accel {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }

    /// The CPU model: the host's own under KVM, everything TCG emulates
    /// otherwise.
    pub(crate) fn cpu(self) -> &'static str {
        match self {
            Accel::Kvm => "host",
            Accel::Tcg => "max",
        }
    }
}

/// The kernel command line every guest gets. Each option cuts boot work
/// that an emulated CPU pays for and that changes nothing once the server
/// runs (docs/placements.md, "Boot time"): `quiet` (the serial console
/// costs per character), `pci=off` (microvm has no PCI),
/// `cryptomgr.notests` (the crypto self-tests run at registration, about a
/// tenth of the boot under TCG), `ipv6.disable=1` (tare's servers listen on
/// IPv4; no IPv6 set-up, router solicitations or MLD on the guest's link),
/// `8250.nr_uarts=1` (one serial port, not four probed).
pub(crate) const BOOT_OPTIONS: &str =
    "console=ttyS0 quiet panic=-1 pci=off cryptomgr.notests ipv6.disable=1 8250.nr_uarts=1";

/// One guest to start.
pub(crate) struct Machine<'a> {
    /// `-name`: tare's prefix and the deployment, so `tare cleanup` finds it.
    pub name: String,
    pub accel: Accel,
    pub cpus: u32,
    pub memory_mib: u32,
    pub kernel: &'a Kernel,
    pub initrd: &'a Path,
    /// Kernel command line beyond the console settings.
    pub append: String,
    pub nic: Nic,
    /// The data disk, virtio-blk (`storage = "volume"`).
    pub disk: Option<&'a Disk>,
}

/// The guest's network card.
pub(crate) enum Nic {
    /// A tap device on a bridge, with vhost-net where the host has it.
    Tap {
        ifname: String,
        vhost: bool,
    },
    /// QEMU's user-mode network (slirp) with TCP forwards host → guest port.
    User {
        forwards: Vec<(SocketAddr, u16)>,
    },
    None,
}

impl Machine<'_> {
    pub(crate) fn args(&self) -> Vec<String> {
        let mut a: Vec<String> = Vec::new();
        let mut push = |items: &[&str]| a.extend(items.iter().map(|s| s.to_string()));
        // Thread names `CPU <n>/TCG` (or `/KVM`): how tare finds the vCPU
        // threads it pins (`placements::vm`, `vm_pin = "vcpu"`). A second
        // `-name` (QEMU merges them) keeps the first one's value the bare
        // deployment name that every `tare cleanup` reads.
        push(&["-name", &self.name, "-name", "debug-threads=on"]);
        push(&[
            "-machine",
            &format!("microvm,accel={}", self.accel.name()),
            "-cpu",
            self.accel.cpu(),
        ]);
        push(&[
            "-smp",
            &self.cpus.to_string(),
            "-m",
            &self.memory_mib.to_string(),
        ]);
        push(&[
            "-nodefaults",
            "-no-user-config",
            "-display",
            "none",
            "-serial",
            "stdio",
            // The guest's `reboot -f` (after its server exits) ends QEMU.
            "-no-reboot",
        ]);
        push(&["-kernel", &self.kernel.boot.display().to_string()]);
        push(&["-initrd", &self.initrd.display().to_string()]);
        let mut cmdline = BOOT_OPTIONS.to_string();
        if !self.append.is_empty() {
            cmdline.push(' ');
            cmdline.push_str(&self.append);
        }
        push(&["-append", &cmdline]);
        match &self.nic {
            Nic::Tap { ifname, vhost } => {
                let mut netdev = format!("tap,id=n0,ifname={ifname},script=no,downscript=no");
                if *vhost {
                    netdev.push_str(",vhost=on");
                }
                push(&["-netdev", &netdev]);
                push(&["-device", "virtio-net-device,netdev=n0"]);
            }
            Nic::User { forwards } => {
                let mut netdev = "user,id=n0".to_string();
                for (host, guest) in forwards {
                    netdev.push_str(&format!(
                        ",hostfwd=tcp:{}:{}-:{guest}",
                        host.ip(),
                        host.port()
                    ));
                }
                push(&["-netdev", &netdev]);
                push(&["-device", "virtio-net-device,netdev=n0"]);
            }
            Nic::None => {}
        }
        if let Some(d) = self.disk {
            a.extend(d.qemu_args());
        }
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tap_guest_gets_microvm_its_tap_and_its_command_line() {
        let kernel = Kernel {
            version: "6.1.0-56-amd64".into(),
            image: "/boot/vmlinuz-6.1.0-56-amd64".into(),
            boot: "/cache/vmlinux".into(),
            modules: "/lib/modules/6.1.0-56-amd64".into(),
            hz: Some(250),
        };
        let m = Machine {
            name: "tare-x".into(),
            accel: Accel::Tcg,
            cpus: 2,
            memory_mib: 512,
            kernel: &kernel,
            initrd: Path::new("/d/initrd"),
            append: "tare.ip=10.0.0.2/28".into(),
            nic: Nic::Tap {
                ifname: "tr0a1b2c3dtp".into(),
                vhost: false,
            },
            disk: None,
        };
        let a = m.args().join(" ");
        assert!(a.starts_with("-name tare-x -name debug-threads=on "), "{a}");
        assert!(a.contains("-machine microvm,accel=tcg -cpu max"), "{a}");
        assert!(a.contains("-smp 2 -m 512"), "{a}");
        assert!(a.contains("-kernel /cache/vmlinux"), "{a}");
        assert!(
            a.contains(&format!("{BOOT_OPTIONS} tare.ip=10.0.0.2/28")),
            "{a}"
        );
        assert!(
            a.contains("tap,id=n0,ifname=tr0a1b2c3dtp,script=no,downscript=no "),
            "{a}"
        );
        let user = Machine {
            nic: Nic::User {
                forwards: vec![("127.0.0.1:4000".parse().unwrap(), 80)],
            },
            ..m
        };
        assert!(user
            .args()
            .join(" ")
            .contains("user,id=n0,hostfwd=tcp:127.0.0.1:4000-:80"));
        let disk = Disk {
            path: "/d/vm/data.raw".into(),
            bytes: 1 << 30,
            host_fs: "ext4".into(),
        };
        let with_disk = Machine {
            disk: Some(&disk),
            ..user
        };
        assert!(with_disk.args().join(" ").ends_with(
            "-drive file=/d/vm/data.raw,if=none,id=d0,format=raw,cache=none,aio=native -device virtio-blk-device,drive=d0"
        ));
    }
}
