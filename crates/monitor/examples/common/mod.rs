//! What the overhead examples share: the server child, the quick
//! experiment's load, their arguments and the median of a side's rounds.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// In the `--serve-child` process: runs tare serve (in its own process, as
/// `tare run` deploys it natively), prints its port and never returns.
/// Otherwise starts that child and returns it with the URL it serves.
pub(crate) fn server() -> (Child, String) {
    if std::env::args().nth(1).as_deref() == Some("--serve-child") {
        let cfg = tare_serve::ServeConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            threads: 1,
            ..Default::default()
        };
        let server = tare_serve::Server::start(cfg).expect("tare serve starts");
        println!("{}", server.local_addr().unwrap().port());
        server.wait();
        std::process::exit(0);
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .arg("--serve-child")
        .stdout(Stdio::piped())
        .spawn()
        .expect("server child starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line.trim().parse().expect("child prints its port");
    (child, format!("http://127.0.0.1:{port}/"))
}

/// The quick experiment's load (`examples/quick.toml`): 1 thread, 32
/// connections, 0.5 s warm-up + 2 s.
pub(crate) fn quick_load(url: &str) -> tare_http::HttpConfig {
    let mut c = tare_http::HttpConfig::new(tare_http::Target::new(url, None, false).unwrap());
    c.load.threads = 1;
    c.load.connections = 32;
    c.load.warmup = Duration::from_millis(500);
    c.load.duration = Some(Duration::from_secs(2));
    c
}

/// The command line's `i`th argument, or `default` when it is absent or
/// does not parse.
pub(crate) fn arg<T: std::str::FromStr>(i: usize, default: T) -> T {
    std::env::args()
        .nth(i)
        .and_then(|a| a.parse().ok())
        .unwrap_or(default)
}

/// Stops the server child and returns the ratio of the medians of the
/// rounds `with` and `without`, with both medians.
pub(crate) fn finish(mut child: Child, with: &mut [f64], without: &mut [f64]) -> (f64, f64, f64) {
    let _ = child.kill();
    let _ = child.wait();
    let (w, wo) = (median(with), median(without));
    (w / wo, w, wo)
}

pub(crate) fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
