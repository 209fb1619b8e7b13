//! A target's monitor where the target runs. `crates/monitor` reads /proc
//! and cgroups, so a server on another host (`[target] host`) can only be
//! watched there: the deploy agent that holds the deployment
//! (`crate::target`) starts a [`Monitor`] on it when asked and answers with
//! the raw [`MonitorRecord`] when told to stop. The tare that asked puts
//! the record on its own clock and finishes it against the load's result
//! as it does a local trial's (`tare_runner`'s `RealCell::load`), so a
//! remote trial's record is read by reports like any other.
//!
//! [`spec`] is also what the runner monitors a local deployment with: one
//! definition of what "the server" of a deployment is.

use serde::{Deserialize, Serialize};
use tare_deploy::{Deployment, Scope};
use tare_monitor::{GeneratorRef, Monitor, MonitorRecord, MonitorSpec, ServerRef};

use crate::agent::Event;

/// What the monitor of `deployment` watches: its server (its pids, or its
/// container's cgroup), each companion as its own part, and `generator`.
pub fn spec(deployment: &Deployment, generator: GeneratorRef) -> MonitorSpec {
    let watch = deployment.watch();
    let server = match &watch.server {
        Scope::CgroupOf(pid) => ServerRef::CgroupOf(*pid),
        Scope::Pids(pids) => ServerRef::Pids(pids.clone()),
    };
    let mut spec = MonitorSpec::new(server, generator);
    // A companion's CPU (nginx-proxy's backend) is its own part, not "the rest".
    for (name, pids) in &watch.companions {
        spec = spec.with_companion(name, pids.clone());
    }
    spec
}

/// A request to a deploy agent after its answer, one JSON line on its
/// lifeline (`"stop"` still ends it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "monitor", rename_all = "kebab-case")]
pub enum Command {
    /// Start monitoring the deployment, with the generator as the threads
    /// of the agent's process named `generator_threads…` (there are none
    /// when the load comes from elsewhere: the generator's own CPU is then
    /// in the load result, `generator_cpu_s`).
    Start { generator_threads: String },
    /// Stop and answer with the record (not finished: the tare that asked
    /// has the load's result).
    Stop,
    /// Whether the deployment still serves (`Deployment::check`: its
    /// process or container alive, not stopped, answering its readiness
    /// probe), asked after every measured load as for a local one
    /// (docs/experiments.md, "Failed trials").
    Check,
}

/// The agent's side of one line: what to answer. A line that is no
/// command, a second start, or a stop with nothing running is a failure
/// answered, never an end of the agent.
pub(crate) fn serve(line: &str, deployment: &Deployment, running: &mut Option<Monitor>) -> Event {
    let failed = |message: String| Event::Failed { message };
    let cmd = match serde_json::from_str::<Command>(line) {
        Ok(c) => c,
        Err(e) => return failed(format!("a request tare cannot read: {e}")),
    };
    match cmd {
        Command::Start { generator_threads } => {
            if running.is_some() {
                return failed("the monitor is already running".into());
            }
            let generator = GeneratorRef::Threads(generator_threads);
            match Monitor::start(spec(deployment, generator)) {
                Ok(m) => {
                    *running = Some(m);
                    Event::Done {
                        value: serde_json::Value::Null,
                    }
                }
                Err(e) => failed(e.to_string()),
            }
        }
        Command::Stop => match running.take() {
            Some(m) => Event::Done {
                value: m.stop().to_json(),
            },
            None => failed("no monitor is running".into()),
        },
        Command::Check => match deployment.check() {
            Ok(()) => Event::Done {
                value: serde_json::Value::Null,
            },
            Err(why) => failed(why),
        },
    }
}

/// A record measured on `host`, whose clock is `offset_s` ahead of this
/// one's (`crate::clock`), put on this machine's clock so that
/// [`MonitorRecord::finish`] clips it to the load's measured period.
pub fn on_this_clock(mut record: MonitorRecord, host: &str, offset_s: f64) -> MonitorRecord {
    record.started_unix_s -= offset_s;
    if let Some(w) = record.window.as_mut() {
        w.start_unix_s -= offset_s;
    }
    record.host = Some(host.to_string());
    record
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_tagged_json_lines() {
        let start = Command::Start {
            generator_threads: "tare-http-".into(),
        };
        let text = serde_json::to_string(&start).unwrap();
        assert_eq!(
            text,
            r#"{"monitor":"start","generator_threads":"tare-http-"}"#
        );
        assert_eq!(serde_json::from_str::<Command>(&text).unwrap(), start);
        assert_eq!(
            serde_json::from_str::<Command>(r#"{"monitor":"stop"}"#).unwrap(),
            Command::Stop
        );
        assert_eq!(
            serde_json::from_str::<Command>(r#"{"monitor":"check"}"#).unwrap(),
            Command::Check
        );
        assert!(serde_json::from_str::<Command>(r#"{"monitor":"pause"}"#).is_err());
    }

    #[test]
    fn a_remote_record_moves_to_this_clock_and_names_its_host() {
        let r = MonitorRecord {
            started_unix_s: 1000.5,
            ..Default::default()
        };
        let here = on_this_clock(r, "srv", 0.5);
        assert_eq!(here.started_unix_s, 1000.0);
        assert_eq!(here.host.as_deref(), Some("srv"));
    }
}
