//! Remote hosts in a run (docs/remote.md): before any load, tare is copied
//! to every host the experiment uses and checked ([`Fleet::connect`]); each
//! load then runs one generator per `[load] hosts` entry, as `tare agent
//! load` there, and their records are merged exactly
//! (`tare_record::merge`). What an agent runs is the experiment's own
//! `[load]` table, read there through the engine registry
//! ([`serve_load`]), so no engine is named here. While they run, their
//! ticks carry their counts, summed into one progress ([`Tally`]).

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tare_deploy::DeploySpec;
use tare_engine::Endpoint;
use tare_record::merge::{self, Part};
use tare_record::LoadResult;
use tare_remote::agent::{self, Agent, Event};
use tare_remote::{clock, Clock, Host, HostCheck, Installed};

use crate::engines::{self, Offer};
use crate::executor::ExecError;
use crate::experiment::{ConfigSource, Experiment, Hosts, InputFile, LoadSettings};
use crate::observer::LiveProgress;

/// The run directory's record of the hosts a run put tare on: what
/// `tare cleanup` reads to reach them after a killed run.
pub const HOSTS_FILE: &str = "hosts.json";

/// `hosts.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HostsFile {
    /// The id naming the run's directory on each host.
    pub run_id: String,
    pub hosts: Vec<Host>,
}

/// What the provenance records of each host.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostFacts {
    pub name: String,
    /// `user@address:port`.
    pub ssh: String,
    /// `uname -srm` there.
    pub uname: String,
    /// The SHA-256 of the tare copied there (this run's binary).
    pub tare_sha256: String,
    /// Its clock minus this host's, and the round trip it was measured in.
    pub clock: Clock,
    /// Its interface addresses.
    pub addresses: Vec<IpAddr>,
}

/// A host ready for a run.
struct Ready {
    inst: Installed,
    clock: Clock,
    check: HostCheck,
}

/// The hosts of one run, installed and checked.
pub struct Fleet {
    run_id: String,
    hosts: Vec<Ready>,
    /// The generators' hosts, in `[load] hosts` order.
    generators: Vec<String>,
    /// What the target host answered for each spec asked (in order).
    target_checks: Vec<Option<String>>,
    /// Where load reaches the target: the target host's load address, or
    /// with remote generators and a local target, this host's address
    /// facing them.
    pub reach: Option<IpAddr>,
}

impl Fleet {
    /// Installs tare on every host `hosts` uses, measures the clocks,
    /// asks the target host about `specs`, and checks the addresses load
    /// will go to; records the hosts in `run_dir` first, so a killed run
    /// can be cleaned up. Any failure is one line, before any load.
    pub fn connect(
        hosts: &Hosts,
        run_id: &str,
        run_dir: &Path,
        specs: &[DeploySpec],
    ) -> Result<Fleet, ExecError> {
        let used: Vec<Host> = hosts.used().into_iter().cloned().collect();
        let file = HostsFile {
            run_id: run_id.to_string(),
            hosts: used.clone(),
        };
        let text = serde_json::to_vec_pretty(&file).map_err(ExecError::new)?;
        crate::rundir::RunDir::at(run_dir.to_path_buf())
            .write_file(HOSTS_FILE, &text)
            .map_err(ExecError::new)?;
        let fleet = Fleet::install(hosts, &used, run_id, specs);
        if fleet.is_err() {
            // Nothing stays on the hosts already reached.
            for h in &used {
                let _ = tare_remote::cleanup::cleanup(h, Some(run_id));
            }
        }
        fleet
    }

    fn install(
        hosts: &Hosts,
        used: &[Host],
        run_id: &str,
        specs: &[DeploySpec],
    ) -> Result<Fleet, ExecError> {
        let mut ready = Vec::new();
        for h in used {
            let inst = tare_remote::install(h, run_id).map_err(ExecError::new)?;
            let clock = clock::measure(&inst).map_err(ExecError::new)?;
            let asked: &[DeploySpec] = if hosts.target.as_deref() == Some(&h.name) {
                specs
            } else {
                &[]
            };
            let check = tare_remote::target::check(&inst, asked).map_err(ExecError::new)?;
            ready.push(Ready { inst, clock, check });
        }
        let mut fleet = Fleet {
            run_id: run_id.to_string(),
            hosts: ready,
            generators: hosts.generators.clone(),
            target_checks: Vec::new(),
            reach: None,
        };
        fleet.reach = match &hosts.target {
            Some(name) => {
                let r = fleet.ready(name)?;
                let checks = r.check.specs.clone();
                let reach = owned_load_address(&r.inst.host, &r.check.addresses)?;
                fleet.target_checks = checks;
                Some(reach)
            }
            None if !fleet.generators.is_empty() => {
                Some(facing(&fleet.ready(&fleet.generators[0])?.inst.host)?)
            }
            None => None,
        };
        Ok(fleet)
    }

