//! [`RealExecutor`]: cells deployed with `tare-deploy`, loaded by the
//! experiment's engine (`crate::engines`), compared with
//! `tare_deploy::fairness`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use tare_deploy::{
    ContainerOptions, DeploySpec, Deployment, Facts, SpecOption, TargetSpec, Variant, VmOptions,
};
use tare_record::LoadResult;

use crate::engines::{self, ExperimentEngine, Offer};
use crate::executor::{ExecError, Executor, Finding, RunningCell};
use crate::experiment::{Cell, CpuPlan, Experiment, LoadSettings};
use crate::observer::LiveProgress;
use crate::remote::Fleet;
use tare_engine::cpu::CpuList;
use tare_remote::RemoteTarget;

pub struct RealExecutor {
    /// Names every resource of this run (1-32 of `[A-Za-z0-9_-]`, tare-deploy's rule).
    run_id: String,
    exp: Experiment,
    /// Where user config variants are (`<run dir>/configs/NAME`).
    configs_dir: PathBuf,
    /// Ctrl-C: ends a load early (the trial is then discarded and re-run on resume).
    interrupt: Arc<AtomicBool>,
    /// Whether this machine can deploy a spec, asked once per placement
    /// mechanism and option set (Docker's answer is a round trip).
    available: HashMap<String, Result<(), String>>,
    /// Which CPUs the server and the generator get (`[cpus]`, resolved here).
    cpus: CpuPlan,
    /// The run directory (`hosts.json` is written there).
    run_dir: PathBuf,
    /// The remote hosts, once `prepare` installed tare on them.
    fleet: Option<Arc<Fleet>>,
    /// A user's image, exported and hashed once for all the run's cells
    /// (removed when the run ends).
    _exports: tare_deploy::ExportCache,
}

impl RealExecutor {
    pub fn new(exp: &Experiment, run_dir: &std::path::Path, interrupt: Arc<AtomicBool>) -> Self {
        let run_id = deploy_id(run_dir);
        RealExecutor {
            run_id: run_id.clone(),
            exp: exp.clone(),
            configs_dir: run_dir.join("configs"),
            interrupt,
            available: HashMap::new(),
            cpus: exp.cpus.here(),
            run_dir: run_dir.to_path_buf(),
            fleet: None,
            _exports: tare_deploy::ExportCache::new(&run_id),
        }
    }

    /// The deployment spec of `cell`, from its typed levels.
    pub fn spec(&self, cell: &Cell) -> Result<DeploySpec, ExecError> {
        let t = &self.exp.target;
        let s = &cell.setup;
        let mut target = TargetSpec::new(t.server.clone());
        // A declared file is the user's; any other name is the target's own
        // (both checked when the file was read).
        target.variant = match t.configs.iter().find(|c| c.name == s.config) {
            Some(c) => Variant::File {
                name: c.name.clone(),
                path: self.configs_dir.join(&c.name),
            },
            None => Variant::Named(s.config.clone()),
        };
        target.access_log = s.access_log;
        let placement = s.placement;
        let mut spec = DeploySpec::new(self.run_id.clone(), target, placement);
        spec.server_cpus = self.cpus.server.as_ref().map(ToString::to_string);
        spec.helper_cpus = self.cpus.helpers.as_ref().map(ToString::to_string);
        spec.transport = s.transport;
        spec.reach = self.fleet.as_ref().and_then(|f| f.reach);
        spec.netem = s.delay;
        if placement.accepts(SpecOption::Vm) {
            spec.vm = VmOptions {
                cpus: s.vm_cpus,
                memory_mib: Some((s.vm_memory >> 20) as u32),
                pin: s.vm_pin,
            };
        }
        if placement.accepts(SpecOption::Rootless) {
            spec.rootless_user = t.rootless_user.clone();
        }
        if placement.accepts(SpecOption::Container) {
            spec.image = t.image.clone();
            spec.container = ContainerOptions {
                seccomp_unconfined: s.seccomp_unconfined,
                cpus: s.cpus,
                memory: s.memory,
                ..ContainerOptions::default()
            };
        }
        if placement.accepts(SpecOption::Storage) {
            spec.container.storage = s.storage;
        }
        Ok(spec)
    }

