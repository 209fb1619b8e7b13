//! An external tool's argument list with placeholders, read once into
//! [`Template`]s and filled per cell and trial ([`Template::fill`]):
//! `{url}`, `{host}`, `{port}`, `{socket}` (the cell's address),
//! `{connections}`, `{threads}`, `{duration}` (whole seconds, at least 1)
//! from the cell's load. `{{` and `}}` are literal braces.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A value a placeholder stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Slot {
    Url,
    Host,
    Port,
    Socket,
    Connections,
    Threads,
    Duration,
}

impl Slot {
    const ALL: [Slot; 7] = [
        Slot::Url,
        Slot::Host,
        Slot::Port,
        Slot::Socket,
        Slot::Connections,
        Slot::Threads,
        Slot::Duration,
    ];

    fn name(self) -> &'static str {
        match self {
            Slot::Url => "url",
            Slot::Host => "host",
            Slot::Port => "port",
            Slot::Socket => "socket",
            Slot::Connections => "connections",
            Slot::Threads => "threads",
            Slot::Duration => "duration",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
enum Piece {
    Text(String),
    Slot(Slot),
}

/// One argument, read: text and placeholders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
}

/// What the placeholders stand for in one run.
#[derive(Clone, Debug, Default)]
pub struct Values {
    pub url: String,
    /// TCP only.
    pub host: Option<String>,
    pub port: Option<u16>,
    /// A Unix socket's path only.
    pub socket: Option<String>,
    pub connections: u64,
    pub threads: u64,
    pub duration_s: u64,
}

impl Template {
    /// Reads `arg`; an unknown placeholder or a lone brace is an error
    /// naming it.
    pub fn parse(arg: &str) -> Result<Template, String> {
        let mut pieces = Vec::new();
        let mut text = String::new();
        let mut rest = arg;
        while let Some(i) = rest.find(['{', '}']) {
            text.push_str(&rest[..i]);
            let tail = &rest[i..];
            if tail.starts_with("{{") || tail.starts_with("}}") {
                text.push_str(&tail[..1]);
                rest = &tail[2..];
                continue;
            }
            if tail.starts_with('}') {
                return Err(format!("`{arg}`: a `}}` with no `{{` (write `}}}}`)"));
            }
            let end = tail
                .find('}')
                .ok_or_else(|| format!("`{arg}`: a `{{` with no `}}` (write `{{{{`)"))?;
            let name = &tail[1..end];
            let slot = Slot::ALL
                .into_iter()
                .find(|s| s.name() == name)
                .ok_or_else(|| {
                    let known: Vec<String> = Slot::ALL
                        .iter()
                        .map(|s| format!("{{{}}}", s.name()))
                        .collect();
                    format!("`{{{name}}}` is not a placeholder ({})", known.join(", "))
                })?;
            if !text.is_empty() {
                pieces.push(Piece::Text(std::mem::take(&mut text)));
            }
            pieces.push(Piece::Slot(slot));
            rest = &tail[end + 1..];
        }
        text.push_str(rest);
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        Ok(Template { pieces })
    }

    /// The argument for one run; a placeholder with no value here (a
    /// `{port}` of a cell reached over a Unix socket) is an error.
    pub fn fill(&self, v: &Values) -> Result<String, String> {
        let mut out = String::new();
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Slot(s) => out.push_str(&value(*s, v).ok_or_else(|| {
                    let over = if v.socket.is_some() {
                        "a Unix socket"
                    } else {
                        "TCP"
                    };
                    format!(
                        "`{{{}}}` has no value: this cell is reached over {over}",
                        s.name()
                    )
                })?),
            }
        }
        Ok(out)
    }

    /// Whether it holds `slot`.
    pub fn uses(&self, slot: Slot) -> bool {
        self.pieces.contains(&Piece::Slot(slot))
    }
}

fn value(s: Slot, v: &Values) -> Option<String> {
    Some(match s {
        Slot::Url => v.url.clone(),
        Slot::Host => v.host.clone()?,
        Slot::Port => v.port?.to_string(),
        Slot::Socket => v.socket.clone()?,
        Slot::Connections => v.connections.to_string(),
        Slot::Threads => v.threads.to_string(),
        Slot::Duration => v.duration_s.to_string(),
    })
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in &self.pieces {
            match p {
                Piece::Text(t) => f.write_str(&t.replace('{', "{{").replace('}', "}}"))?,
                Piece::Slot(s) => write!(f, "{{{}}}", s.name())?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp() -> Values {
        Values {
            url: "http://127.0.0.1:8080/".into(),
            host: Some("127.0.0.1".into()),
            port: Some(8080),
            connections: 50,
            threads: 2,
            duration_s: 3,
            ..Values::default()
        }
    }

    #[test]
    fn placeholders_are_filled_and_braces_escaped() {
        let t = Template::parse("-c{connections}").unwrap();
        assert_eq!(t.fill(&tcp()).unwrap(), "-c50");
        let t = Template::parse("http://{host}:{port}/x?a={{b}}").unwrap();
        assert_eq!(t.fill(&tcp()).unwrap(), "http://127.0.0.1:8080/x?a={b}");
        assert_eq!(t.to_string(), "http://{host}:{port}/x?a={{b}}");
        assert!(Template::parse("-d{duration}s")
            .unwrap()
            .uses(Slot::Duration));
    }

    #[test]
    fn unknown_placeholders_lone_braces_and_missing_values_are_errors() {
        let e = Template::parse("{hots}").unwrap_err();
        assert!(e.contains("`{hots}` is not a placeholder ({url}"), "{e}");
        assert!(Template::parse("a{").is_err());
        assert!(Template::parse("a}").is_err());
        let e = Template::parse("{socket}")
            .unwrap()
            .fill(&tcp())
            .unwrap_err();
        assert!(e.contains("reached over TCP"), "{e}");
    }
}
