//! The agent protocol: `tare agent <command>` on a host reads one JSON
//! request line on stdin, then answers with JSON event lines on stdout
//! (progress ticks, then one result or one failure). Its stdin stays open
//! as a lifeline: when it closes (the run ended, or the tare that started
//! it died and ssh closed the channel) the agent stops what it runs and
//! exits, so a killed run leaves nothing running on the host. Other lines
//! on it are further requests to the same agent ([`request_lines`]: a
//! deployed target's monitor, `crate::target`).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::install::Installed;
use crate::RemoteError;

/// One line an agent writes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    /// Progress: how long it has run, and what it is doing; while a load
    /// runs, the units it completed so far and its errors
    /// (`tare_engine::progress::live`).
    Tick {
        elapsed_s: f64,
        phase: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        done: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        errors: Option<u64>,
    },
    /// The answer.
    Done { value: serde_json::Value },
    /// Why there is no answer.
    Failed { message: String },
}

/// What the reader thread hands over.
enum Line {
    Event(Event),
    Closed,
}

/// A running agent, seen from the tare that started it.
pub struct Agent {
    host: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Line>,
    stderr: Arc<Mutex<String>>,
}

impl Agent {
    /// Starts `tare agent <command>` on the host and sends it `request`.
    pub fn start(
        inst: &Installed,
        command: &str,
        request: &impl Serialize,
    ) -> Result<Agent, RemoteError> {
        let host = inst.host.name.clone();
        let err = |message: String| RemoteError::Ssh {
            host: host.clone(),
            message,
        };
        let mut cmd = inst.host.ssh();
        cmd.arg(inst.agent_line(command))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| err(format!("cannot start ssh: {e}")))?;
        let mut stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let stderr_pipe = child.stderr.take().expect("piped");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // Anything else on stdout (a login banner) is not ours.
                if let Ok(ev) = serde_json::from_str::<Event>(&line) {
                    if tx.send(Line::Event(ev)).is_err() {
                        return;
                    }
                }
            }
            let _ = tx.send(Line::Closed);
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let tail = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr_pipe).lines() {
                let Ok(line) = line else { break };
                if let Ok(mut t) = tail.lock() {
                    // The last lines only: they say why it ended.
                    if t.len() > 4096 {
                        let cut = t.ceil_char_boundary(t.len() - 2048);
                        t.drain(..cut);
                    }
                    t.push_str(&line);
                    t.push('\n');
                }
            }
        });
        let mut text = serde_json::to_string(request).map_err(|e| err(e.to_string()))?;
        text.push('\n');
        stdin
            .write_all(text.as_bytes())
            .and_then(|()| stdin.flush())
            .map_err(|e| err(format!("sending the request: {e}")))?;
        Ok(Agent {
            host,
            child,
            stdin: Some(stdin),
            lines,
            stderr,
        })
    }

    /// The next event, waiting at most `limit`. A closed connection is an
    /// error naming the host and what ssh or the agent last said.
    pub fn next(&mut self, limit: Duration) -> Result<Event, RemoteError> {
        match self.lines.recv_timeout(limit) {
            Ok(Line::Event(e)) => Ok(e),
            Ok(Line::Closed) | Err(RecvTimeoutError::Disconnected) => {
                // Let ssh exit so its last words are read.
                let status = crate::wait::exit_within(&mut self.child, Duration::from_secs(2));
                std::thread::sleep(Duration::from_millis(50));
                let said = self.stderr.lock().map(|s| s.clone()).unwrap_or_default();
                let last = said
                    .lines()
                    .map(str::trim)
                    .rfind(|l| !l.is_empty())
                    .map(String::from);
                Err(RemoteError::Ssh {
                    host: self.host.clone(),
                    message: match (status, last) {
                        (Some(255), Some(l)) => format!("the connection was lost: {l}"),
                        (_, Some(l)) => format!("the agent ended: {l}"),
                        (Some(255), None) => "the connection was lost".into(),
                        (code, None) => {
                            format!("the agent ended (exit {code:?}) without an answer")
                        }
                    },
                })
            }
            Err(RecvTimeoutError::Timeout) => Err(RemoteError::Ssh {
                host: self.host.clone(),
                message: format!("no word from the agent for {} s", limit.as_secs()),
            }),
        }
    }

    /// Waits for the answer: ticks are skipped, each within `tick_limit`
    /// of the last line.
    pub fn answer<T: DeserializeOwned>(&mut self, tick_limit: Duration) -> Result<T, RemoteError> {
        loop {
            match self.next(tick_limit)? {
                Event::Tick { .. } => continue,
                Event::Done { value } => {
                    return serde_json::from_value(value).map_err(|e| RemoteError::Ssh {
                        host: self.host.clone(),
                        message: format!("an answer tare cannot read: {e}"),
                    })
                }
                Event::Failed { message } => {
                    return Err(RemoteError::Ssh {
                        host: self.host.clone(),
                        message,
                    })
                }
            }
        }
    }

    /// Sends one line on the lifeline (`stop`).
    pub fn say(&mut self, line: &str) -> Result<(), RemoteError> {
        let host = self.host.clone();
        let stdin = self.stdin.as_mut().ok_or_else(|| RemoteError::Ssh {
            host: host.clone(),
            message: "the agent's input is closed".into(),
        })?;
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| stdin.flush())
            .map_err(|e| RemoteError::Ssh {
                host,
                message: format!("the connection was lost: {e}"),
            })
    }

    /// Closes the lifeline and waits up to `limit` for ssh to end (the
    /// agent stops what it runs), then kills the local ssh.
    pub fn close(&mut self, limit: Duration) {
        self.stdin.take();
        if crate::wait::exit_within(&mut self.child, limit).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.close(Duration::from_secs(10));
    }
}

