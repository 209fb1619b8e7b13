//! Health checks: poll until a real request succeeds, bounded in time.
//! A listening socket is not enough (nginx binds before its workers run;
//! postgres accepts before recovery ends), so each probe speaks the protocol.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tare_engine::Endpoint;

use crate::targets::Probe;

/// What a stream to the server needs.
trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

fn connect(ep: &Endpoint, timeout: Duration) -> std::io::Result<Box<dyn Stream>> {
    Ok(match ep {
        Endpoint::Tcp(a) => {
            let s = TcpStream::connect_timeout(a, timeout)?;
            s.set_read_timeout(Some(timeout))?;
            s.set_write_timeout(Some(timeout))?;
            Box::new(s)
        }
        Endpoint::Unix(p) => {
            let s = UnixStream::connect(p)?;
            s.set_read_timeout(Some(timeout))?;
            s.set_write_timeout(Some(timeout))?;
            Box::new(s)
        }
    })
}

/// One GET; Ok if the status line says 200.
pub(crate) fn http_get(ep: &Endpoint, path: &str, timeout: Duration) -> Result<(), String> {
    let mut s = connect(ep, timeout).map_err(|e| e.to_string())?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: tare\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
    let mut buf = [0u8; 64];
    let mut n = 0;
    while n < 12 {
        match s.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) => return Err(e.to_string()),
        }
    }
    let line = String::from_utf8_lossy(&buf[..n]);
    if line.starts_with("HTTP/1.1 200") || line.starts_with("HTTP/1.0 200") {
        Ok(())
    } else if n == 0 {
        Err("connection closed without a response".into())
    } else {
        Err(format!("answered {:?}", line.lines().next().unwrap_or("")))
    }
}

/// A v3 startup as user postgres to database postgres; Ok at ReadyForQuery.
pub(crate) fn pg_ready(ep: &Endpoint, timeout: Duration) -> Result<(), String> {
    let mut s = connect(ep, timeout).map_err(|e| e.to_string())?;
    let mut body = Vec::new();
    body.extend_from_slice(&196608u32.to_be_bytes()); // protocol 3.0
    for kv in ["user", "postgres", "database", "postgres"] {
        body.extend_from_slice(kv.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut msg = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    msg.extend_from_slice(&body);
    s.write_all(&msg).map_err(|e| e.to_string())?;
    // Messages: 1 type byte, 4 length bytes (including themselves), payload.
    for _ in 0..64 {
        let mut head = [0u8; 5];
        s.read_exact(&mut head).map_err(|e| e.to_string())?;
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut payload = vec![0u8; len.saturating_sub(4).min(1 << 20)];
        s.read_exact(&mut payload).map_err(|e| e.to_string())?;
        match head[0] {
            b'Z' => {
                let _ = s.write_all(&[b'X', 0, 0, 0, 4]); // Terminate
                return Ok(());
            }
            b'E' => {
                let text: String = payload
                    .split(|b| *b == 0)
                    .filter(|f| f.first() == Some(&b'M'))
                    .map(|f| String::from_utf8_lossy(&f[1..]).into_owned())
                    .collect();
                return Err(format!("server error: {text}"));
            }
            b'R' if payload.len() >= 4 && payload[..4] != [0, 0, 0, 0] => {
                return Err("server asks for a password (tare's clusters use trust)".into())
            }
            _ => {}
        }
    }
    Err("no ReadyForQuery".into())
}

/// Polls `probe` until it succeeds or `limit` passes. `alive` is asked between
/// tries so a server that died is reported at once, not after the limit.
/// `netns`: the probe runs from that network namespace (lab-client).
pub(crate) fn wait_healthy(
    ep: &Endpoint,
    probe: &Probe,
    netns: Option<&Path>,
    limit: Duration,
    mut alive: impl FnMut() -> Result<(), String>,
) -> Result<(), (String, f64)> {
    let start = Instant::now();
    let mut last = String::from("not tried");
    let mut delay = Duration::from_millis(10);
    while start.elapsed() < limit {
        if let Err(e) = alive() {
            return Err((e, start.elapsed().as_secs_f64()));
        }
        let attempt = probe_once(
            ep,
            probe,
            netns.map(Path::to_path_buf),
            Duration::from_secs(2),
        );
        match attempt {
            Ok(()) => return Ok(()),
            Err(e) => last = e,
        }
        std::thread::sleep(delay);
        delay = (delay * 2).min(Duration::from_millis(200));
    }
    Err((last, start.elapsed().as_secs_f64()))
}

fn probe_once(
    ep: &Endpoint,
    probe: &Probe,
    netns: Option<PathBuf>,
    timeout: Duration,
) -> Result<(), String> {
    let run = {
        let ep = ep.clone();
        let probe = probe.clone();
        move || match &probe {
            Probe::Http { path } => http_get(&ep, path, timeout),
            Probe::Postgres => pg_ready(&ep, timeout),
        }
    };
    match netns {
        None => run(),
        // setns changes only the calling thread: use a short-lived one.
        Some(ns) => std::thread::spawn(move || {
            tare_engine::netns::enter(&ns).map_err(|e| e.to_string())?;
            run()
        })
        .join()
        .unwrap_or_else(|_| Err("probe thread panicked".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn http_probe_accepts_200_and_rejects_others() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let ep = Endpoint::Tcp(l.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            for status in ["200 OK", "404 Not Found"] {
                let (mut c, _) = l.accept().unwrap();
                let mut b = [0u8; 256];
                let _ = c.read(&mut b);
                let _ = write!(c, "HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n");
            }
        });
        assert!(http_get(&ep, "/", Duration::from_secs(2)).is_ok());
        let e = http_get(&ep, "/", Duration::from_secs(2)).unwrap_err();
        assert!(e.contains("404"), "{e}");
        server.join().unwrap();
    }

    #[test]
    fn wait_gives_up_within_its_limit_on_a_closed_port() {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let ep = Endpoint::Tcp(port);
        let t = Instant::now();
        let r = wait_healthy(
            &ep,
            &Probe::Http { path: "/".into() },
            None,
            Duration::from_millis(300),
            || Ok(()),
        );
        assert!(r.is_err());
        assert!(t.elapsed() < Duration::from_secs(3));
    }
}
