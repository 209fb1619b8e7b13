//! `deploy`: make the directory, start the target in its placement's site
//! (and the target's companion beside it), wait until it answers, measure its
//! facts. `Deployment`: what the runner holds while it measures; dropping it
//! removes everything.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tare_engine::Endpoint;

use crate::error::DeployError;
use crate::facts::Facts;
use crate::health;
use crate::liveness::Liveness;
use crate::measure;
use crate::options::Transport;
use crate::owner::{OWNER_FILE, PREFIX};
use crate::placements::{Context, PlacementKind, Role, Running, Scope, Site, SpecOption};
use crate::procfs;
use crate::spec::DeploySpec;
use crate::targets::TargetSpec;
use crate::targets::{self, Listen, Prepare, Server, TargetKind};
use crate::teardown::{Resource, Teardown};

/// How long a server may take to answer its first request. Postgres after
/// initdb and a container on fuse-overlayfs take a few seconds here.
const HEALTH_LIMIT: Duration = Duration::from_secs(60);

/// Which processes make up a deployment, for the resource monitor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Watch {
    pub server: Scope,
    /// A target's companion (nginx-proxy's backend), by role name, counted
    /// as its own part rather than in the rest of the machine.
    pub companions: Vec<(String, Vec<u32>)>,
}

/// A running target. Dropping it stops and removes everything it created.
pub struct Deployment {
    parts: Parts,
    teardown: Arc<Teardown>,
}

impl std::fmt::Debug for Deployment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deployment")
            .field("endpoint", &self.parts.endpoint)
            .field("dir", &self.parts.dir)
            .finish()
    }
}

impl Deployment {
    /// Where the load generator connects.
    pub fn endpoint(&self) -> &Endpoint {
        &self.parts.endpoint
    }

    /// The URL of the served resource (HTTP targets); for postgres, a
    /// `postgres://` URL naming the same endpoint.
    pub fn url(&self) -> String {
        self.parts.url.clone()
    }

    /// The namespace the generator's threads must enter, when the placement
    /// puts the client on another "machine".
    pub fn client_netns(&self) -> Option<&Path> {
        self.parts.client_netns.as_deref()
    }

    pub fn facts(&self) -> &Facts {
        &self.parts.facts
    }

    /// The processes the resource monitor should follow.
    pub fn watch(&self) -> &Watch {
        &self.parts.watch
    }

    /// The deployment's directory (config, content, logs).
    pub fn dir(&self) -> &Path {
        &self.parts.dir
    }

    /// `Ok` while the server (and its companion) still runs, is not
    /// stopped, and answers its readiness probe; else why not, one line:
    /// `server exited with signal 9`, `server stopped (SIGSTOP)`. Asked
    /// before and after each trial (docs/experiments.md, "Failed trials").
    pub fn check(&self) -> Result<(), String> {
        self.parts.liveness.check()
    }

    /// Stops and removes everything, reporting the first failure.
    pub fn stop(self) -> Result<(), DeployError> {
        self.teardown.run()
    }
}

impl Drop for Deployment {
    fn drop(&mut self) {
        let _ = self.teardown.run();
    }
}

/// Starts the target in its placement and waits until it answers a real request.
pub fn deploy(spec: &DeploySpec) -> Result<Deployment, DeployError> {
    validate(spec)?;
    let teardown = Teardown::register();
    match start(spec, &teardown) {
        Ok(parts) => Ok(Deployment { parts, teardown }),
        Err(e) => {
            let _ = teardown.run();
            Err(e)
        }
    }
}

/// The spec's run id, options and target checked before anything is made.
fn validate(spec: &DeploySpec) -> Result<(), DeployError> {
    let ok = !spec.run_id.is_empty()
        && spec.run_id.len() <= 32
        && spec
            .run_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !ok {
        return Err(DeployError::Invalid(format!(
            "run id {:?}: 1-32 characters of [A-Za-z0-9_-] (it names containers, namespaces and files)",
            spec.run_id
        )));
    }
    check_options(spec)?;
    check_target(spec)
}

