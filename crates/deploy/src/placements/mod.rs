//! Placements: where the server runs and how load reaches it. One file per
//! placement behind [`Placement`], each named once in [`PLACEMENTS`]; the
//! mechanisms they are built on (plain processes, tare's namespace lab,
//! Docker, rootful and rootless Podman, QEMU) are [`Mechanism`]s, which say whether this machine has them and
//! what `tare cleanup` looks for (ARCHITECTURE.md, "Adding a placement").
//!
//! A deployment asks its placement for a [`Site`] (a network namespace, a
//! lab network, a container network), tells the target to listen where the
//! site says, and starts the server (and a target's companion) there; the
//! site then says where load reaches it. Each started process is a
//! [`Running`]: alive or not, its log, what the monitor follows and what it
//! adds to the fairness facts.

mod chroot;
mod container;
mod docker_bridge;
mod docker_host;
mod docker_publish;
mod lab;
mod lab_bridge;
mod lab_client;
mod lab_nat;
mod lab_veth;
mod native;
pub(crate) mod podman;
mod podman_bridge;
mod podman_host;
mod podman_orphans;
mod podman_pasta;
mod podman_publish;
mod podman_rootful;
pub(crate) mod podman_rootless;
mod podman_rootless_pasta;
mod podman_rootless_publish;
mod podman_rootless_slirp;
mod podman_site;
pub(crate) mod podman_user;
pub(crate) mod process;
mod vm;
mod vm_bridge;
mod vm_publish;
mod vm_user;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use tare_engine::Endpoint;

use crate::error::{DeployError, OnMechanism};
use crate::facts::Described;
use crate::options::Storage;
use crate::owner::CleanupReport;
use crate::spec::DeploySpec;
pub(crate) use crate::spec::PlacementKind;
use crate::targets::{Listen, Server};
use crate::teardown::Teardown;

/// Every placement, in the order doctor and reports list them. The first is
/// the reference every other placement is compared with: the server as a
/// plain process on the host.
pub(crate) static PLACEMENTS: &[&dyn Placement] = &[
    &native::NATIVE,
    &docker_host::DOCKER_HOST,
    &docker_bridge::DOCKER_BRIDGE,
    &docker_publish::DOCKER_PUBLISH,
    &podman_host::PODMAN_HOST,
    &podman_bridge::PODMAN_BRIDGE,
    &podman_publish::PODMAN_PUBLISH,
    &podman_rootless_publish::PODMAN_ROOTLESS_PUBLISH,
    &podman_rootless_slirp::PODMAN_ROOTLESS_SLIRP,
    &podman_rootless_pasta::PODMAN_ROOTLESS_PASTA,
    &lab_veth::LAB_VETH,
    &lab_bridge::LAB_BRIDGE,
    &lab_nat::LAB_NAT,
    &lab_client::LAB_CLIENT,
    &vm_bridge::VM_BRIDGE,
    &vm_publish::VM_PUBLISH,
    &vm_user::VM_USER,
];

/// Where a server runs and how load reaches it.
pub(crate) trait Placement: Sync {
    /// Its name in experiment files, records and on the command line.
    fn name(&self) -> &'static str;

    /// Other names accepted for it (none so far).
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }

    /// One line: the path load takes.
    fn about(&self) -> &'static str;

    /// What it is built on: availability and cleanup are the mechanism's.
    fn mechanism(&self) -> &'static dyn Mechanism;

    /// What it needs beyond its mechanism (a helper program), or why not.
    fn requires(&self) -> Result<(), String> {
        Ok(())
    }

    /// Whether it honours a deployment option (container options, netem).
    fn accepts(&self, _option: SpecOption) -> bool {
        false
    }

    /// Why it cannot put the server's content on `storage`, if it cannot
    /// (asked only of placements that accept `SpecOption::Storage`).
    fn refuses_storage(&self, _storage: Storage) -> Option<&'static str> {
        None
    }

    /// Makes the place the server will run in for `cx.spec`; what it
    /// creates is registered on `cx.teardown` as it goes.
    fn site(&self, cx: &Context<'_>) -> Result<Box<dyn Site>, DeployError>;
}

