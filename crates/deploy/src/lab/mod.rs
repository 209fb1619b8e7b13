//! Lab placements: the mechanisms between a load generator and a containerised
//! server, built directly with Linux network namespaces, veth pairs, a bridge
//! and nftables NAT, one mechanism at a time, with no Docker.
//!
//! - [`LabKind::Veth`]: the server in its own namespace, joined to the host by
//!   one veth pair (a /30); the generator connects to the server's address.
//! - [`LabKind::Bridge`]: the server's veth is a port of a bridge tare makes,
//!   as a container's is a port of docker0; the host talks through the bridge.
//! - [`LabKind::Nat`]: as `Bridge`, reached on a loopback address through
//!   nftables DNAT, exactly as Docker publishes a port with
//!   `--userland-proxy=false` (see `nat`).
//! - [`LabKind::Client`]: the generator in its own namespace too, a client
//!   machine on the LAN: it reaches the published port at the host's bridge
//!   address, through PREROUTING DNAT and forwarding.
//!
//! With `netem`, every packet the server sends is delayed by the given time
//! as it leaves the server's end of its veth: one direction only, so each
//! request/response round trip, and the TCP handshake, takes exactly that
//! much longer. That is the ground truth a latency measurement should
//! recover. tc netem does it where the kernel has it; elsewhere a userspace
//! delay line does the same job (see `delay`, [`LabNet::delay_mechanism`]).
//!
//! Everything made is named after the run and a lab id (`naming`), removed by
//! [`LabNet::teardown`] or `Drop`, and by [`cleanup_all`] after a crash.

mod addressing;
mod cleanup;
pub(crate) mod command;
mod delay;
mod error;
mod naming;
mod nat;
mod ownership;
mod tap;
mod topology;

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

pub use cleanup::cleanup_all;
pub use delay::DelayMechanism;
pub use error::LabError;
pub(crate) use tap::{TapNet, TAP_PREFIX};

use ownership::{AllocationLock, OwnerLock};
use topology::Made;

/// Which mechanism sits between the generator and the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LabKind {
    Veth,
    Bridge,
    Nat,
    Client,
}

impl LabKind {
    pub const ALL: [LabKind; 4] = [
        LabKind::Veth,
        LabKind::Bridge,
        LabKind::Nat,
        LabKind::Client,
    ];
}

/// One lab network. Dropping it tears down everything it made.
#[derive(Debug)]
pub struct LabNet {
    kind: LabKind,
    id: String,
    server_netns: PathBuf,
    client_netns: Option<PathBuf>,
    server_addr: IpAddr,
    front: IpAddr,
    netem: Option<Duration>,
    delay: Option<DelayMechanism>,
    /// Everything made, oldest first; undone newest first.
    made: Vec<Made>,
    /// Keeps `cleanup_all` in other processes off this network while it lives.
    _owner: OwnerLock,
}

/// How long to wait for another tare process that is allocating a subnet.
pub(crate) const ALLOCATION_PATIENCE: Duration = Duration::from_secs(10);

impl LabNet {
    /// Builds a lab network of `kind` for the run `run_id`, with `netem` delay
    /// on the server's veth if given. Call it from a thread in the host's
    /// network namespace. On error nothing is left behind.
    pub fn create(
        kind: LabKind,
        run_id: &str,
        netem: Option<Duration>,
    ) -> Result<LabNet, LabError> {
        naming::validate_run_id(run_id)?;
        available().map_err(LabError::Unavailable)?;
        let (id, owner, seed) = claim_id(run_id)?;
        let names = naming::Names::new(run_id, &id)?;
        let mut made = Vec::new();
        let built = {
            let _alloc = AllocationLock::acquire(ALLOCATION_PATIENCE)?;
            addressing::in_use()
                .and_then(|taken| addressing::allocate(seed, &taken))
                .and_then(|block| topology::build(kind, &names, block, netem, &mut made))
        };
        match built {
            Ok(layout) => Ok(LabNet {
                kind,
                server_netns: netns_path(&names.server_netns()),
                client_netns: layout.client_netns.as_deref().map(netns_path),
                server_addr: IpAddr::V4(layout.server),
                front: IpAddr::V4(layout.front),
                netem,
                delay: layout.delay,
                id,
                made,
                _owner: owner,
            }),
            Err(e) => {
                // The build error is the one worth reporting; a failed undo
                // leaves names that cleanup_all finds.
                let _ = topology::undo_all(&mut made);
                Err(e)
            }
        }
    }

    /// `/run/netns/NAME`: spawn (or `setns` into) the server here.
    pub fn server_netns(&self) -> &Path {
        &self.server_netns
    }

    /// The address inside the server namespace the server should listen on.
    pub fn server_addr(&self) -> IpAddr {
        self.server_addr
    }

    /// Where the generator connects to reach a server listening on `port`:
    /// the server itself for `Veth` and `Bridge`, the DNAT front (same port)
    /// for `Nat` and `Client`.
    pub fn connect_addr(&self, port: u16) -> SocketAddr {
        SocketAddr::new(self.front, port)
    }

    /// The generator's namespace (`Client` only).
    pub fn client_netns(&self) -> Option<&Path> {
        self.client_netns.as_deref()
    }