    /// Whether this machine can run `spec`, asked once per mechanism and
    /// option: placements on one mechanism share the answer.
    fn deployable(&mut self, spec: &DeploySpec) -> Result<(), String> {
        let key = format!(
            "{}/{}/{}",
            spec.placement.mechanism(),
            spec.netem.is_some(),
            spec.target.target.name()
        );
        self.available
            .entry(key)
            .or_insert_with(|| tare_deploy::check(spec))
            .clone()
    }
}

/// tare-deploy's run id from the run directory's name: its last part (the
/// short random id) keeps names short and unique per run.
fn deploy_id(run_dir: &std::path::Path) -> String {
    let name = run_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let last = name.rsplit('-').next().unwrap_or("");
    let clean: String = last
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(24)
        .collect();
    if clean.is_empty() {
        format!("r{:06x}", crate::plan::fresh_seed() & 0xff_ffff)
    } else {
        format!("r{clean}")
    }
}

impl Drop for RealExecutor {
    /// Nothing of this run stays on its hosts.
    fn drop(&mut self) {
        if let Some(f) = self.fleet.take() {
            for e in f.close() {
                eprintln!("tare: cleaning up: {e}");
            }
        }
    }
}

impl Executor for RealExecutor {
    fn prepare(&mut self) -> Result<serde_json::Value, ExecError> {
        if !self.exp.hosts.any() {
            return Ok(serde_json::Value::Null);
        }
        let specs: Vec<DeploySpec> = self
            .exp
            .cells
            .iter()
            .map(|c| self.spec(c))
            .collect::<Result<_, _>>()?;
        let fleet = Fleet::connect(&self.exp.hosts, &self.run_id, &self.run_dir, &specs)?;
        let facts = serde_json::to_value(fleet.facts()).map_err(ExecError::new)?;
        self.fleet = Some(Arc::new(fleet));
        Ok(facts)
    }

    fn can_run(&mut self, cell: &Cell) -> Result<(), String> {
        let spec = self.spec(cell).map_err(|e| e.to_string())?;
        if spec.reach.is_some() && !spec.placement.accepts(SpecOption::Reach) {
            return Err(format!(
                "{} is not reachable from another host (placements that are: {})",
                spec.placement,
                tare_deploy::PlacementKind::accepting(SpecOption::Reach)
            ));
        }
        if let Some(host) = &self.exp.hosts.target {
            // The target host answered for every cell's spec in `prepare`.
            let i = self.exp.cells.iter().position(|c| c.id == cell.id);
            let answer = i.and_then(|i| self.fleet.as_ref()?.target_check(i));
            return answer
                .unwrap_or_else(|| Err(format!("host {host} was not prepared")))
                .map_err(|e| format!("on host {host}: {e}"));
        }
        self.deployable(&spec)
    }

    fn deploy(&mut self, cell: &Cell) -> Result<Box<dyn RunningCell>, ExecError> {
        let spec = self.spec(cell)?;
        let target_host = self.exp.hosts.target.clone();
        let deployment = match (&target_host, &self.fleet) {
            (Some(name), Some(fleet)) => {
                let inst = fleet.installed(name)?;
                Placed::Remote(Box::new(
                    RemoteTarget::deploy(inst, &spec).map_err(ExecError::new)?,
                ))
            }
            (Some(_), None) => return Err(ExecError::new("the target host was not prepared")),
            (None, _) => Placed::Local(Box::new(
                tare_deploy::deploy(&spec).map_err(ExecError::new)?,
            )),
        };
        let remote = self.fleet.clone();
        if let Some(f) = &remote {
            f.check_endpoint(target_host.as_deref(), deployment.endpoint())?;
        }
        // A remote target is monitored there; its record comes back on the
        // host's clock, which is this far ahead of ours.
        let target_clock = match (&target_host, &remote) {
            (Some(name), Some(f)) => Some(TargetClock {
                offset_s: f.clock(name)?.offset_s,
                generators_there: f.generates_on(name),
            }),
            _ => None,
        };
        Ok(Box::new(RealCell {
            deployment,
            target_clock,
            engine: self.exp.load.engine,
            generator_cpus: self.cpus.generator.clone(),
            interrupt: self.interrupt.clone(),
            monitor: None,
            profile_hz: self.exp.monitor.profile_hz,
            remote: remote
                .filter(|f| f.remote_generators())
                .map(|f| (f, self.exp.clone())),
        }))
    }

