//! Request mixes against a real nginx (docs/http.md, "Request mixes"):
//! every request tare counts under a name is one line of nginx's access
//! log for that method and path, and nothing else is; the names add up
//! to the run; the same seed draws the same requests.

use std::collections::BTreeMap;
use std::time::Duration;

use tare_http::mix::{parse_requests, parse_urls, Mix};
use tare_http::{run, HttpConfig, Target};
use tare_record::LoadResult;
use tare_testbed::{Nginx, NginxOptions};

fn start_nginx() -> Nginx {
    let n = Nginx::start(&NginxOptions {
        workers: 1,
        access_log: true,
        index_html: "hello\n".into(),
    });
    for (f, body) in [("a.html", "a\n"), ("b.html", "bb\n")] {
        std::fs::write(n.dir.join("html").join(f), body).unwrap();
    }
    n
}

/// Access-log lines by `METHOD PATH`.
fn log_counts(log: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for line in log.lines() {
        let req = line.split('"').nth(1).expect("a quoted request line");
        let mut w = req.split(' ');
        let key = format!("{} {}", w.next().unwrap(), w.next().unwrap());
        *m.entry(key).or_default() += 1;
    }
    m
}

fn config(nginx: &Nginx, mix: Mix) -> HttpConfig {
    let url = format!("http://127.0.0.1:{}/", nginx.port);
    let mut c = HttpConfig::new(Target::new(&url, None, false).unwrap());
    c.load.threads = 2;
    c.load.connections = 8;
    c.mix = Some(mix);
    c
}

/// Each name's completed and in-flight requests are its access-log lines.
fn assert_names_match_log(r: &LoadResult, log: &str) {
    let lines = log_counts(log);
    let mut named = BTreeMap::new();
    for n in &r.by_name {
        *named.entry(n.request.clone()).or_default() += n.requests + n.in_flight;
    }
    named.retain(|_, v: &mut u64| *v > 0);
    assert_eq!(named, lines, "by name vs access log");
}

#[test]
fn url_file_counts_per_path_equal_access_log_lines() {
    let nginx = start_nginx();
    let port = nginx.port;
    // http_load's file: a line per URL, a path twice is twice as likely.
    let file = parse_urls(&format!(
        "http://127.0.0.1:{port}/index.html\nhttp://127.0.0.1:{port}/a.html\n/a.html\nhttp://127.0.0.1:{port}/b.html\n/missing.html\n"
    ))
    .unwrap();
    file.check_server(&format!("127.0.0.1:{port}")).unwrap();
    let mut c = config(&nginx, Mix::new(file.mix("GET", &[], b"")));
    c.load.duration = Some(Duration::from_millis(1500));
    let r = run(&c).unwrap();
    let log = nginx.stop_and_log();
    assert_eq!(r.by_name.len(), 4);
    let sum: u64 = r.by_name.iter().map(|n| n.requests).sum();
    let in_flight: u64 = r.by_name.iter().map(|n| n.in_flight).sum();
    assert_eq!((sum, in_flight), (r.requests, r.in_flight));
    assert!(r.requests > 500, "{}", r.requests);
    assert_names_match_log(&r, &log);
    // /a.html has two lines of five: drawn about twice as often as the others.
    let share = |p: &str| {
        r.by_name.iter().find(|n| n.name == p).unwrap().requests as f64 / r.requests as f64
    };
    assert!(
        (0.3..0.5).contains(&share("/a.html")),
        "{}",
        share("/a.html")
    );
    assert!(
        (0.12..0.28).contains(&share("/b.html")),
        "{}",
        share("/b.html")
    );
    // The missing page's 404s are its errors, and only its.
    let missing = r
        .by_name
        .iter()
        .find(|n| n.name == "/missing.html")
        .unwrap();
    assert_eq!(missing.errors.status, missing.requests);
    assert_eq!(r.errors.status, missing.requests);
    assert_eq!(r.errors.total(), missing.requests, "{:?}", r.errors);
}

#[test]
fn requests_file_names_add_up_to_the_total_and_to_the_log() {
    let nginx = start_nginx();
    let requests = parse_requests(
        "[[request]]\nname = \"home\"\npath = \"/index.html\"\nweight = 3\n\n\
         [[request]]\nname = \"post\"\nmethod = \"POST\"\npath = \"/a.html\"\nbody = \"x=1\"\n\n\
         [[request]]\nname = \"head\"\nmethod = \"HEAD\"\npath = \"/b.html\"\nheaders = [\"X-Mix: 1\"]\n",
    )
    .unwrap();
    let mut c = config(&nginx, Mix::new(requests));
    c.load.duration = Some(Duration::from_millis(1500));
    let r = run(&c).unwrap();
    let log = nginx.stop_and_log();
    let names: Vec<&str> = r.by_name.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["home", "post", "head"]);
    let sum: u64 = r.by_name.iter().map(|n| n.requests).sum();
    assert_eq!(sum, r.requests);
    assert_eq!(
        r.by_name.iter().map(|n| n.in_flight).sum::<u64>(),
        r.in_flight
    );
    let mut errors = tare_record::Errors::default();
    r.by_name.iter().for_each(|n| errors.add(&n.errors));
    assert_eq!(
        errors, r.errors,
        "no connect error: the names hold them all"
    );
    assert_names_match_log(&r, &log);
    // nginx refuses POST to a file (405): that name's errors, no other's.
    let by = |n: &str| r.by_name.iter().find(|x| x.name == n).unwrap();
    assert_eq!(by("post").errors.status, by("post").requests);
    assert_eq!(by("home").errors.total() + by("head").errors.total(), 0);
    // A HEAD response has no body: the connection carried on (no read errors).
    assert_eq!(r.errors.read, 0);
    assert!(by("home").requests > by("post").requests);
    for n in &r.by_name {
        assert!(n.latency_us.p50 > 0.0, "{}", n.name);
    }
}

/// The same seed draws the same requests: a count-bounded run on one
/// connection sends the same mix twice; another seed another one.
#[test]
fn the_same_seed_draws_the_same_requests() {
    let nginx = start_nginx();
    let file = parse_urls("/index.html\n/a.html\n/b.html\n").unwrap();
    let counts = |seed: u64| {
        let mut mix = Mix::new(file.mix("GET", &[], b""));
        mix.seed = seed;
        let mut c = config(&nginx, mix);
        c.load.threads = 1;
        c.load.connections = 1;
        c.load.duration = None;
        c.requests = Some(300);
        let r = run(&c).unwrap();
        assert_eq!(r.requests, 300);
        r.by_name.iter().map(|n| n.requests).collect::<Vec<_>>()
    };
    let a = counts(7);
    assert_eq!(a, counts(7));
    assert_ne!(a, counts(8));
}
