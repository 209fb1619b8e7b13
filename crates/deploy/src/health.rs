//! Health checks: poll until a real request succeeds, bounded in time.
//! A listening socket is not enough (nginx binds before its workers run;
//! postgres accepts before recovery ends), so each target's probe
//! (`Target::probe`) speaks its protocol; HTTP targets share [`http_get`].

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use tare_engine::Endpoint;

/// What a stream to the server needs.
pub(crate) trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

pub(crate) fn connect(ep: &Endpoint, timeout: Duration) -> std::io::Result<Box<dyn Stream>> {
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

/// Polls `probe` until it succeeds or `limit` passes. `alive` is asked between
/// tries so a server that died is reported at once, not after the limit.
/// `netns`: the probe runs from that network namespace (where the load
/// generator will stand).
pub(crate) fn wait_healthy(
    probe: &(dyn Fn(Duration) -> Result<(), String> + Sync),
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
        match probe_once(probe, netns, Duration::from_secs(2)) {
            Ok(()) => return Ok(()),
            Err(e) => last = e,
        }
        std::thread::sleep(delay);
        delay = (delay * 2).min(Duration::from_millis(200));
    }
    Err((last, start.elapsed().as_secs_f64()))
}

fn probe_once(
    probe: &(dyn Fn(Duration) -> Result<(), String> + Sync),
    netns: Option<&Path>,
    timeout: Duration,
) -> Result<(), String> {
    match netns {
        None => probe(timeout),
        // setns changes only the calling thread: use a short-lived one.
        Some(ns) => std::thread::scope(|s| {
            s.spawn(|| {
                tare_engine::netns::enter(ns).map_err(|e| e.to_string())?;
                probe(timeout)
            })
            .join()
            .unwrap_or_else(|_| Err("probe thread panicked".into()))
        }),
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
        let probe = |t| http_get(&ep, "/", t);
        let r = wait_healthy(&probe, None, Duration::from_millis(300), || Ok(()));
        assert!(r.is_err());
        assert!(t.elapsed() < Duration::from_secs(3));
    }
}