    fn ready(&self, name: &str) -> Result<&Ready, ExecError> {
        self.hosts
            .iter()
            .find(|r| r.inst.host.name == name)
            .ok_or_else(|| ExecError::new(format!("host {name} is not part of this run")))
    }

    /// The installed copy on host `name`.
    pub fn installed(&self, name: &str) -> Result<&Installed, ExecError> {
        Ok(&self.ready(name)?.inst)
    }

    /// The target host's answer for the `i`th spec given to `connect`.
    pub(crate) fn target_check(&self, i: usize) -> Option<Result<(), String>> {
        self.target_checks
            .get(i)
            .map(|r| r.clone().map_or(Ok(()), Err))
    }

    /// Whether generators run elsewhere.
    pub(crate) fn remote_generators(&self) -> bool {
        !self.generators.is_empty()
    }

    /// The clock of host `name`: its offset from this one's.
    pub fn clock(&self, name: &str) -> Result<Clock, ExecError> {
        Ok(self.ready(name)?.clock)
    }

    /// Whether `name` runs one of the generators.
    pub(crate) fn generates_on(&self, name: &str) -> bool {
        self.generators.iter().any(|g| g == name)
    }

    /// What the provenance records.
    pub fn facts(&self) -> Vec<HostFacts> {
        self.hosts
            .iter()
            .map(|r| HostFacts {
                name: r.inst.host.name.clone(),
                ssh: r.inst.host.destination(),
                uname: r.inst.uname.clone(),
                tare_sha256: r.inst.sha256.clone(),
                clock: r.clock,
                addresses: r.check.addresses.clone(),
            })
            .collect()
    }

    /// Load may only go to an address the target's host owns: the named
    /// target host's, or this host's when the target is local.
    pub fn check_endpoint(
        &self,
        target_host: Option<&str>,
        endpoint: &Endpoint,
    ) -> Result<(), ExecError> {
        let Endpoint::Tcp(addr) = endpoint else {
            return Err(ExecError::new(
                "a Unix socket cannot be loaded from another host (transport = \"tcp\")",
            ));
        };
        let owned = match target_host {
            Some(name) => self.ready(name)?.check.addresses.clone(),
            None => tare_remote::addresses::own(),
        };
        if owned.contains(&addr.ip()) {
            return Ok(());
        }
        Err(ExecError::new(format!(
            "refusing to load {addr}: not an address of {} (ARCHITECTURE.md, \"Loopback only by default\")",
            target_host.unwrap_or("this machine")
        )))
    }