/// A placement as data on its mechanism: its name, its line, the options
/// it honours, what it needs beyond its mechanism and the storage it
/// refuses (`None`: nothing, none), and how its site is made (`site` is
/// given the placement's name). Each placement's file declares one.
pub(crate) struct Thin {
    pub(crate) name: &'static str,
    pub(crate) about: &'static str,
    pub(crate) mechanism: &'static dyn Mechanism,
    pub(crate) options: &'static [SpecOption],
    pub(crate) requires: Option<fn() -> Result<(), String>>,
    pub(crate) refuses_storage: Option<fn(Storage) -> Option<&'static str>>,
    pub(crate) site: MakeSite,
}

/// How a [`Thin`] placement makes its site, given its name.
pub(crate) type MakeSite = fn(&'static str, &Context<'_>) -> Result<Box<dyn Site>, DeployError>;

impl Placement for Thin {
    fn name(&self) -> &'static str {
        self.name
    }

    fn about(&self) -> &'static str {
        self.about
    }

    fn mechanism(&self) -> &'static dyn Mechanism {
        self.mechanism
    }

    fn requires(&self) -> Result<(), String> {
        self.requires.map_or(Ok(()), |f| f())
    }

    fn accepts(&self, option: SpecOption) -> bool {
        self.options.contains(&option)
    }

    fn refuses_storage(&self, storage: Storage) -> Option<&'static str> {
        self.refuses_storage.and_then(|f| f(storage))
    }

    fn site(&self, cx: &Context<'_>) -> Result<Box<dyn Site>, DeployError> {
        (self.site)(self.name, cx)
    }
}

/// A mechanism placements are built on.
pub(crate) trait Mechanism: Sync {
    /// Its name in `tare doctor` (`process`, `lab`, `docker`, `podman`).
    fn name(&self) -> &'static str;

    /// Whether this machine can run it: what it relies on, or why not.
    fn available(&self) -> Result<String, String>;

    /// Facts for `tare doctor` (tool versions, kernel features).
    fn facts(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// What on this machine would move results of its placements, each
    /// with the experiment key that controls it (`tare doctor`).
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }

    /// Removes what killed runs left behind with this mechanism, by tare's
    /// labels and name prefixes alone, and nothing whose owner still runs.
    fn cleanup(&self, report: &mut CleanupReport);
}

/// Deployment options only some placements honour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpecOption {
    /// A container's image, seccomp profile and cgroup limits.
    Container,
    /// Where the server's content lives (`ContainerOptions::storage`):
    /// containers' volumes and bind mounts, a guest's virtio disk.
    Storage,
    /// One-way delay injected on the path (netem or the delay line).
    Netem,
    /// A guest's vCPUs, memory and pinning.
    Vm,
    /// The user rootless Podman runs as.
    Rootless,
    /// Reached from other hosts at one of this host's own addresses
    /// (`DeploySpec::reach`) instead of loopback.
    Reach,
}

impl SpecOption {
    /// How people name the option in errors.
    pub fn describe(self) -> &'static str {
        match self {
            SpecOption::Container => "image, seccomp and container limits",
            SpecOption::Storage => "storage",
            SpecOption::Netem => "netem delay",
            SpecOption::Vm => "vm_cpus, vm_memory and vm_pin",
            SpecOption::Rootless => "rootless_user",
            SpecOption::Reach => "load from other hosts",
        }
    }
}

/// What a placement needs to make its site.
pub(crate) struct Context<'a> {
    pub spec: &'a DeploySpec,
    /// The deployment directory (config, content, logs, sockets).
    pub dir: &'a Path,
    pub teardown: &'a Arc<Teardown>,
    /// The owner label ("pid:starttime") of this process.
    pub owner: &'a str,
}

