//! A target deployed on a remote host: `tare agent deploy` runs
//! `tare_deploy::deploy` there (native, or that host's own Docker Engine),
//! says where load reaches it, monitors it during each measured load when
//! asked (`crate::monitor`), and stops it when told or when its lifeline
//! closes. `tare agent check` asks, before any load, what the host can
//! deploy and which addresses it owns.

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tare_deploy::DeploySpec;
use tare_engine::Endpoint;
use tare_monitor::MonitorRecord;

use crate::agent::{self, Agent, Event};
use crate::install::Installed;
use crate::monitor::Command;
use crate::RemoteError;

/// How long a remote deployment may take to answer (a container image
/// built there, PostgreSQL's initdb), and to stop.
const DEPLOY_LIMIT: Duration = Duration::from_secs(300);
const STOP_LIMIT: Duration = Duration::from_secs(60);
/// How long the monitor may take to start (its first sample) or to hand
/// over its record.
const MONITOR_LIMIT: Duration = Duration::from_secs(30);

/// What `tare agent deploy` answers once the target answers its probe.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Deployed {
    /// Where load reaches it (`ip:port`).
    pub endpoint: String,
    pub url: String,
    /// The deployment's facts (`tare_deploy::Facts` as JSON).
    pub facts: serde_json::Value,
    /// The deployment directory on the host.
    pub dir: PathBuf,
}

/// A target running on a remote host; dropping it stops it.
pub struct RemoteTarget {
    agent: Agent,
    /// The host's name, as the experiment spells it.
    pub host: String,
    pub deployed: Deployed,
    pub endpoint: Endpoint,
}

impl RemoteTarget {
    /// Deploys `spec` on the host `inst` is installed on.
    pub fn deploy(inst: &Installed, spec: &DeploySpec) -> Result<RemoteTarget, RemoteError> {
        let mut agent = Agent::start(inst, "deploy", spec)?;
        let deployed: Deployed = agent.answer(DEPLOY_LIMIT)?;
        let endpoint =
            deployed
                .endpoint
                .parse()
                .map(Endpoint::Tcp)
                .map_err(|_| RemoteError::Ssh {
                    host: inst.host.name.clone(),
                    message: format!("a target endpoint tare cannot read: {}", deployed.endpoint),
                })?;
        Ok(RemoteTarget {
            agent,
            host: inst.host.name.clone(),
            deployed,
            endpoint,
        })
    }

    /// Starts monitoring it on its host (`crate::monitor`); the generator
    /// is what of its host's agent is named `generator_threads…`.
    pub fn monitor_start(&mut self, generator_threads: &str) -> Result<(), RemoteError> {
        self.ask(&Command::Start {
            generator_threads: generator_threads.to_string(),
        })
        .map(drop)
    }

    /// Stops the monitor and returns its record as sampled, on the host's
    /// clock (`crate::monitor::on_this_clock` moves it to this one's).
    pub fn monitor_stop(&mut self) -> Result<MonitorRecord, RemoteError> {
        let value = self.ask(&Command::Stop)?;
        MonitorRecord::from_json(&value).map_err(|e| RemoteError::Ssh {
            host: self.host.clone(),
            message: format!("a monitor record tare cannot read: {e}"),
        })
    }

    /// Whether it still serves, as its host's agent sees it: the reason
    /// when it does not, or why the agent no longer answers.
    pub fn check(&mut self) -> Result<(), String> {
        // `host NAME: server exited with signal 9`, or the agent's end.
        self.ask(&Command::Check)
            .map(drop)
            .map_err(|e| e.to_string())
    }

    fn ask(&mut self, cmd: &Command) -> Result<serde_json::Value, RemoteError> {
        let line = serde_json::to_string(cmd).map_err(|e| RemoteError::Local(e.to_string()))?;
        self.agent.say(&line)?;
        self.agent.answer(MONITOR_LIMIT)
    }

    /// Stops it and waits for the host to say it is gone.
    pub fn stop(mut self) -> Result<(), RemoteError> {
        self.agent.say("stop")?;
        let r = self.agent.answer::<serde_json::Value>(STOP_LIMIT).map(drop);
        self.agent.close(Duration::from_secs(5));
        r
    }
}

/// The agent's side of `deploy`.
pub fn serve_deploy() -> Result<(), String> {
    let (spec, stop, lines) = agent::request_lines::<DeploySpec>()?;
    let deployment = match tare_deploy::deploy(&spec) {
        Ok(d) => d,
        Err(e) => {
            agent::emit(&Event::Failed {
                message: e.to_string(),
            });
            return Ok(());
        }
    };
    let deployed = Deployed {
        endpoint: deployment.endpoint().to_string(),
        url: deployment.url(),
        facts: serde_json::to_value(deployment.facts()).unwrap_or_default(),
        dir: deployment.dir().to_path_buf(),
    };
    agent::emit(&Event::Done {
        value: serde_json::to_value(&deployed).unwrap_or_default(),
    });
    // Until told to stop, or until the tare that asked is gone, answering
    // its monitor requests.
    let mut monitor = None;
    while !stop.load(Ordering::SeqCst) {
        match lines.recv_timeout(Duration::from_millis(50)) {
            Ok(line) => agent::emit(&crate::monitor::serve(&line, &deployment, &mut monitor)),
            Err(RecvTimeoutError::Timeout) => {}
            // The lifeline ended: the flag is set.
            Err(RecvTimeoutError::Disconnected) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    drop(monitor);
    match deployment.stop() {
        Ok(()) => agent::emit(&Event::Done {
            value: serde_json::Value::Null,
        }),
        Err(e) => agent::emit(&Event::Failed {
            message: e.to_string(),
        }),
    }
    Ok(())
}

/// What a host answers to `check`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct HostCheck {
    /// Its own interface addresses.
    pub addresses: Vec<IpAddr>,
    /// For each spec asked about: `None` when it can deploy it, else why not.
    pub specs: Vec<Option<String>>,
}

/// Asks the host `inst` is on what it can deploy and what it owns.
pub fn check(inst: &Installed, specs: &[DeploySpec]) -> Result<HostCheck, RemoteError> {
    Agent::start(inst, "check", &specs)?.answer(Duration::from_secs(60))
}

/// The agent's side of `check`.
pub fn serve_check() -> Result<(), String> {
    let (specs, _) = agent::request::<Vec<DeploySpec>>()?;
    let answer = HostCheck {
        addresses: crate::addresses::own(),
        specs: specs.iter().map(|s| tare_deploy::check(s).err()).collect(),
    };
    agent::emit(&Event::Done {
        value: serde_json::to_value(&answer).unwrap_or_default(),
    });
    Ok(())
}