/// The agent's side of one request: reads it from stdin, and starts the
/// lifeline watcher, which sets the returned flag when stdin closes or says
/// `stop`.
pub fn request<T: DeserializeOwned>() -> Result<(T, Arc<AtomicBool>), String> {
    request_lines().map(|(req, stop, _)| (req, stop))
}

/// [`request`], with every other line the lifeline carries handed over in
/// order (further requests to a long-lived agent).
pub(crate) fn request_lines<T: DeserializeOwned>(
) -> Result<(T, Arc<AtomicBool>, Receiver<String>), String> {
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| format!("reading the request: {e}"))?;
    let req =
        serde_json::from_str(&line).map_err(|e| format!("a request tare cannot read: {e}"))?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("agent-lifeline".into())
        .spawn(move || {
            let mut line = String::new();
            loop {
                line.clear();
                match std::io::stdin().read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if line.trim() == "stop" => break,
                    // Nobody listening for more is not an error.
                    Ok(_) => drop(tx.send(line.trim().to_string())),
                }
            }
            flag.store(true, Ordering::SeqCst);
        })
        .map_err(|e| e.to_string())?;
    Ok((req, stop, rx))
}

/// Writes one event line (the agent's side). A closed stdout means the
/// tare that asked is gone: the caller's lifeline flag says so soon.
pub fn emit(event: &Event) {
    let mut out = std::io::stdout().lock();
    if let Ok(text) = serde_json::to_string(event) {
        let _ = writeln!(out, "{text}").and_then(|()| out.flush());
    }
}

/// How often an agent ticks: often enough for a live progress line, rare
/// enough that a tick costs nothing next to the load.
pub(crate) const TICK: Duration = Duration::from_millis(500);

/// Ticks every [`TICK`] until `done` is set: the tare that asked sees the
/// agent is alive and, while a load runs in this process, how far it got
/// (the agent's side).
pub fn ticker(phase: &str, done: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    let phase = phase.to_string();
    std::thread::spawn(move || {
        let start = std::time::Instant::now();
        let every = TICK.as_secs_f64();
        let mut next = every;
        while !done.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
            let elapsed = start.elapsed().as_secs_f64();
            if elapsed >= next {
                next += every;
                let live = tare_engine::progress::live();
                emit(&Event::Tick {
                    elapsed_s: elapsed,
                    phase: phase.clone(),
                    done: live.map(|l| l.0),
                    errors: live.map(|l| l.1),
                });
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_tagged_json_lines() {
        let e = Event::Done {
            value: serde_json::json!({"a": 1}),
        };
        let text = serde_json::to_string(&e).unwrap();
        assert_eq!(text, r#"{"event":"done","value":{"a":1}}"#);
        let t: Event =
            serde_json::from_str(r#"{"event":"tick","elapsed_s":1.5,"phase":"load"}"#).unwrap();
        assert_eq!(
            t,
            Event::Tick {
                elapsed_s: 1.5,
                phase: "load".into(),
                done: None,
                errors: None,
            }
        );
        let t = Event::Tick {
            elapsed_s: 2.0,
            phase: "load".into(),
            done: Some(1200),
            errors: Some(3),
        };
        let text = serde_json::to_string(&t).unwrap();
        assert!(text.contains(r#""done":1200,"errors":3"#), "{text}");
        assert_eq!(serde_json::from_str::<Event>(&text).unwrap(), t);
        assert!(serde_json::from_str::<Event>(r#"{"event":"other"}"#).is_err());
    }
}