/// Which server of a deployment a process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// The target.
    Server,
    /// A target's companion on the server's loopback (nginx-proxy's backend).
    Companion,
}

impl Role {
    /// The name of its log file and container suffix.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Role::Server => "server",
            Role::Companion => "backend",
        }
    }
}

/// The place one deployment's servers run in.
pub(crate) trait Site {
    /// Where a server whose conventional port is `port` listens, as it sees it.
    fn listen(&mut self, port: u16) -> Result<SocketAddr, DeployError>;

    /// Where a companion whose conventional port is `port` listens on the
    /// server's loopback.
    fn companion(&mut self, port: u16) -> Result<SocketAddr, DeployError>;

    /// Starts `server` listening on `listen` (the target's), registering it
    /// for teardown. The server starts before its companion.
    fn start(
        &mut self,
        cx: &Context<'_>,
        server: &Server,
        listen: &Listen,
        role: Role,
    ) -> Result<Box<dyn Running>, DeployError>;

    /// Starts every server of a deployment (`servers`: the target's,
    /// then its companion's, each with where it listens), in that order,
    /// each registered for teardown; their `Running`s in the same order. By
    /// default each is started on its own with `start`; a placement that
    /// boots one place for all (a guest) starts them together.
    fn start_all(
        &mut self,
        cx: &Context<'_>,
        servers: &[(&Server, &Listen)],
    ) -> Result<Vec<Box<dyn Running>>, DeployError> {
        servers
            .iter()
            .enumerate()
            .map(|(i, (server, listen))| {
                let role = if i == 0 {
                    Role::Server
                } else {
                    Role::Companion
                };
                self.start(cx, server, listen, role)
            })
            .collect()
    }

    /// Where load reaches the server started on `listen`.
    fn endpoint(&self, listen: &Listen, server: &dyn Running) -> Result<Endpoint, DeployError>;

    /// The network namespace the load generator must run in, if not the host's.
    fn client_netns(&self) -> Option<&Path> {
        None
    }
}

/// What the resource monitor should follow for a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// These processes and their descendants.
    Pids(Vec<u32>),
    /// The cgroup of this process (a container: everything in it).
    CgroupOf(u32),
}

/// A started server process, however it runs.
pub(crate) trait Running: Send + Sync {
    /// Its pid on the host.
    fn pid(&self) -> i32;

    /// Its own network address, when it has one (a container on a bridge).
    fn address(&self) -> Option<std::net::IpAddr> {
        None
    }

    /// Ok while it runs; else why not.
    fn alive(&self) -> Result<(), String>;

    /// A last step once it answers, before its facts are measured (a
    /// rootless container pins what it forked while starting).
    fn settle(&self) {}

    /// Its last output lines, for an error message.
    fn log_tail(&self, lines: usize) -> String;

    /// What the resource monitor follows for it.
    fn scope(&self) -> Scope;

    /// Processes of its placement that are neither it nor the generator
    /// and get their own part in where the CPU goes, by name (a guest's
    /// vhost-net kernel threads).
    fn parts(&self) -> Vec<(String, Vec<u32>)> {
        Vec::new()
    }

    /// What its placement adds to the fairness facts.
    fn described(&self) -> Described;

    /// The processes its placement runs on its behalf outside it (a
    /// container's shim, its storage daemon, its port proxy), which tare
    /// pins to the server's CPUs (`helpers`).
    fn helpers(&self) -> Vec<crate::helpers::Helper> {
        Vec::new()
    }
}

// The handle a spec names (its type in spec.rs, an index into
// `PLACEMENTS`), its methods here by the registry.
crate::registry::handle!(index PlacementKind, Placement, PLACEMENTS, "placement");

impl PlacementKind {
    /// The reference placement: the first of the registry, the server as a
    /// plain process on the host.
    pub fn reference() -> PlacementKind {
        PlacementKind(0)
    }