    fn fairness(&mut self, facts: &[(Cell, serde_json::Value)]) -> Vec<Finding> {
        let cells: Vec<(String, Facts)> = facts
            .iter()
            .filter_map(|(c, v)| Some((c.id.clone(), serde_json::from_value(v.clone()).ok()?)))
            .collect();
        let factors: Vec<&str> = self.exp.factors.iter().map(|(k, _)| k.name()).collect();
        tare_deploy::fairness(&cells, &factors)
            .into_iter()
            .map(|f| Finding {
                fact: f.fact,
                values: f.values,
                message: f.message,
            })
            .collect()
    }
}

/// A deployed target: here, or on a remote host.
enum Placed {
    Local(Box<Deployment>),
    Remote(Box<RemoteTarget>),
}

impl Placed {
    fn endpoint(&self) -> &tare_engine::Endpoint {
        match self {
            Placed::Local(d) => d.endpoint(),
            Placed::Remote(r) => &r.endpoint,
        }
    }

    fn url(&self) -> String {
        match self {
            Placed::Local(d) => d.url(),
            Placed::Remote(r) => r.deployed.url.clone(),
        }
    }

    /// The namespace a client here must enter to reach it: a remote
    /// target is reached at its host's own address, from here.
    fn client_netns(&self) -> Option<&std::path::Path> {
        match self {
            Placed::Local(d) => d.client_netns(),
            Placed::Remote(_) => None,
        }
    }
}

/// What a remote target's monitor record needs from the run.
struct TargetClock {
    /// The target host's clock minus this one's (`tare_remote::clock`).
    offset_s: f64,
    /// Whether one of the generators runs on the target's host too (its
    /// CPU is then in that host's rest of the machine: the agent that
    /// monitors is not the one that loads).
    generators_there: bool,
}

struct RealCell {
    deployment: Placed,
    /// Set when the target runs on another host.
    target_clock: Option<TargetClock>,
    /// Remote generators (`[load] hosts`) and the experiment they read.
    remote: Option<(Arc<Fleet>, Experiment)>,
    engine: &'static dyn ExperimentEngine,
    /// Where the generator's threads run (`[cpus] generator`).
    generator_cpus: Option<CpuList>,
    interrupt: Arc<AtomicBool>,
    /// The last measured load's resource monitoring (docs/monitor.md).
    monitor: Option<serde_json::Value>,
    /// `[monitor] profile`: stack samples per second per CPU, 0 for none.
    profile_hz: u32,
}

/// The record's line when the experiment turned the profile off
/// (docs/profiles.md, "When there is no profile").
pub(crate) const PROFILE_OFF: &str =
    "no profile: turned off by the experiment ([monitor] profile = false)";

impl RunningCell for RealCell {
    fn facts(&self) -> serde_json::Value {
        match &self.deployment {
            Placed::Local(d) => serde_json::to_value(d.facts()).unwrap_or_default(),
            Placed::Remote(r) => r.deployed.facts.clone(),
        }
    }

    fn prepare(&mut self, settings: &LoadSettings) -> Result<Option<String>, ExecError> {
        let offer = Offer {
            endpoint: self.deployment.endpoint(),
            url: self.deployment.url(),
            netns: self.deployment.client_netns(),
        };
        engines::prepare(settings, &offer)
    }

    fn load(&mut self, settings: &LoadSettings, measure: bool) -> Result<LoadResult, ExecError> {
        self.load_observed(settings, measure, &mut |_| {})
    }

