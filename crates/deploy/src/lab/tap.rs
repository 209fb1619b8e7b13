//! A tap network for a virtual machine, built the way libvirt builds its
//! default network: a bridge on the host (virbr0's counterpart) holding the
//! gateway address, and a tap device on it that QEMU opens as the guest's
//! NIC. The guest takes the block's second address and sets it itself (its
//! init, from the kernel command line). With `nat`, a loopback front of its
//! own is DNATed to the guest with `LabKind::Nat`'s rules, as libvirt's and
//! most cloud port forwards do.
//!
//! Names follow `naming` (the bridge `tr<id>br`, the tap `tr<id>tp`, the
//! table `tare_<run>_<id>`), so `cleanup_all` finds them after a SIGKILL.

use std::net::Ipv4Addr;

use super::naming::{self, LinkRole, Names};
use super::ownership::{AllocationLock, OwnerLock};
use super::topology::{self, Made};
use super::{addressing, nat, LabError, ALLOCATION_PATIENCE};

/// The bridge and tap of one guest. Dropping it removes both (and the table).
#[derive(Debug)]
pub(crate) struct TapNet {
    tap: String,
    gateway: Ipv4Addr,
    guest: Ipv4Addr,
    front: Ipv4Addr,
    /// Everything made, oldest first; undone newest first.
    made: Vec<Made>,
    _owner: OwnerLock,
}

/// The prefix length of the guest's subnet: a /28 of the lab's /27 block,
/// as the lab's bridges use.
pub(crate) const TAP_PREFIX: u8 = 28;

impl TapNet {
    /// Builds the bridge and the tap for run `run_id`, with a loopback DNAT
    /// front when `nat`. On error nothing is left behind.
    pub(crate) fn create(run_id: &str, nat: bool) -> Result<TapNet, LabError> {
        naming::validate_run_id(run_id)?;
        super::available().map_err(LabError::Unavailable)?;
        let (id, owner, seed) = super::claim_id(run_id)?;
        let names = Names::new(run_id, &id)?;
        let mut made = Vec::new();
        let built = {
            let _alloc = AllocationLock::acquire(ALLOCATION_PATIENCE)?;
            addressing::in_use()
                .and_then(|taken| addressing::allocate(seed, &taken))
                .and_then(|block| build(&names, block, nat, &mut made))
        };
        match built {
            Ok((gateway, guest, front)) => Ok(TapNet {
                tap: names.link(LinkRole::Tap),
                gateway,
                guest,
                front,
                made,
                _owner: owner,
            }),
            Err(e) => {
                let _ = topology::undo_all(&mut made);
                Err(e)
            }
        }
    }

    /// The tap device QEMU opens (`-netdev tap,ifname=…`).
    pub(crate) fn tap(&self) -> &str {
        &self.tap
    }

    /// The host's address on the bridge: the guest's default route.
    pub(crate) fn gateway(&self) -> Ipv4Addr {
        self.gateway
    }

    /// The address the guest must take.
    pub(crate) fn guest(&self) -> Ipv4Addr {
        self.guest
    }

    /// Where load connects: the guest itself, or the DNAT front with `nat`
    /// (the same port).
    pub(crate) fn front(&self) -> Ipv4Addr {
        self.front
    }

    /// Removes everything this network made, reporting what could not be.
    pub(crate) fn teardown(mut self) -> Result<(), LabError> {
        topology::undo_all(&mut self.made)
    }
}

impl Drop for TapNet {
    fn drop(&mut self) {
        if let Err(e) = topology::undo_all(&mut self.made) {
            eprintln!("tare: {e} (`tare cleanup` removes the rest)");
        }
    }
}

fn build(
    names: &Names,
    block: addressing::Block,
    nat: bool,
    made: &mut Vec<Made>,
) -> Result<(Ipv4Addr, Ipv4Addr, Ipv4Addr), LabError> {
    let (gateway, guest) = (block.host(1), block.host(2));
    let bridge = names.link(LinkRole::Bridge);
    let tap = names.link(LinkRole::Tap);
    topology::add_bridge(&bridge, gateway, TAP_PREFIX, made)?;
    // A persistent tap, so QEMU opens it by name and its exit does not
    // remove it before teardown does.
    topology::ip(&["tuntap", "add", "dev", &tap, "mode", "tap"])?;
    made.push(Made::Link(tap.clone()));
    topology::ip(&["link", "set", &tap, "master", &bridge])?;
    topology::ip(&["link", "set", &tap, "up"])?;
    let mut front = guest;
    if nat {
        // As `LabKind::Nat`: loopback sources may only leave through a
        // device with route_localnet (ip-sysctl.rst).
        topology::set_conf(&bridge, "route_localnet")?;
        front = block.loopback_front();
        nat::load(&nat::loopback_dnat(&names.table(), front, guest, &bridge))?;
        made.push(Made::Table(names.table()));
    }
    Ok((gateway, guest, front))
}