/// Each deployment option the spec sets is one its placement honours,
/// within its bounds.
fn check_options(spec: &DeploySpec) -> Result<(), DeployError> {
    let placement = spec.placement;
    if spec.netem.is_some() && !placement.accepts(SpecOption::Netem) {
        return Err(DeployError::Invalid(format!(
            "--netem applies to {} only, not {placement}",
            PlacementKind::accepting(SpecOption::Netem)
        )));
    }
    if let Some(list) = &spec.server_cpus {
        list.parse::<tare_engine::cpu::CpuList>()
            .map_err(|e| DeployError::Invalid(format!("server CPUs: {e}")))?;
    }
    if let Some(list) = &spec.helper_cpus {
        list.parse::<tare_engine::cpu::CpuList>()
            .map_err(|e| DeployError::Invalid(format!("helper CPUs: {e}")))?;
    }
    if let Some(c) = spec.container.cpus {
        if !(c.is_finite() && c > 0.0) {
            return Err(DeployError::Invalid(format!(
                "container CPU limit {c}: must be > 0"
            )));
        }
    }
    let others = crate::options::ContainerOptions {
        storage: Default::default(),
        ..spec.container.clone()
    };
    let container_opts_set = others != Default::default() || spec.image.is_some();
    if container_opts_set && !placement.accepts(SpecOption::Container) {
        return Err(DeployError::Invalid(format!(
            "{} apply to {} only, not {placement}",
            SpecOption::Container.describe(),
            PlacementKind::accepting(SpecOption::Container)
        )));
    }
    if spec.container.storage != Default::default() && !placement.accepts(SpecOption::Storage) {
        return Err(DeployError::Invalid(format!(
            "storage applies to {} only, not {placement}",
            PlacementKind::accepting(SpecOption::Storage)
        )));
    }
    if let Some(why) = placement.refuses_storage(spec.container.storage) {
        return Err(DeployError::Invalid(format!("{placement}: {why}")));
    }
    if spec.vm != Default::default() && !placement.accepts(SpecOption::Vm) {
        return Err(DeployError::Invalid(format!(
            "{} apply to {} only, not {placement}",
            SpecOption::Vm.describe(),
            PlacementKind::accepting(SpecOption::Vm)
        )));
    }
    if spec.rootless_user.is_some() && !placement.accepts(SpecOption::Rootless) {
        return Err(DeployError::Invalid(format!(
            "{} applies to {} only, not {placement}",
            SpecOption::Rootless.describe(),
            PlacementKind::accepting(SpecOption::Rootless)
        )));
    }
    if spec.reach.is_some() && !placement.accepts(SpecOption::Reach) {
        return Err(DeployError::Invalid(format!(
            "{placement} cannot be reached from another host (placements that can: {})",
            PlacementKind::accepting(SpecOption::Reach)
        )));
    }
    if spec.vm.cpus == Some(0) || spec.vm.memory_mib.is_some_and(|m| m < 64) {
        return Err(DeployError::Invalid(
            "vm_cpus must be at least 1 and vm_memory at least 64 MiB".into(),
        ));
    }
    Ok(())
}

