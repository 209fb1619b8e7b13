//! The real nginx agrees: a seed-003-style proxy config (docs/studies.md, seed
//! 003) passes `nginx -t` before and after every advised change is applied and
//! the files are rebuilt. nginx only checks the config here: nothing is
//! started, no traffic is sent. Skipped loudly when no nginx binary is
//! installed (scripts/setup.sh installs nginx-light).

use std::path::Path;
use std::process::Command;

use tare_nginx::advise::{advise, HostFacts};
use tare_nginx::{build_files, parse, relocate, BuildOptions, ParseOptions, Status};

fn nginx() -> Option<&'static str> {
    ["/usr/sbin/nginx", "nginx"].into_iter().find(|n| {
        Command::new(n)
            .arg("-v")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// A loopback port nothing listens on now.
/// `nginx -t` on a config under `prefix`; its logs and pid stay in `prefix`.
fn nginx_t(nginx: &str, prefix: &Path, conf: &Path) -> (bool, String) {
    let out = Command::new(nginx)
        .arg("-t")
        .arg("-p")
        .arg(prefix)
        .arg("-c")
        .arg(conf)
        .arg("-e")
        .arg(prefix.join("error.log"))
        .arg("-g")
        .arg(format!("pid {};", prefix.join("nginx.pid").display()))
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_advised_change_keeps_the_config_valid_for_nginx() {
    let Some(nginx) = nginx() else {
        eprintln!("\n!!! SKIPPED: no nginx binary (apt-get install nginx-light); nginx -t not checked !!!\n");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    std::fs::create_dir_all(base.join("conf.d")).unwrap();
    let (port, backend) = (tare_testbed::free_port(), tare_testbed::free_port());
    let log = dir.path().join("access.log");
    // Seed 003's baseline, on loopback, with one include to follow.
    let conf = format!(
        "worker_processes 1;\nevents {{ worker_connections 1024; }}\nhttp {{\n    \
         include conf.d/*.conf;\n    keepalive_requests 100;\n    access_log {log};\n    \
         upstream backend {{ server 127.0.0.1:{backend}; }}\n    server {{\n        \
         listen 127.0.0.1:{port};\n        location / {{ proxy_pass http://backend; \
         proxy_set_header Host $host; }}\n        location /s {{ gzip on; gzip_comp_level 9; \
         proxy_pass http://127.0.0.1:{backend}; proxy_buffering off; }}\n    }}\n}}\n",
        log = log.display()
    );
    std::fs::write(base.join("nginx.conf"), conf).unwrap();
    std::fs::write(
        base.join("conf.d/transfer.conf"),
        "sendfile off;\ntcp_nodelay off;\n",
    )
    .unwrap();
    let main = base.join("nginx.conf");
    let (ok, err) = nginx_t(nginx, dir.path(), &main);
    assert!(ok, "the base config must be valid: {err}");

    let mut payload = parse(main.to_str().unwrap(), &ParseOptions::default());
    assert_eq!(payload.status, Status::Ok, "{:?}", payload.errors);
    let host = HostFacts {
        cpus: 2,
        nofile: Some(1024),
        somaxconn: Some(4096),
    };
    let report = advise(&payload, &host);
    assert!(
        report.advice.len() >= 8,
        "expected most rules to fire: {:?}",
        report.rules()
    );

    // Apply the changes one at a time, checking nginx accepts each step.
    let mut applied = 0;
    for (i, advice) in report.advice.iter().enumerate() {
        if advice.change.is_manual() {
            continue;
        }
        advice.change.apply(&mut payload).unwrap();
        // Each step is built into its own directory, never over the original.
        let out = dir.path().join(format!("step{i}"));
        let moved = relocate(&payload, base.to_str().unwrap(), out.to_str().unwrap());
        build_files(&moved, &out, &BuildOptions::default()).unwrap();
        let rebuilt = out.join("nginx.conf");
        let (ok, err) = nginx_t(nginx, dir.path(), &rebuilt);
        assert!(
            ok,
            "nginx -t rejects the config after {}: {err}",
            advice.rule
        );
        applied += 1;
    }
    assert!(applied >= 8, "only {applied} changes applied");
    let original = std::fs::read_to_string(&main).unwrap();
    assert!(
        original.contains("keepalive_requests 100;"),
        "the original was overwritten"
    );
    let after = advise(&payload, &host);
    assert_eq!(
        after.rules(),
        vec!["upstream-keepalive"],
        "only the manual advice (no pool for a bare address) remains"
    );
}
