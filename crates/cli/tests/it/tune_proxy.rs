//! `tare tune` on a reverse proxy (seed 003's set-up: docs/studies.md): a
//! deliberately bad proxy config (no upstream connection pool, so nginx opens
//! a backend connection per request; an unbuffered access log; proxy
//! buffering off) measured in front of a real `tare serve` backend. The
//! session must keep the upstream keep-alive change and write a tuned config
//! that has it and parses. No speed is asserted, only the decision. Configs
//! tare cannot point at its backend fail at once, in one line, exit 2.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TARE: &str = env!("CARGO_BIN_EXE_tare");

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("tare-{name}-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tune(args: &[&str]) -> Output {
    Command::new(TARE).arg("tune").args(args).output().unwrap()
}

/// Server processes still running from deployments of process `pid`
/// (deployment directories are /tmp/tare-<run>-<pid>-<n>).
fn servers_of(pid: u32) -> Vec<String> {
    let ps = Command::new("ps").args(["-eo", "args"]).output().unwrap();
    String::from_utf8_lossy(&ps.stdout)
        .lines()
        .filter(|l| l.contains("/tare-") && l.contains(&format!("-{pid}-")))
        .map(str::to_string)
        .collect()
}

/// Everything right except the upstream pool, the log and buffering, so the
/// session measures three changes and stays short.
fn bad_proxy(log_dir: &Path) -> String {
    format!(
        "worker_processes auto;\nworker_rlimit_nofile 65535;\n\
         events {{\n    worker_connections 4096;\n    use epoll;\n    multi_accept on;\n}}\n\
         http {{\n    sendfile on;\n    tcp_nopush on;\n    tcp_nodelay on;\n    \
         keepalive_timeout 65;\n    keepalive_requests 10000;\n    \
         access_log {}/access.log;\n    \
         upstream app {{\n        server 10.20.30.40:8080;\n    }}\n    \
         server {{\n        listen 8080 backlog=4096;\n        location / {{\n            \
         proxy_pass http://app;\n            proxy_buffering off;\n        }}\n    }}\n}}\n",
        log_dir.display()
    )
}

#[test]
fn tune_keeps_the_upstream_connection_pool() {
    let dir = TempDir::new("tune-proxy");
    let conf = dir.write("proxy.conf", &bad_proxy(&dir.0));
    let out = dir.0.join("out");
    let json = dir.0.join("tuning.json");
    let child = Command::new(TARE)
        .arg("tune")
        .arg(&conf)
        // Short trials, as in tune's own test (docs/testing.md, "The tune
        // test"): a connect per request is what the pool removes, far
        // beyond a 400 ms trial's noise with nothing else running.
        .args(["-c", "50", "-t", "2", "-d", "400ms", "--warmup", "100ms"])
        .args(["--trials", "5", "--cooldown", "50ms", "--rounds", "1"])
        .arg("--out")
        .arg(&out)
        .arg("--json")
        .arg(&json)
        .spawn()
        .unwrap();
    let pid = child.id();
    let result = child.wait_with_output().unwrap();
    assert!(result.status.success(), "tare tune failed");
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let table = serde_json::to_string_pretty(&t["rounds"]).unwrap();
    assert_eq!(t["target"], "nginx-proxy");

    // Every change the advisor had for this config was measured...
    let verdicts = t["rounds"][0]["verdicts"].as_array().unwrap();
    let rules: Vec<&str> = verdicts
        .iter()
        .map(|v| v["rule"].as_str().unwrap())
        .collect();
    for rule in [
        "upstream-keepalive",
        "access-log-buffered",
        "proxy-buffering",
    ] {
        assert!(rules.contains(&rule), "{rule} not measured: {rules:?}");
    }
    // ...and the pool kept: a connect per request is what it removes.
    let kept: Vec<&str> = t["kept"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert!(kept.contains(&"upstream-keepalive"), "{kept:?}\n{table}");

    // The tuned config has all three parts of the change, keeps the user's
    // own upstream address (tare only pointed its copy at tare serve), parses.
    let tuned_path = PathBuf::from(t["tuned"].as_str().expect("a tuned config"));
    let tuned = std::fs::read_to_string(&tuned_path).unwrap();
    for s in [
        "keepalive 100;",
        "proxy_http_version 1.1;",
        "proxy_set_header Connection '';",
        "server 10.20.30.40:8080;",
    ] {
        assert!(tuned.contains(s), "{s} missing:\n{tuned}");
    }
    let payload = tare_nginx::parse(
        tuned_path.to_str().unwrap(),
        &tare_nginx::ParseOptions::default(),
    );
    assert_eq!(payload.status, tare_nginx::Status::Ok, "{tuned}");
    // The measured runs really were the proxy target.
    let exp = std::fs::read_to_string(out.join("round1-alone.toml")).unwrap();
    assert!(exp.contains("kind = \"nginx-proxy\""), "{exp}");
    assert_eq!(
        servers_of(pid),
        Vec::<String>::new(),
        "servers left running"
    );
}

#[test]
fn configs_tare_cannot_proxy_are_one_line_errors() {
    let dir = TempDir::new("tune-proxy-bad");
    let stat = dir.write(
        "static.conf",
        "events {}\nhttp {\n    server {\n        listen 80;\n        root /www;\n    }\n}\n",
    );
    let proxy = |pass: &str| {
        format!(
            "events {{}}\nhttp {{\n    server {{\n        listen 80;\n        location / {{\n            {pass};\n        }}\n    }}\n}}\n"
        )
    };
    let tls = dir.write("tls.conf", &proxy("proxy_pass https://10.0.0.1"));
    let var = dir.write("var.conf", &proxy("proxy_pass http://$upstream_host"));
    let fcgi = dir.write(
        "fcgi.conf",
        &proxy(
            "proxy_pass http://10.0.0.1:8080; } location ~ \\.php$ { fastcgi_pass 10.0.0.2:9000",
        ),
    );
    let plain = dir.write("plain.conf", &proxy("proxy_pass http://10.0.0.1:8080"));
    let p = |p: &Path| p.to_str().unwrap().to_string();
    for (args, needle) in [
        (
            vec![p(&stat), "--target".into(), "nginx-proxy".into()],
            "no proxy_pass",
        ),
        (vec![p(&tls)], "only http://"),
        (vec![p(&var)], "variable"),
        (vec![p(&fcgi)], "non-HTTP"),
        (
            vec![p(&plain), "--target".into(), "nginx".into()],
            "it has proxy_pass",
        ),
    ] {
        let work = dir.0.join("work");
        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
        args.extend(["--out", work.to_str().unwrap()]);
        let out = tune(&args);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("tare: "), "{err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        // Refused before anything was measured or written.
        assert!(!work.exists(), "{args:?}: wrote {}", work.display());
    }
}