    pub fn kind(&self) -> LabKind {
        self.kind
    }

    /// The delay netem adds to every round trip, if any.
    pub fn netem(&self) -> Option<Duration> {
        self.netem
    }

    /// How the delay was injected: netem, or the delay line where the
    /// kernel has no netem (see `delay`).
    pub fn delay_mechanism(&self) -> Option<DelayMechanism> {
        self.delay
    }

    /// The 8-hex-digit id in every name this network made.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Removes everything this network made, reporting what could not be.
    pub fn teardown(mut self) -> Result<(), LabError> {
        topology::undo_all(&mut self.made)
    }
}

impl Drop for LabNet {
    fn drop(&mut self) {
        if let Err(e) = topology::undo_all(&mut self.made) {
            eprintln!("tare: {e} (`tare cleanup` removes the rest)");
        }
    }
}

/// Whether this machine can build lab networks; the reason when not.
pub fn available() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err("needs root (network namespaces, links and nftables)".into());
    }
    let missing: Vec<&str> = ["ip", "nft", "tc"]
        .into_iter()
        .filter(|tool| command::locate(tool).is_none())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "missing {} (Debian: apt-get install iproute2 nftables)",
            missing.join(", ")
        ));
    }
    if !Path::new("/proc/self/ns/net").exists() {
        return Err("the kernel has no network namespaces (CONFIG_NET_NS)".into());
    }
    Ok(())
}

/// Whether `--netem` can work here: `Ok` if lab networks can inject delay,
/// with netem or, where the kernel lacks it, the delay line. Kept for callers
/// that only need yes or no; [`delay_available`] says which mechanism.
pub fn netem_available() -> Result<(), String> {
    delay_available().map(drop)
}

/// How a lab network on this machine would inject delay, or why it cannot.
/// Reads the kernel's build configuration (/proc/config.gz) where it is
/// exposed; elsewhere it assumes netem, and `LabNet::create` finds out.
pub fn delay_available() -> Result<DelayMechanism, String> {
    let Ok(out) = std::process::Command::new("zcat")
        .arg("/proc/config.gz")
        .output()
    else {
        return Ok(DelayMechanism::Netem);
    };
    let config = String::from_utf8_lossy(&out.stdout);
    let has = |option: &str| {
        config
            .lines()
            .any(|l| l == format!("{option}=y") || l == format!("{option}=m"))
    };
    if config.is_empty() || has("CONFIG_NET_SCH_NETEM") {
        return Ok(DelayMechanism::Netem);
    }
    let missing: Vec<&str> = [
        "CONFIG_TUN",
        "CONFIG_NET_SCH_INGRESS",
        "CONFIG_NET_CLS_U32",
        "CONFIG_NET_ACT_MIRRED",
    ]
    .into_iter()
    .filter(|option| !has(option))
    .collect();
    if missing.is_empty() && Path::new("/dev/net/tun").exists() {
        Ok(DelayMechanism::DelayLine)
    } else {
        Err(format!(
            "the kernel has no netem (CONFIG_NET_SCH_NETEM) and the delay line needs {} and /dev/net/tun",
            missing.join(", ")
        ))
    }
}

fn netns_path(name: &str) -> PathBuf {
    Path::new("/run/netns").join(name)
}

/// Picks a lab id no live process uses and no leftover carries, and a seed
/// for the subnet search, both spread by pid and a per-process counter.
pub(crate) fn claim_id(run_id: &str) -> Result<(String, OwnerLock, u32), LabError> {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    for _ in 0..64 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let mixed = mix(std::process::id(), n, nanos);
        let id = format!("{:08x}", mixed as u32);
        let names = naming::Names::new(run_id, &id)?;
        let leftover = Path::new("/sys/class/net")
            .join(names.link(naming::LinkRole::ServerHost))
            .exists()
            || Path::new("/sys/class/net")
                .join(names.link(naming::LinkRole::Bridge))
                .exists()
            || netns_path(&names.server_netns()).exists();
        if leftover {
            continue;
        }
        let claimed = OwnerLock::claim(&id).map_err(|source| LabError::Io {
            what: "binding the lab owner lock (abstract unix socket)".into(),
            source,
        })?;
        if let Some(owner) = claimed {
            // One process's networks take neighbouring blocks from a start
            // that depends on its pid, so processes start far apart.
            let seed = (mix(std::process::id(), 0, 0) as u32).wrapping_add(n);
            return Ok((id, owner, seed));
        }
    }
    Err(LabError::Io {
        what: "choosing a lab id".into(),
        source: std::io::Error::from(std::io::ErrorKind::AddrInUse),
    })
}

/// splitmix64's first output from the inputs as seed (Steele et al., "Fast
/// splittable pseudorandom number generators", OOPSLA 2014): nearby inputs
/// give unrelated outputs.
fn mix(pid: u32, counter: u32, nanos: u32) -> u64 {
    let seed = (u64::from(pid) << 32 | u64::from(counter)) ^ u64::from(nanos).rotate_left(17);
    tare_engine::splitmix::SplitMix64::new(seed).next_u64()
}
