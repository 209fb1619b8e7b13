//! Health checks: poll until a real request succeeds, bounded in time.
//! A listening socket is not enough (nginx binds before its workers run;
//! postgres accepts before recovery ends), so each target's probe
//! (`Server::probe`: `Protocol::probe`) speaks its protocol; HTTP targets share [`http_get`].

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use tare_engine::Endpoint;

/// Why a probe did not find the server ready.
#[derive(Debug)]
pub(crate) struct Unready {
    pub(crate) reason: String,
    /// The server answered, and its answer does not change by waiting (an
    /// HTTP 4xx: the config does not serve the probed path): the health
    /// check stops at once instead of polling to its limit.
    pub(crate) settled: bool,
}

impl From<String> for Unready {
    /// A failure that may pass: not answering yet, an error while starting.
    fn from(reason: String) -> Unready {
        Unready {
            reason,
            settled: false,
        }
    }
}

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

/// One GET; Ok if the status line says 200. A 4xx is settled (the server
/// is up and refuses the path: waiting will not change it); a 5xx is not
/// (a proxy answers 502 until its backend listens).
pub(crate) fn http_get(ep: &Endpoint, path: &str, timeout: Duration) -> Result<(), Unready> {
    let mut s = connect(ep, timeout).map_err(|e| e.to_string())?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: tare\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
    let mut buf = [0u8; 64];
    let mut n = 0;
    while n < 12 {
        match s.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) => return Err(e.to_string().into()),
        }
    }
    let line = String::from_utf8_lossy(&buf[..n]);
    let status = line
        .strip_prefix("HTTP/1.1 ")
        .or_else(|| line.strip_prefix("HTTP/1.0 "))
        .and_then(|rest| rest.get(..3));
    match status {
        Some("200") => Ok(()),
        _ if n == 0 => Err("connection closed without a response".to_string().into()),
        _ => Err(Unready {
            reason: format!(
                "answered {:?} to GET {path}",
                line.lines().next().unwrap_or("")
            ),
            settled: status.is_some_and(|s| s.starts_with('4')),
        }),
    }
}

/// Polls `probe` until it succeeds or `limit` passes. `alive` is asked between
/// tries so a server that died is reported at once, not after the limit; a
/// settled answer (an HTTP 4xx) ends the wait at its third time in a row.
/// `netns`: the probe runs from that network namespace (where the load
/// generator will stand).
pub(crate) fn wait_healthy(
    probe: &(dyn Fn(Duration) -> Result<(), Unready> + Sync),
    netns: Option<&Path>,
    limit: Duration,
    mut alive: impl FnMut() -> Result<(), String>,
) -> Result<(), (String, f64)> {
    let start = Instant::now();
    let mut last = String::from("not tried");
    let mut settled = 0;
    let mut delay = Duration::from_millis(10);
    while start.elapsed() < limit {
        if let Err(e) = alive() {
            return Err((e, start.elapsed().as_secs_f64()));
        }
        match probe_once(probe, netns, Duration::from_secs(2)) {
            Ok(()) => return Ok(()),
            Err(e) => {
                settled = if e.settled { settled + 1 } else { 0 };
                last = e.reason;
                if settled == 3 {
                    return Err((last, start.elapsed().as_secs_f64()));
                }
            }
        }
        std::thread::sleep(delay);
        delay = (delay * 2).min(Duration::from_millis(200));
    }
    Err((last, start.elapsed().as_secs_f64()))
}

pub(crate) fn probe_once(
    probe: &(dyn Fn(Duration) -> Result<(), Unready> + Sync),
    netns: Option<&Path>,
    timeout: Duration,
) -> Result<(), Unready> {
    match netns {
        None => probe(timeout),
        // setns changes only the calling thread: use a short-lived one.
        Some(ns) => std::thread::scope(|s| {
            s.spawn(|| {
                tare_engine::netns::enter(ns).map_err(|e| e.to_string())?;
                probe(timeout)
            })
            .join()
            .unwrap_or_else(|_| Err("probe thread panicked".to_string().into()))
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
        assert!(e.reason.contains("404") && e.settled, "{e:?}");
        server.join().unwrap();
    }

    /// Regression: a config answering 404 (it does not serve the probed
    /// path) kept each deployment waiting the whole health limit (60 s)
    /// before failing. A 4xx is settled: three in a row end the wait; a
    /// 502 (a proxy whose backend is not up yet) is waited out.
    #[test]
    fn a_settled_4xx_ends_the_wait_and_a_502_does_not() {
        for (status, settled) in [("404 Not Found", true), ("502 Bad Gateway", false)] {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let ep = Endpoint::Tcp(l.local_addr().unwrap());
            l.set_nonblocking(true).unwrap();
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let s2 = stop.clone();
            let server = std::thread::spawn(move || {
                let mut answered = 0;
                while !s2.load(std::sync::atomic::Ordering::SeqCst) && answered < 1000 {
                    match l.accept() {
                        Ok((mut c, _)) => {
                            c.set_nonblocking(false).unwrap();
                            let mut b = [0u8; 256];
                            let _ = c.read(&mut b);
                            let _ = write!(c, "HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n");
                            answered += 1;
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(5)),
                    }
                }
                answered
            });
            let probe = |t| http_get(&ep, "/index.html", t);
            let limit = Duration::from_secs(3);
            let t = Instant::now();
            let (why, _) = wait_healthy(&probe, None, limit, || Ok(())).unwrap_err();
            let took = t.elapsed();
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            let answered = server.join().unwrap();
            assert!(
                why.contains(&status[..3]) && why.contains("GET /index.html"),
                "{why}"
            );
            if settled {
                assert_eq!(answered, 3, "{status}: stopped at the third 4xx");
                assert!(took < limit, "{status}: {took:?}");
            } else {
                assert!(
                    answered > 3 && took >= limit,
                    "{status}: {answered} answers in {took:?}"
                );
            }
        }
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