/// The target's own settings: `access_log`, its config variant, a
/// service's command line, an image's transport.
fn check_target(spec: &DeploySpec) -> Result<(), DeployError> {
    let target = &spec.target.target;
    if spec.target.access_log.is_some() && !target.access_log {
        return Err(DeployError::Invalid(format!(
            "access_log does not apply to {} (it applies to: {})",
            target.name(),
            TargetKind::all()
                .filter(|t| t.target().access_log)
                .map(TargetKind::name)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    target
        .check_variant(&spec.target.variant)
        .map_err(DeployError::Invalid)?;
    if let Some(s) = &target.service {
        s.check(spec.transport).map_err(DeployError::Invalid)?;
    }
    if target.oci.is_some() {
        image_runs_in(spec.transport).map_err(DeployError::Invalid)?;
    }
    Ok(())
}

/// Whether a user's image can run over `transport`. Every placement runs
/// one: containers (Docker's, Podman's rootful and rootless) run the image,
/// a plain process (native, lab-*) chroots into its exported files, a
/// guest boots with them. It is reached over TCP at the port its config
/// exposes.
pub fn image_runs_in(transport: Transport) -> Result<(), String> {
    if transport == Transport::Unix {
        return Err(
            "kind = \"image\" is reached over TCP: an image cannot be told a socket".into(),
        );
    }
    Ok(())
}

/// What a started deployment is, but for its teardown.
struct Parts {
    endpoint: Endpoint,
    url: String,
    client_netns: Option<PathBuf>,
    facts: Facts,
    watch: Watch,
    dir: PathBuf,
    liveness: Liveness,
}

/// How many CPUs a pinned server may use, when that is fewer than the
/// machine's online CPUs and the server runs where it would count those (a
/// process or a container shares the host's `/sys`; a guest counts its own
/// vCPUs, sized from the same list).
fn pinned_cpus(spec: &DeploySpec) -> Option<usize> {
    if spec.placement.accepts(SpecOption::Vm) {
        return None;
    }
    let n = tare_engine::cpu::cpu_list_len(spec.server_cpus.as_deref()?);
    // SAFETY: sysconf reads a constant of the running system.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    (n > 0 && (n as i64) < online as i64).then_some(n)
}

/// How many CPUs the server may use where it runs: the guest's vCPUs,
/// the CPUs it is pinned to, else the machine's (a service's `{cpus}`).
fn usable_cpus(spec: &DeploySpec) -> usize {
    if spec.placement.accepts(SpecOption::Vm) {
        if let Some(n) = spec.vm.cpus {
            return n as usize;
        }
    }
    let pinned = spec
        .server_cpus
        .as_deref()
        .map(tare_engine::cpu::cpu_list_len)
        .filter(|n| *n > 0);
    pinned.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// A server's last output lines as one line (an error is one line).
fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" | ")
}

fn make_dir(run_id: &str, teardown: &Teardown) -> Result<PathBuf, DeployError> {
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("{PREFIX}{run_id}-{}-{n}", std::process::id()));
    std::fs::create_dir(&dir)
        .map_err(|e| DeployError::io(format!("creating {}", dir.display()), e))?;
    teardown.push(Resource::Dir(dir.clone()));
    use std::os::unix::fs::PermissionsExt;
    // Traversable by the postgres user and by container users.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| DeployError::io("chmod deployment dir", e))?;
    std::fs::write(dir.join(OWNER_FILE), procfs::own_identity())
        .map_err(|e| DeployError::io("writing the owner file", e))?;
    std::fs::create_dir_all(dir.join("sock"))
        .map_err(|e| DeployError::io("creating the socket dir", e))?;
    Ok(dir)
}

/// A server a deployment starts: its target's first, then the target's
/// companion (nginx-proxy's backend), each prepared before any starts.
struct Member {
    role: Role,
    server: Server,
    /// Where it listens (a companion: where the target reaches it).
    listen: Listen,
}

/// A started member of the deployment.
struct Up {
    member: Member,
    running: Box<dyn Running>,
}

/// Every step of a deployment, in order: its directory, its site, where
/// everything listens and its configs, the servers started, the target
/// answering, its facts.
fn start(spec: &DeploySpec, teardown: &Arc<Teardown>) -> Result<Parts, DeployError> {
    let dir = make_dir(&spec.run_id, teardown)?;
    let owner = procfs::own_identity();
    // A user's image: built and read first, its port and entrypoint
    // decide where it listens and what runs.
    let resolved;
    let spec = match &spec.target.target.oci {
        Some(_) => {
            let mut s = spec.clone();
            s.target.target =
                targets::image::resolve(&s.target.target, &dir, teardown, &owner, &spec.run_id)?;
            resolved = s;
            &resolved
        }
        None => spec,
    };
    let cx = Context {
        spec,
        dir: &dir,
        teardown,
        owner: &owner,
    };
    let mut site = spec.placement.get().site(&cx)?;
    let members = prepare(spec, &dir, site.as_mut())?;
    let servers: Vec<(&Server, &Listen)> = members.iter().map(|m| (&m.server, &m.listen)).collect();
    let running = site.start_all(&cx, &servers)?;
    let mut ups: Vec<Up> = members
        .into_iter()
        .zip(running)
        .map(|(member, running)| Up { member, running })
        .collect();
    let endpoint = site.endpoint(&ups[0].member.listen, ups[0].running.as_ref())?;
    wait_answering(spec, site.client_netns(), &endpoint, &ups)?;
    for u in &ups {
        u.running.settle();
    }
    let url = ups[0].member.server.url(&endpoint);
    let facts = measure_all(spec, &endpoint, &ups);
    let watch = watch(&ups);
    let target = ups.remove(0);
    let liveness = Liveness {
        running: target.running,
        companions: ups.into_iter().map(|u| u.running).collect(),
        server: target.member.server,
        endpoint: endpoint.clone(),
        netns: site.client_netns().map(Path::to_path_buf),
    };
    Ok(Parts {
        endpoint,
        url,
        client_netns: site.client_netns().map(Path::to_path_buf),
        facts,
        watch,
        dir,
        liveness,
    })
}

/// Where the server (and its companion) listens in `site`, and each one's
/// config written into `dir` and its command line: all known before
/// anything starts, as the server's config names its companion's address
/// and a guest carries both in the archive it boots from. The target's
/// server first.
fn prepare(spec: &DeploySpec, dir: &Path, site: &mut dyn Site) -> Result<Vec<Member>, DeployError> {
    let target = &spec.target.target;
    let listen = match spec.transport {
        Transport::Unix => Listen::Unix(dir.join("sock").join(&target.socket)),
        // An image listens where its config says, on the host's network too.
        Transport::Tcp if target.oci.is_some() => {
            let at = site.listen(target.port)?;
            Listen::Tcp(SocketAddr::new(at.ip(), target.port))
        }
        Transport::Tcp => Listen::Tcp(site.listen(target.port)?),
    };
    let companion_spec = target.companion_spec();
    let companion_addr = match &companion_spec {
        Some(c) => Some(site.companion(c.target.port)?),
        None => None,
    };
    let target_spec = TargetSpec {
        cpus: pinned_cpus(spec),
        ..spec.target.clone()
    };
    let cpus = usable_cpus(spec);
    let server = target.kind.get().prepare(&Prepare {
        spec: &target_spec,
        binary: targets::binary(target)?,
        dir,
        listen: &listen,
        companion: companion_addr,
        cpus,
    })?;
    let mut members = vec![Member {
        role: Role::Server,
        server,
        listen,
    }];
    if let (Some(c), Some(addr)) = (companion_spec, companion_addr) {
        let listen = Listen::Tcp(addr);
        let server = c.target.kind.get().prepare(&Prepare {
            spec: &c,
            binary: targets::binary(&c.target)?,
            dir,
            listen: &listen,
            companion: None,
            cpus,
        })?;
        members.push(Member {
            role: Role::Companion,
            server,
            listen,
        });
    }
    Ok(members)
}

/// Probes the target (the first of `ups`, reached at `endpoint`) from
/// `netns` until it answers, while every server of the deployment stays
/// alive; else the error says what it last said and the servers' logs.
fn wait_answering(
    spec: &DeploySpec,
    netns: Option<&Path>,
    endpoint: &Endpoint,
    ups: &[Up],
) -> Result<(), DeployError> {
    let target = &spec.target.target;
    let (first, others) = ups.split_first().expect("a deployment starts its target");
    let (server, running) = (&first.member.server, first.running.as_ref());
    let alive = || -> Result<(), String> {
        for u in others {
            u.running
                .alive()
                .map_err(|e| format!("the {}: {e}", u.member.role.name()))?;
        }
        running.alive()
    };
    let probe = |timeout| server.probe(endpoint, timeout);
    let Err((mut last, waited)) = health::wait_healthy(
        &probe,
        netns,
        target.ready_within.unwrap_or(HEALTH_LIMIT),
        alive,
    ) else {
        return Ok(());
    };
    let mut log = one_line(&running.log_tail(20));
    for u in others {
        let tail = one_line(&u.running.log_tail(10));
        if !tail.is_empty() {
            log = format!("{log}; {}: {tail}", u.member.role.name());
        }
    }
    let told = match &first.member.listen {
        Listen::Tcp(a) => Some(a.port()),
        Listen::Unix(_) => None,
    };
    let elsewhere = told
        .and_then(|port| crate::helpers::listening_elsewhere(running.pid(), &server.binary, port));
    if let Some(elsewhere) = elsewhere {
        last = format!("{last} ({elsewhere})");
    }
    Err(DeployError::Unhealthy {
        target: target.name().to_string(),
        endpoint: endpoint.to_string(),
        waited_s: waited,
        last_error: last,
        log: if log.is_empty() {
            String::new()
        } else {
            format!("; server log: {log}")
        },
    })
}

/// The facts of the answering target (the first of `ups`) and its
/// companion, their helpers pinned to `[cpus] helpers` first.
fn measure_all(spec: &DeploySpec, endpoint: &Endpoint, ups: &[Up]) -> Facts {
    let (first, others) = ups.split_first().expect("a deployment starts its target");
    let running = first.running.as_ref();
    let mut facts = measure::facts(
        spec,
        &first.member.server,
        endpoint,
        running.pid(),
        running.described(),
    );
    // Once the server answers, its helpers all exist (a published port's
    // proxy, the storage daemon): pinned now, they stay pinned, as threads
    // they start inherit their CPUs.
    if let Some(cpus) = spec.helper_cpus.as_deref().and_then(|l| l.parse().ok()) {
        let helpers: Vec<_> = ups.iter().flat_map(|u| u.running.helpers()).collect();
        facts.helpers = crate::helpers::pin(&helpers, &cpus);
    }
    facts.backend = others.first().map(|c| {
        measure::backend(
            &c.member.listen,
            &c.member.server,
            c.running.pid(),
            c.running.described(),
        )
    });
    facts
}

/// What the resource monitor follows: the target (the first of `ups`), a
/// companion with a host process of its own as its own part, and the
/// placement's parts.
fn watch(ups: &[Up]) -> Watch {
    let (first, others) = ups.split_first().expect("a deployment starts its target");
    Watch {
        server: first.running.scope(),
        // A companion with no host process of its own (in the server's
        // guest) is counted where its CPU goes: in the server's.
        companions: others
            .iter()
            .filter_map(|c| match c.running.scope() {
                Scope::Pids(p) if p.is_empty() => None,
                _ => Some((
                    c.member.role.name().to_string(),
                    vec![c.running.pid() as u32],
                )),
            })
            .chain(first.running.parts())
            .collect(),
    }
}
