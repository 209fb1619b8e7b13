//! Each advice rule fires on a config that needs it and stays quiet on one that
//! does not; applying its change makes it quiet; the changed config still parses.
//!
//! The base config is seed 000's and seed 003's tuned settings together
//! (docs/studies.md): no rule may fire on it. Each case breaks exactly one
//! thing and expects exactly its rule.

use tare_nginx::advise::{advise, Advice, HostFacts, Priority, Report};
use tare_nginx::{parse, BuildOptions, ParseOptions, Payload, Status};

const TUNED: &str = r#"
worker_processes auto;
worker_rlimit_nofile 65535;
events { worker_connections 4096; use epoll; multi_accept on; }
http {
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 65;
    keepalive_requests 10000;
    access_log /var/log/nginx/access.log combined buffer=32k flush=5s;
    gzip on;
    gzip_comp_level 2;
    gzip_types text/plain text/css application/json application/javascript;
    upstream backend { server 127.0.0.1:8080; keepalive 100; }
    server {
        listen 80 backlog=4096;
        location / {
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
        location /static { root /srv; }
    }
}
"#;

/// A 4-CPU machine with Debian's default soft `ulimit -n` and Linux 5.4+'s somaxconn.
const HOST: HostFacts = HostFacts {
    cpus: 4,
    nofile: Some(1024),
    somaxconn: Some(4096),
};

struct Parsed {
    _dir: tempfile::TempDir,
    payload: Payload,
}

fn parse_text(conf: &str) -> Parsed {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nginx.conf");
    std::fs::write(&path, conf).unwrap();
    let payload = parse(path.to_str().unwrap(), &ParseOptions::default());
    assert_eq!(
        payload.status,
        Status::Ok,
        "test config does not parse: {:?}",
        payload.errors
    );
    Parsed { _dir: dir, payload }
}

fn report(conf: &str, host: HostFacts) -> Report {
    advise(&parse_text(conf).payload, &host)
}

/// `TUNED` with one substitution (which must apply).
fn variant(from: &str, to: &str) -> String {
    assert!(TUNED.contains(from), "{from:?} is not in the base config");
    TUNED.replacen(from, to, 1)
}

#[test]
fn tuned_config_gets_no_advice() {
    let r = report(TUNED, HOST);
    assert!(r.advice.is_empty(), "unexpected advice: {:?}", r.rules());
}

/// Each case: the rule, the substitution that makes the config need it, the host.
fn cases() -> Vec<(&'static str, String, HostFacts)> {
    let few_fds = HostFacts {
        nofile: Some(1024),
        ..HOST
    };
    let small_somaxconn = HostFacts {
        somaxconn: Some(1024),
        ..HOST
    };
    vec![
        ("worker-processes", variant("worker_processes auto;", "worker_processes 1;"), HOST),
        ("worker-processes", variant("worker_processes auto;", ""), HOST),
        ("worker-processes", variant("worker_processes auto;", "worker_processes 16;"), HOST),
        ("worker-rlimit-nofile", variant("worker_rlimit_nofile 65535;", ""), few_fds),
        ("worker-rlimit-nofile", variant("worker_rlimit_nofile 65535;", "worker_rlimit_nofile 4096;"), HOST),
        ("worker-connections", variant("worker_connections 4096;", "worker_connections 4095;"), HOST),
        ("worker-connections", variant("worker_connections 4096;", ""), HOST),
        ("use-epoll", variant("use epoll;", ""), HOST),
        ("use-epoll", variant("use epoll;", "use poll;"), HOST),
        ("multi-accept", variant("multi_accept on;", ""), HOST),
        ("multi-accept", variant("multi_accept on;", "multi_accept off;"), HOST),
        ("sendfile-tcp-nopush", variant("tcp_nopush on;", ""), HOST),
        ("sendfile-tcp-nopush", variant("sendfile on;", "sendfile off;"), HOST),
        ("tcp-nodelay", variant("root /srv;", "root /srv; tcp_nodelay off;"), HOST),
        ("keepalive-timeout", variant("keepalive_timeout 65;", "keepalive_timeout 0;"), HOST),
        ("keepalive-requests", variant("keepalive_requests 10000;", "keepalive_requests 100;"), HOST),
        (
            "access-log-buffered",
            variant("combined buffer=32k flush=5s;", ";"),
            HOST,
        ),
        (
            "access-log-buffered",
            variant("root /srv;", "root /srv; access_log /var/log/static.log main;"),
            HOST,
        ),
        ("gzip-level", variant("gzip_comp_level 2;", "gzip_comp_level 9;"), HOST),
        ("gzip-types", variant("gzip_types text/plain text/css application/json application/javascript;", ""), HOST),
        ("listen-backlog", variant("listen 80 backlog=4096;", "listen 80;"), HOST),
        ("listen-backlog", variant("listen 80 backlog=4096;", "listen 80 backlog=65535;"), HOST),
        ("listen-backlog", variant("listen 80 backlog=4096;", "listen 80;"), small_somaxconn),
        ("upstream-keepalive", variant("keepalive 100;", ""), HOST),
        ("upstream-keepalive", variant("proxy_http_version 1.1;", ""), HOST),
        ("upstream-keepalive", variant("proxy_set_header Connection \"\";", ""), HOST),
        (
            "upstream-keepalive",
            variant("proxy_set_header Connection \"\";", "proxy_set_header Connection close;"),
            HOST,
        ),
        ("upstream-keepalive", variant("location /static { root /srv; }", "location /direct { proxy_pass http://127.0.0.1:9000; proxy_http_version 1.1; proxy_set_header Connection \"\"; }"), HOST),
        (
            "proxy-buffering",
            variant("proxy_http_version 1.1;", "proxy_http_version 1.1; proxy_buffering off;"),
            HOST,
        ),
        ("proxy-buffering", variant("sendfile on;", "sendfile on; proxy_buffering off;"), HOST),
    ]
}

#[test]
fn each_rule_fires_alone_on_a_config_that_needs_it() {
    for (rule, conf, host) in cases() {
        let r = report(&conf, host);
        assert_eq!(r.rules(), vec![rule], "expected only {rule} on:\n{conf}");
        let a = &r.advice[0];
        assert!(!a.reason.is_empty() && !a.effect.is_empty() && !a.title.is_empty());
    }
}

#[test]
fn every_rule_has_a_case() {
    let covered: Vec<&str> = cases().iter().map(|c| c.0).collect();
    for rule in tare_nginx::advise::rules::RULES {
        assert!(
            covered.contains(&rule.id),
            "rule {} has no test case",
            rule.id
        );
    }
}

/// Applies an advice's change, checks the rule is then quiet and that the
/// built text parses cleanly again.
fn apply_and_recheck(conf: &str, host: HostFacts, mut parsed: Parsed, advice: &Advice) {
    advice.change.apply(&mut parsed.payload).unwrap();
    // Kernel settings are the caller's to apply; recheck as if they were.
    let mut host = host;
    for s in &advice.change.sysctls {
        assert_eq!(s.name, "net.core.somaxconn");
        host.somaxconn = Some(s.value.parse().unwrap());
    }
    let after = advise(&parsed.payload, &host);
    assert!(
        !after.rules().contains(&advice.rule.as_str()),
        "{} still fires after its change:\n{conf}",
        advice.rule
    );
    let text = tare_nginx::build_file(&parsed.payload.config[0].parsed, &BuildOptions::default());
    let again = parse_text(&text);
    assert_eq!(again.payload.status, Status::Ok);
}

#[test]
fn applying_the_change_silences_the_rule() {
    for (rule, conf, host) in cases() {
        let parsed = parse_text(&conf);
        let r = advise(&parsed.payload, &host);
        let advice = &r.advice[0];
        if advice.change.is_manual() {
            // Only advice that needs a person (a kernel setting, a new upstream) may be manual.
            assert!(
                !advice.change.sysctls.is_empty() || advice.reason.contains("define `upstream"),
                "{rule}: no edits and no reason why"
            );
            continue;
        }
        apply_and_recheck(&conf, host, parsed, advice);
    }
}

/// tare's levels over the seeds' rankings (see `Priority`).
#[test]
fn priorities_follow_the_seeds() {
    let p = |conf: &str, host| report(conf, host).advice[0].priority;
    assert_eq!(
        p(
            &variant("worker_processes auto;", "worker_processes 1;"),
            HOST
        ),
        Priority::High
    );
    assert_eq!(p(&variant("keepalive 100;", ""), HOST), Priority::High);
    assert_eq!(p(&variant("tcp_nopush on;", ""), HOST), Priority::Medium);
    assert_eq!(
        p(&variant("gzip_comp_level 2;", "gzip_comp_level 9;"), HOST),
        Priority::Low
    );
    // An explicit non-epoll method is worse than leaving nginx to pick epoll.
    assert_eq!(p(&variant("use epoll;", ""), HOST), Priority::Low);
    assert_eq!(
        p(&variant("use epoll;", "use select;"), HOST),
        Priority::High
    );
}

#[test]
fn host_facts_decide_the_fd_and_backlog_rules() {
    let no_rlimit = variant("worker_rlimit_nofile 65535;", "");
    assert!(report(
        &no_rlimit,
        HostFacts {
            nofile: Some(1024),
            ..HOST
        }
    )
    .rules()
    .contains(&"worker-rlimit-nofile"));
    assert!(report(
        &no_rlimit,
        HostFacts {
            nofile: Some(1_048_576),
            ..HOST
        }
    )
    .advice
    .is_empty());
    let big_backlog = variant("listen 80 backlog=4096;", "listen 80 backlog=65535;");
    assert!(report(
        &big_backlog,
        HostFacts {
            somaxconn: Some(65535),
            ..HOST
        }
    )
    .advice
    .is_empty());
    let r = report(&big_backlog, HOST);
    assert_eq!(r.advice[0].change.sysctls[0].value, "65535");
    assert_eq!(
        report(TUNED, HostFacts { cpus: 64, ..HOST }).advice.len(),
        0,
        "auto scales with CPUs"
    );
}

#[test]
fn seed_configs_get_the_advice_the_seeds_gave() {
    let corpus = |name: &str| {
        parse(
            &format!("tests/corpus/{name}/nginx.conf"),
            &ParseOptions::default(),
        )
    };
    // Seed 003's baseline lacks everything its tuned config adds.
    let baseline = advise(&corpus("seed003-baseline"), &HOST);
    for rule in [
        "worker-connections",
        "upstream-keepalive",
        "keepalive-requests",
        "listen-backlog",
        "multi-accept",
    ] {
        assert!(
            baseline.rules().contains(&rule),
            "{rule} missing from {:?}",
            baseline.rules()
        );
    }
    // Its tuned config: only the kernel cap on its backlog=65535 remains.
    let tuned = advise(&corpus("seed003-tuned"), &HOST);
    assert_eq!(tuned.rules(), vec!["listen-backlog"]);
    assert!(tuned.advice[0].change.is_manual());
    // Docker's default config (seed 000's "unfair" run) vs seed 000's tuned one.
    let docker = advise(&corpus("seed000-default"), &HOST);
    for rule in [
        "worker-connections",
        "sendfile-tcp-nopush",
        "access-log-buffered",
        "use-epoll",
        "multi-accept",
    ] {
        assert!(
            docker.rules().contains(&rule),
            "{rule} missing from {:?}",
            docker.rules()
        );
    }
    assert!(advise(&corpus("seed000-tuned"), &HOST).advice.is_empty());
}

#[test]
fn report_serialises_and_renders() {
    let r = report(&variant("tcp_nopush on;", ""), HOST);
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["advice"][0]["rule"], "sendfile-tcp-nopush");
    assert_eq!(json["advice"][0]["change"]["edits"][0]["op"], "set");
    let back: Report = serde_json::from_value(json).unwrap();
    assert_eq!(back, r);
    let text = r.to_text();
    assert!(text.contains("[medium] sendfile-tcp-nopush") && text.contains("4 CPUs"));
    assert!(r.any_at_least(Priority::Medium) && !r.any_at_least(Priority::High));
}