    /// One load from every generator host at once, merged; `progress`
    /// hears the hosts' summed counts as their ticks arrive.
    #[allow(clippy::too_many_arguments)]
    pub fn load(
        &self,
        exp: &Experiment,
        settings: &LoadSettings,
        measure: bool,
        endpoint: &Endpoint,
        url: &str,
        stop: &Arc<AtomicBool>,
        progress: &mut dyn FnMut(&LiveProgress),
    ) -> Result<LoadResult, ExecError> {
        let shares = split(&settings.shared, self.generators.len())?;
        let text = load_text(exp)?;
        // Every generator starts its measured run at the same instant,
        // each on its own clock: a second from now leaves ssh time to
        // connect.
        let start = clock::now() + 1.0;
        let mut running = Vec::new();
        for (name, share) in self.generators.iter().zip(&shares) {
            let r = self.ready(name)?;
            let req = LoadRequest {
                experiment: text.clone(),
                connections: share.connections,
                threads: share.threads,
                rate: share.rate,
                measure,
                endpoint: endpoint.to_string(),
                url: url.to_string(),
                start_at_unix_s: start + r.clock.offset_s,
                cpus: settings.shared.cpus.as_ref().map(ToString::to_string),
                inputs: settings.table.inputs(),
            };
            running.push((r, Agent::start(&r.inst, "load", &req)));
        }
        // Ticks arrive twice a second; a host silent for this long is gone.
        let silence = Duration::from_secs(6) + settings.shared.timeout;
        let mut tally = Tally::new(running.len(), exp.load.engine.unit().noun());
        let (tx, ticks) = mpsc::channel();
        let parts: Vec<Part> = std::thread::scope(|s| {
            let handles: Vec<_> = running
                .into_iter()
                .enumerate()
                .map(|(i, (r, agent))| {
                    let tx = tx.clone();
                    s.spawn(move || {
                        let result = agent
                            .and_then(|mut a| {
                                let out = wait_answer(&mut a, silence, stop, |t| {
                                    let _ = tx.send((i, t));
                                });
                                a.close(Duration::from_secs(5));
                                out
                            })
                            .map_err(|e| e.to_string());
                        Part {
                            host: r.inst.host.name.clone(),
                            clock_offset_s: r.clock.offset_s,
                            clock_rtt_s: r.clock.rtt_s,
                            result,
                        }
                    })
                })
                .collect();
            // Every sender is a generator's thread's: the channel closes when
            // the last one ends, within `silence` of its last line.
            drop(tx);
            for (i, tick) in ticks {
                if let Some(p) = tally.add(i, tick) {
                    progress(&p);
                }
            }
            handles
                .into_iter()
                .map(|h| h.join().expect("a generator's thread does not panic"))
                .collect()
        });
        merge::merge(&parts).map_err(ExecError::new)
    }

    /// Removes this run's directory from every host (agents, deployments,
    /// the binary); what could not be removed, one line each.
    pub fn close(&self) -> Vec<String> {
        self.hosts
            .iter()
            .filter_map(|r| {
                tare_remote::cleanup::cleanup(&r.inst.host, Some(&self.run_id))
                    .err()
                    .map(|e| e.to_string())
            })
            .collect()
    }
}

/// One generator's counts from one tick.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Tick {
    elapsed_s: f64,
    done: u64,
    errors: u64,
}

/// The generators' latest counts, summed into one progress.
struct Tally {
    /// Each host's last two ticks with counts (the last, and the one before
    /// it for the rate).
    hosts: Vec<(Option<Tick>, Option<Tick>)>,
    unit: &'static str,
}

impl Tally {
    fn new(hosts: usize, unit: &'static str) -> Tally {
        Tally {
            hosts: vec![(None, None); hosts],
            unit,
        }
    }

    /// Adds host `i`'s tick; the sum over the hosts that reported so far.
    fn add(&mut self, i: usize, tick: Tick) -> Option<LiveProgress> {
        let slot = self.hosts.get_mut(i)?;
        *slot = (Some(tick), slot.0);
        let mut p = LiveProgress {
            unit: self.unit,
            hosts: self.hosts.len(),
            ..LiveProgress::default()
        };
        for (last, before) in &self.hosts {
            let Some(last) = last else { continue };
            p.reporting += 1;
            p.done += last.done;
            p.errors += last.errors;
            if let Some(b) = before {
                let dt = last.elapsed_s - b.elapsed_s;
                // A board restarted (a new load in the same agent) has no rate yet.
                if dt > 0.0 && last.done >= b.done {
                    p.rate += (last.done - b.done) as f64 / dt;
                }
            }
        }
        Some(p)
    }
}

/// The answer of a load agent; its ticks with counts go to `tick`. An
/// interrupt closes its lifeline, and the agent answers with what it
/// measured so far.
fn wait_answer(
    a: &mut Agent,
    silence: Duration,
    stop: &Arc<AtomicBool>,
    mut tick: impl FnMut(Tick),
) -> Result<LoadResult, tare_remote::RemoteError> {
    let mut told = false;
    loop {
        if stop.load(Ordering::Relaxed) && !told {
            told = true;
            let _ = a.say("stop");
        }
        match a.next(silence)? {
            Event::Tick {
                elapsed_s,
                done: Some(done),
                errors,
                ..
            } => tick(Tick {
                elapsed_s,
                done,
                errors: errors.unwrap_or(0),
            }),
            Event::Tick { .. } => continue,
            Event::Done { value } => {
                return serde_json::from_value(value)
                    .map_err(|e| tare_remote::RemoteError::Local(e.to_string()))
            }
            Event::Failed { message } => return Err(tare_remote::RemoteError::Local(message)),
        }
    }
}