    fn load_observed(
        &mut self,
        settings: &LoadSettings,
        measure: bool,
        progress: &mut dyn FnMut(&LiveProgress),
    ) -> Result<LoadResult, ExecError> {
        // Every measured load is monitored (CPU by component, disk, sockets,
        // the verdict), where the server runs; a monitor that cannot start
        // costs the trial nothing.
        let process = settings.table.generator_process();
        let monitor = measure.then(|| self.start_monitor(process)).flatten();
        let prefix = self.engine.thread_prefix();
        let remote_monitor = match &mut self.deployment {
            Placed::Remote(r) if measure => r.monitor_start(&prefix).is_ok(),
            _ => false,
        };
        let mut settings = settings.clone();
        settings.shared.cpus = self.generator_cpus.clone();
        let endpoint = self.deployment.endpoint();
        let result = match (&self.remote, &self.deployment) {
            (Some((fleet, exp)), _) => fleet.load(
                exp,
                &settings,
                measure,
                endpoint,
                &self.deployment.url(),
                &self.interrupt,
                progress,
            ),
            (None, placed) => {
                let offer = Offer {
                    endpoint,
                    url: placed.url(),
                    netns: match placed {
                        Placed::Local(d) => d.client_netns(),
                        Placed::Remote(_) => None,
                    },
                };
                // Live counts as the remote generators give theirs.
                let interrupt = &self.interrupt;
                let unit = self.engine.unit().noun();
                crate::live::watched(unit, progress, || {
                    engines::run(&settings, measure, &offer, interrupt)
                })
            }
        };
        if let (Some(m), Ok(r)) = (monitor, result.as_ref()) {
            let mut record = m.stop().finish(r);
            if self.profile_hz == 0 {
                record.notes.push(PROFILE_OFF.into());
            }
            self.monitor = Some(record.to_json());
        }
        if remote_monitor {
            self.monitor = self.remote_monitor(result.as_ref().ok());
        }
        result
    }

    fn take_monitor(&mut self) -> Option<serde_json::Value> {
        self.monitor.take()
    }

    /// A remote target is checked where it runs, by its host's agent.
    fn check(&mut self) -> Result<(), String> {
        match &mut self.deployment {
            Placed::Local(d) => d.check(),
            Placed::Remote(r) => r.check(),
        }
    }

    fn stop(self: Box<Self>) -> Result<(), ExecError> {
        match self.deployment {
            Placed::Local(d) => (*d).stop().map_err(ExecError::new),
            Placed::Remote(r) => (*r).stop().map_err(ExecError::new),
        }
    }
}

impl RealCell {
    /// `process`: a generator that is a program of its own (the external
    /// engine's tool): the program tare starts, and its children, are the
    /// generator, as tare's own threads are (CPU per request, the
    /// verdict, the profile's components).
    fn start_monitor(&self, process: Option<String>) -> Option<tare_monitor::Monitor> {
        // This machine's monitor watches a local target; a remote one is
        // watched on its host (`remote_monitor`).
        let Placed::Local(deployment) = &self.deployment else {
            return None;
        };
        let generator = match process {
            Some(name) => tare_monitor::GeneratorRef::Child(name),
            None => tare_monitor::GeneratorRef::Threads(self.engine.thread_prefix()),
        };
        let mut spec = tare_remote::monitor::spec(deployment, generator);
        spec.profile_hz = self.profile_hz;
        tare_monitor::Monitor::start(spec).ok()
    }