    /// One line: the path load takes.
    pub fn about(self) -> &'static str {
        self.get().about()
    }

    /// Whether it honours `option`.
    pub fn accepts(self, option: SpecOption) -> bool {
        // Every container takes the storage factor (volumes, bind mounts
        // and tmpfs are what containers are made with); other placements
        // say so themselves (a guest's disk).
        self.get().accepts(option)
            || (option == SpecOption::Storage && self.get().accepts(SpecOption::Container))
    }

    /// Why it cannot put the server's content on `storage`, in one line.
    pub fn refuses_storage(self, storage: Storage) -> Option<&'static str> {
        if !self.accepts(SpecOption::Storage) {
            return None;
        }
        self.get().refuses_storage(storage)
    }

    /// The placements that honour `option`, comma-separated (for errors).
    pub fn accepting(option: SpecOption) -> String {
        PlacementKind::all()
            .filter(|p| p.accepts(option))
            .map(PlacementKind::name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The mechanism it is built on (`process`, `lab`, `docker`, `podman`): placements
    /// on one mechanism share its availability.
    pub fn mechanism(self) -> &'static str {
        self.get().mechanism().name()
    }

    /// What it needs beyond its mechanism, or why not (doctor).
    pub(crate) fn requires(self) -> Result<(), String> {
        self.get().requires()
    }

    /// Whether this machine can run it: what it relies on, or why not.
    pub fn available(self) -> Result<String, String> {
        let detail = self.get().mechanism().available()?;
        self.get().requires().map(|()| detail)
    }
}

/// Every distinct mechanism, in registry order.
pub(crate) fn mechanisms() -> Vec<&'static dyn Mechanism> {
    let mut out: Vec<&'static dyn Mechanism> = Vec::new();
    for p in PLACEMENTS {
        let m = p.mechanism();
        if !out.iter().any(|o| o.name() == m.name()) {
            out.push(m);
        }
    }
    out
}

impl std::fmt::Display for crate::error::OnMechanism {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let OnMechanism(name, on) = *self;
        f.write_str(&names_where(|p| (p.mechanism().name() == name) == on))
    }
}

fn names_where(keep: impl Fn(&dyn Placement) -> bool) -> String {
    PLACEMENTS
        .iter()
        .filter(|p| keep(**p))
        .map(|p| p.name())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placement_is_named_once() {
        let names: Vec<&str> = PlacementKind::all().map(PlacementKind::name).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        assert_eq!(PlacementKind::reference().mechanism(), "process");
    }

    #[test]
    fn options_are_honoured_by_some_placement_each() {
        for o in [
            SpecOption::Container,
            SpecOption::Storage,
            SpecOption::Netem,
            SpecOption::Vm,
            SpecOption::Rootless,
            SpecOption::Reach,
        ] {
            assert!(!PlacementKind::accepting(o).is_empty(), "{o:?}");
            // The reference is reachable from other hosts (the server
            // bound to a host address): the one option it has.
            let reference = PlacementKind::reference().accepts(o);
            assert_eq!(reference, o == SpecOption::Reach, "{o:?}");
        }
    }

    #[test]
    fn containers_and_guests_take_storage_and_guests_refuse_a_host_path() {
        for name in ["docker-host", "podman-bridge", "vm-bridge", "vm-user"] {
            let p = PlacementKind::named(name).unwrap();
            assert!(p.accepts(SpecOption::Storage), "{name}");
            assert_eq!(p.refuses_storage(Storage::Volume), None, "{name}");
        }
        let vm = PlacementKind::named("vm-publish").unwrap();
        assert!(!vm.accepts(SpecOption::Container));
        let why = vm.refuses_storage(Storage::HostPath).unwrap();
        assert!(why.contains("volume") && !why.contains('\n'), "{why}");
        assert_eq!(
            PlacementKind::reference().refuses_storage(Storage::HostPath),
            None
        );
    }
}