/// One generator's share of the load.
#[derive(Clone, Debug, PartialEq)]
struct Share {
    connections: usize,
    threads: usize,
    rate: Option<f64>,
}

/// The cell's load shared out among `n` generators: connections as evenly
/// as they go (the first get one more), threads likewise but at least one
/// each, the open-loop rate in proportion to the connections. Together
/// they are the cell's load.
fn split(load: &tare_engine::Load, n: usize) -> Result<Vec<Share>, ExecError> {
    if load.connections < n {
        return Err(ExecError::new(format!(
            "{} connections cannot be shared among {n} generators",
            load.connections
        )));
    }
    Ok((0..n)
        .map(|i| {
            let connections = load.connections / n + usize::from(i < load.connections % n);
            let threads = (load.threads / n + usize::from(i < load.threads % n))
                .max(1)
                .min(connections);
            Share {
                connections,
                threads,
                rate: load
                    .rate
                    .map(|r| r * connections as f64 / load.connections as f64),
            }
        })
        .collect())
}

/// The experiment as a generator needs it: the target's kind (which picks
/// the engine) and `[load]` as written, without the hosts.
fn load_text(exp: &Experiment) -> Result<String, ExecError> {
    let doc: toml::Table = toml::from_str(&exp.text).map_err(ExecError::new)?;
    let mut load = doc
        .get("load")
        .and_then(|l| l.as_table())
        .cloned()
        .unwrap_or_default();
    load.remove("hosts");
    // The target's kind picks the engine; a service names its own, and a
    // stand-in command (it cannot be read without one, and its own may
    // name a file only the target's host has: a generator runs none).
    let mut target = toml::Table::new();
    target.insert("kind".into(), exp.target.kind().name().into());
    if exp.target.server.service.is_some() {
        target.insert("engine".into(), exp.target.server.engine().into());
        target.insert("command".into(), vec!["service", "{port}"].into());
    }
    let mut out = toml::Table::new();
    out.insert("target".into(), target.into());
    out.insert("load".into(), load.into());
    toml::to_string(&out).map_err(ExecError::new)
}

/// What `tare agent load` is asked.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct LoadRequest {
    /// `[target] kind` and `[load]` (see [`load_text`]).
    experiment: String,
    connections: usize,
    threads: usize,
    rate: Option<f64>,
    /// `false`: the warm-up.
    measure: bool,
    /// `ip:port` of the target.
    endpoint: String,
    url: String,
    /// When to begin, on the generator's own clock.
    start_at_unix_s: f64,
    /// `[cpus] generator`, as this machine resolved it.
    cpus: Option<String>,
    /// The files the load reads (a request mix's), as the run directory
    /// keeps them: the generator's host has no copy of its own.
    #[serde(default)]
    inputs: Vec<InputFile>,
}

/// The agent's side of `load`: the request's experiment read through the
/// engine registry, its share of the load run, the record printed.
pub fn serve_load() -> Result<(), String> {
    let (req, stop) = agent::request::<LoadRequest>()?;
    let done = Arc::new(AtomicBool::new(false));
    let ticker = agent::ticker(if req.measure { "load" } else { "warm-up" }, done.clone());
    let result = run_share(&req, &stop);
    done.store(true, Ordering::Relaxed);
    let _ = ticker.join();
    agent::emit(&match result {
        Ok(r) => Event::Done {
            value: serde_json::to_value(r).map_err(|e| e.to_string())?,
        },
        Err(message) => Event::Failed { message },
    });
    Ok(())
}