    /// The remote target's record of the load that just ran, on this
    /// machine's clock and finished against `result` as a local one is.
    /// A record that cannot be had costs the trial nothing.
    fn remote_monitor(&mut self, result: Option<&LoadResult>) -> Option<serde_json::Value> {
        let (Placed::Remote(r), Some(clock)) = (&mut self.deployment, &self.target_clock) else {
            return None;
        };
        let raw = r.monitor_stop().ok()?;
        let mut rec = tare_remote::monitor::on_this_clock(raw, &r.host, clock.offset_s);
        rec.generator = if clock.generators_there {
            format!("on {} too, in its rest of the machine; its own CPU is the load result's generator_cpu_s", r.host)
        } else {
            format!(
                "not on {}; its own CPU is the load result's generator_cpu_s",
                r.host
            )
        };
        Some(rec.finish(result?).to_json())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::ConfigSource;
    use tare_deploy::{AccessLog, Storage, Transport};

    /// Every factor reaches the deployment spec (no Docker needed to check).
    #[test]
    fn cells_become_deploy_specs() {
        let text = r#"
[target]
kind = "nginx"
[target.configs.mine]
text = "events {}"
[[cells]]
placement = "docker-host"
config = "tuned"
access_log = "off"
transport = "unix"
storage = "volume"
seccomp = "unconfined"
cpus = 1.5
memory = "512m"
[[cells]]
placement = "lab-nat"
config = "mine"
access_log = "buffered"
transport = "tcp"
delay = "2ms"
[load]
"#;
        let exp = Experiment::parse(
            text,
            std::path::Path::new("x.toml"),
            &ConfigSource::RelativeTo(".".into()),
        )
        .unwrap();
        let exec = RealExecutor::new(
            &exp,
            std::path::Path::new("/runs/20261122T0300Z-vm-abc123"),
            Arc::new(AtomicBool::new(false)),
        );
        let docker = exec.spec(&exp.cells[0]).unwrap();
        assert_eq!(docker.run_id, "rabc123");
        assert_eq!(docker.placement.name(), "docker-host");
        assert_eq!(docker.target.variant, Variant::Named("tuned".into()));
        assert_eq!(docker.target.access_log, Some(AccessLog::Off));
        assert_eq!(docker.transport, Transport::Unix);
        assert_eq!(
            docker.container,
            ContainerOptions {
                storage: Storage::Volume,
                seccomp_unconfined: true,
                cpus: Some(1.5),
                memory: Some(512 << 20),
            }
        );
        assert_eq!(docker.netem, None);
        let lab = exec.spec(&exp.cells[1]).unwrap();
        assert_eq!(lab.placement.name(), "lab-nat");
        assert_eq!(
            lab.target.variant.to_string(),
            "/runs/20261122T0300Z-vm-abc123/configs/mine"
        );
        assert_eq!(lab.target.access_log, Some(AccessLog::Buffered));
        assert_eq!(lab.netem, Some(std::time::Duration::from_millis(2)));
        assert_eq!(lab.container, ContainerOptions::default());
    }

    #[test]
    fn a_reverse_proxy_experiment_deploys_nginx_proxy() {
        let text = r#"
[target]
kind = "nginx-proxy"
[target.configs.baseline]
text = "events {}"
[factors]
placement = ["native", "docker-bridge"]
config = ["default", "baseline"]
[load]
"#;
        let exp = Experiment::parse(
            text,
            std::path::Path::new("x.toml"),
            &ConfigSource::RelativeTo(".".into()),
        )
        .unwrap();
        assert_eq!(exp.target.kind().name(), "nginx-proxy");
        assert_eq!(exp.load.engine.name(), "http");
        let exec = RealExecutor::new(
            &exp,
            std::path::Path::new("/runs/x-abc"),
            Arc::new(AtomicBool::new(false)),
        );
        let specs: Vec<DeploySpec> = exp.cells.iter().map(|c| exec.spec(c).unwrap()).collect();
        assert!(specs
            .iter()
            .all(|s| s.target.target.name() == "nginx-proxy"));
        assert_eq!(specs[0].target.variant, Variant::default());
        assert_eq!(
            specs[1].target.variant.to_string(),
            "/runs/x-abc/configs/baseline"
        );
        assert_eq!(specs[3].placement.name(), "docker-bridge");
    }

    #[test]
    fn deploy_ids_follow_tare_deploy_rules() {
        let id = deploy_id(std::path::Path::new("runs/20261122T0226Z-host-3f9a1c"));
        assert_eq!(id, "r3f9a1c");
        let id = deploy_id(std::path::Path::new("/tmp/x.y"));
        assert!(id.len() <= 32 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    }
}