/// The request's experiment, its input files read from a scratch
/// directory laid out as a run directory's (`inputs/KEY`), removed after.
fn experiment_of(req: &LoadRequest) -> Result<Experiment, String> {
    if req.inputs.is_empty() {
        return Experiment::parse(
            &req.experiment,
            Path::new("<load request>"),
            &ConfigSource::RelativeTo(PathBuf::from(".")),
        )
        .map_err(|e| e.to_string());
    }
    let dir = tempfile_dir()?;
    let written = req.inputs.iter().try_for_each(|i| {
        // Only `inputs/NAME`, NAME one plain component: nothing else is written.
        let name = i
            .name
            .strip_prefix("inputs/")
            .filter(|n| tare_engine::bounds::path_name(n).is_ok())
            .ok_or_else(|| format!("input {:?} is not inputs/NAME", i.name))?;
        std::fs::write(dir.join("inputs").join(name), &i.text).map_err(|e| e.to_string())
    });
    let exp = written.and_then(|()| {
        Experiment::parse(
            &req.experiment,
            Path::new("<load request>"),
            &ConfigSource::RunDir(dir.clone()),
        )
        .map_err(|e| e.to_string())
    });
    let _ = std::fs::remove_dir_all(&dir);
    exp
}

/// A new private directory with an `inputs/` in it.
fn tempfile_dir() -> Result<PathBuf, String> {
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "tare-agent-inputs-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(dir.join("inputs")).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

fn run_share(req: &LoadRequest, stop: &Arc<AtomicBool>) -> Result<LoadResult, String> {
    let exp = experiment_of(req)?;
    let mut settings = exp.load.clone();
    settings.shared.connections = req.connections;
    settings.shared.threads = req.threads;
    settings.shared.rate = req.rate;
    settings.shared.cpus = req
        .cpus
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(|e| format!("cpus: {e}"))?;
    let addr: SocketAddr = req
        .endpoint
        .parse()
        .map_err(|_| format!("endpoint {:?} is not ip:port", req.endpoint))?;
    let endpoint = Endpoint::Tcp(addr);
    // Wait for the common start (at most ten seconds: a later start is a
    // clock tare measured wrong).
    let wait = (req.start_at_unix_s - clock::now()).clamp(0.0, 10.0);
    std::thread::sleep(Duration::from_secs_f64(wait));
    let offer = Offer {
        endpoint: &endpoint,
        url: req.url.clone(),
        netns: None,
    };
    engines::run(&settings, req.measure, &offer, stop).map_err(|e| e.to_string())
}

/// This host's address on the route to `host`: where a local target is
/// reached by generators there. Connecting a UDP socket sends nothing.
fn facing(host: &Host) -> Result<IpAddr, ExecError> {
    let addr = host.load_address.as_deref().unwrap_or(&host.address);
    let to: IpAddr =
        resolve(addr).map_err(|e| ExecError::new(format!("host {}: {e}", host.name)))?;
    let unspecified: IpAddr = match to {
        IpAddr::V4(_) => std::net::Ipv4Addr::UNSPECIFIED.into(),
        IpAddr::V6(_) => std::net::Ipv6Addr::UNSPECIFIED.into(),
    };
    UdpSocket::bind((unspecified, 0))
        .and_then(|s| s.connect((to, 9)).and_then(|()| s.local_addr()))
        .map(|a| a.ip())
        .map_err(|e| ExecError::new(format!("host {}: no route to {to}: {e}", host.name)))
}

/// The target host's load address (its `address`, else its ssh address),
/// which it must own.
fn owned_load_address(host: &Host, owned: &[IpAddr]) -> Result<IpAddr, ExecError> {
    let given = host.load_address.as_deref().unwrap_or(&host.address);
    let ip = resolve(given).map_err(|e| ExecError::new(format!("host {}: {e}", host.name)))?;
    if owned.contains(&ip) {
        return Ok(ip);
    }
    let list: Vec<String> = owned.iter().map(ToString::to_string).collect();
    Err(ExecError::new(format!(
        "host {}: {ip} is not one of its addresses ({}); load goes only to addresses the named hosts own",
        host.name,
        list.join(", ")
    )))
}

fn resolve(name: &str) -> Result<IpAddr, String> {
    if let Ok(ip) = name.parse() {
        return Ok(ip);
    }
    use std::net::ToSocketAddrs;
    (name, 0)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {name}: {e}"))?
        .next()
        .map(|a| a.ip())
        .ok_or_else(|| format!("{name} has no address"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A generator on another host loads the same mix: the request carries
    /// the file, the agent reads it from a scratch copy it removes.
    #[test]
    fn a_load_request_carries_its_mix_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("site.urls"), "/a\n/b\n").unwrap();
        let exp = Experiment::parse(
            "[target]\nkind = \"nginx\"\n[load]\nduration = \"1s\"\n[load.http]\nurls = \"site.urls\"\n",
            &dir.path().join("exp.toml"),
            &ConfigSource::RelativeTo(dir.path().to_path_buf()),
        )
        .unwrap();
        let mut req = LoadRequest {
            experiment: load_text(&exp).unwrap(),
            connections: 1,
            threads: 1,
            rate: None,
            measure: true,
            endpoint: "127.0.0.1:1".into(),
            url: "http://127.0.0.1:1/".into(),
            start_at_unix_s: 0.0,
            cpus: None,
            inputs: exp.load.table.inputs(),
        };
        let back: LoadRequest =
            serde_json::from_str(&serde_json::to_string(&req).unwrap()).unwrap();
        let got = experiment_of(&back).unwrap();
        assert_eq!(got.load.snapshot()["http"]["mix"]["requests"][1], "/b x1");
        req.inputs[0].name = "inputs/../../x".into();
        assert!(experiment_of(&req).unwrap_err().contains("not inputs/NAME"));
        req.inputs.clear();
        assert!(experiment_of(&req).unwrap_err().contains("load.http.urls"));
    }

    fn load(connections: usize, threads: usize, rate: Option<f64>) -> tare_engine::Load {
        tare_engine::Load {
            connections,
            threads,
            rate,
            ..tare_engine::Load::default()
        }
    }

    #[test]
    fn progress_sums_the_hosts_that_reported() {
        let t = |elapsed_s, done, errors| Tick {
            elapsed_s,
            done,
            errors,
        };
        let mut tally = Tally::new(2, "request");
        let p = tally.add(0, t(0.5, 100, 0)).unwrap();
        assert_eq!((p.done, p.reporting, p.hosts, p.rate), (100, 1, 2, 0.0));
        let p = tally.add(1, t(0.5, 50, 1)).unwrap();
        assert_eq!((p.done, p.errors, p.reporting), (150, 1, 2));
        let p = tally.add(0, t(1.0, 300, 0)).unwrap();
        // Host 0: 200 more in 0.5 s; host 1 has one tick, no rate yet.
        assert_eq!(p.done, 350);
        assert!((p.rate - 400.0).abs() < 1e-9, "{p:?}");
        assert_eq!(
            p.to_string(),
            "350 requests done, 400/s, 1 errors (2 of 2 generator hosts)"
        );
        assert!(tally.add(5, t(1.0, 1, 0)).is_none(), "no such host");
    }

    #[test]
    fn shares_add_up_to_the_cells_load() {
        let s = split(&load(33, 3, Some(3300.0)), 2).unwrap();
        assert_eq!(s.iter().map(|s| s.connections).sum::<usize>(), 33);
        assert_eq!((s[0].connections, s[1].connections), (17, 16));
        assert_eq!((s[0].threads, s[1].threads), (2, 1));
        let rate: f64 = s.iter().filter_map(|s| s.rate).sum();
        assert!((rate - 3300.0).abs() < 1e-9);
        assert!(split(&load(1, 1, None), 2).is_err());
        let one = split(&load(2, 1, None), 2).unwrap();
        assert!(one.iter().all(|s| s.threads == 1 && s.connections == 1));
    }

    #[test]
    fn a_generator_gets_the_load_table_without_hosts() {
        let text = r#"
[hosts.a]
ssh = "root@10.9.9.9"
[target]
kind = "nginx"
host = "a"
[load]
connections = 8
duration = "1s"
hosts = ["a"]
[load.http]
path = "/x"
"#;
        let exp = Experiment::parse(
            text,
            Path::new("x.toml"),
            &ConfigSource::RelativeTo(".".into()),
        )
        .unwrap();
        assert_eq!(exp.hosts.generators, ["a"]);
        assert_eq!(exp.hosts.target.as_deref(), Some("a"));
        let reduced = load_text(&exp).unwrap();
        assert!(
            !reduced.contains("hosts") && reduced.contains("path"),
            "{reduced}"
        );
        let again = Experiment::parse(
            &reduced,
            Path::new("r.toml"),
            &ConfigSource::RelativeTo(".".into()),
        )
        .unwrap();
        assert_eq!(again.load.shared, exp.load.shared);
        assert_eq!(again.load.table.snapshot(), exp.load.table.snapshot());
    }
}
