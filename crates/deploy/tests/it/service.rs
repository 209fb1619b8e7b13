//! `kind = "command"`: a user's own service, deployed from the same files
//! in every placement, against real third-party servers scripts/setup.sh
//! installs: Debian's Caddy (a Go binary, its access log counted line by
//! line against the load's completed and in-flight requests) natively, in
//! docker-host and in lab-nat; a Python ASGI app under Debian's uvicorn
//! (the interpreter, its standard library and the packages it imports
//! carried into the image and the guest's initramfs) natively, in
//! docker-bridge and in a vm-bridge guest; and the service's mistakes,
//! each one line naming the cause with its last output, nothing left.
//!
//! Each test skips, saying why, only where a server or a placement's
//! mechanism is missing here.

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use tare_deploy::{
    deploy, DeploySpec, Deployment, PlacementKind, Ready, Service, Storage, Target, TargetSpec,
};

const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/your-service");

/// The Python the examples name: Debian's, not a version manager's shim.
const PYTHON: &str = "/usr/bin/python3";

fn available(placement: &str, test: &str) -> Option<PlacementKind> {
    let p = PlacementKind::named(placement).unwrap();
    match p.available() {
        Ok(_) => Some(p),
        Err(why) => {
            eprintln!("{test}: {placement} skipped: {why}");
            None
        }
    }
}

fn has(program: &str, test: &str) -> bool {
    let found = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("{test}: skipped: no {program} here (scripts/setup.sh installs it)");
    }
    found
}

/// A command target: `command` with `env`, app files from
/// examples/your-service, host files at their paths.
fn service(command: &[&str], env: &[(&str, &str)], app: &[&str], host: &[&str]) -> Target {
    Target::command(Service {
        command: command.iter().map(|w| w.to_string()).collect(),
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        workdir: None,
        system_files: host.iter().map(PathBuf::from).collect(),
        app_files: app
            .iter()
            .map(|f| (Path::new(EXAMPLES).join(f), PathBuf::from(f)))
            .collect(),
        path: "/".into(),
    })
}

/// Caddy with examples/your-service/Caddyfile: its access log in `{data}`.
fn caddy() -> Target {
    let mut t = service(
        &[
            "caddy",
            "run",
            "--config",
            "{app}/Caddyfile",
            "--adapter",
            "caddyfile",
        ],
        &[
            ("TARE_HOST", "{host}"),
            ("TARE_PORT", "{port}"),
            ("TARE_APP", "{app}"),
            ("TARE_DATA", "{data}"),
            ("HOME", "{data}"),
        ],
        &["Caddyfile", "site"],
        &[],
    );
    // A connection, not a GET: the probe would be a line in the log.
    t.ready = Ready::Tcp;
    t.service.as_mut().unwrap().path = "/index.html".into();
    t
}

/// The Python the app needs, from Debian's packages.
const PY_FILES: &[&str] = &[
    "/usr/lib/python3.11",
    "/usr/lib/python3/dist-packages/uvicorn",
    "/usr/lib/python3/dist-packages/h11",
    "/usr/lib/python3/dist-packages/click",
    "/usr/lib/python3/dist-packages/asgiref",
];

fn uvicorn() -> Target {
    let mut t = service(
        &[
            PYTHON, "-m", "uvicorn", "app:app", "--host", "{host}", "--port", "{port}",
        ],
        &[("PYTHONDONTWRITEBYTECODE", "1"), ("PYTHONUNBUFFERED", "1")],
        &["app.py"],
        PY_FILES,
    );
    t.ready = Ready::Http { path: "/".into() };
    t
}

fn spec(test: &str, target: Target, placement: PlacementKind) -> DeploySpec {
    DeploySpec::new(support::run_id(test), TargetSpec::new(target), placement)
}

/// One second of `tare http` (2 threads, 8 connections) at the deployment.
fn load(d: &Deployment) -> tare_record::LoadResult {
    let ns = d.client_netns().map(Path::to_path_buf);
    let url = d.url();
    let endpoint = d.endpoint().clone();
    std::thread::spawn(move || {
        if let Some(ns) = ns {
            tare_engine::netns::enter(&ns).expect("enter the client namespace");
        }
        let unix = match &endpoint {
            tare_engine::Endpoint::Unix(p) => Some(p.clone()),
            tare_engine::Endpoint::Tcp(_) => None,
        };
        // A bridge's or a guest's address: made by this deployment.
        let target = tare_http::Target::new(&url, unix, true).unwrap();
        let mut c = tare_http::HttpConfig::new(target);
        c.load.threads = 2;
        c.load.connections = 8;
        c.load.duration = Some(Duration::from_secs(1));
        tare_http::run(&c).unwrap()
    })
    .join()
    .unwrap()
}

/// The requests Caddy's access log at `log` holds once it stops growing:
/// a request in flight at the load's deadline is handled (and logged) as
/// its connection closes, just after. Polled until it holds `expected`
/// lines or has not grown for half a second, at most ten seconds.
fn logged(log: &Path, expected: u64) -> u64 {
    let count = || {
        std::fs::read_to_string(log)
            .unwrap_or_else(|e| panic!("{}: {e}", log.display()))
            .lines()
            .filter(|l| l.contains("handled request"))
            .count() as u64
    };
    support::settled(count, expected, Duration::from_millis(500))
}

/// Caddy's own access log counts every request tare completed or had in
/// flight at the deadline, and nothing else, in each placement; the
/// fairness facts show the same binary and config everywhere.
#[test]
fn caddy_logs_exactly_the_requests_tare_made_in_native_docker_and_lab() {
    let test = "caddy_counts";
    if !has("caddy", test) {
        return;
    }
    let mut hashes = Vec::new();
    for placement in ["native", "docker-host", "lab-nat"] {
        let Some(p) = available(placement, test) else {
            continue;
        };
        let before = support::machine_state();
        let mut s = spec(&format!("cad{}", &placement[..3]), caddy(), p);
        // The host's directory bind-mounted, so the log is readable here.
        if p.accepts(tare_deploy::SpecOption::Storage) {
            s.container.storage = Storage::HostPath;
        }
        let d = deploy(&s).unwrap_or_else(|e| panic!("{placement}: {e}"));
        let r = load(&d);
        let lines = logged(&d.dir().join("data/access.log"), r.requests + r.in_flight);
        assert_eq!(r.errors.total(), 0, "{placement}: {:?}", r.errors);
        assert!(r.requests > 50, "{placement}: {} requests", r.requests);
        assert_eq!(
            lines,
            r.requests + r.in_flight,
            "{placement}: log lines vs completed {} + in flight {}",
            r.requests,
            r.in_flight
        );
        let f = d.facts().clone();
        assert_eq!(f.target, "command");
        hashes.push((
            placement,
            f.process.binary_sha256.clone(),
            f.process.config_sha256.clone(),
        ));
        d.stop().unwrap();
        support::assert_nothing_left(&before, &s.run_id, placement);
    }
    for (p, bin, conf) in &hashes {
        assert_eq!((bin, conf), (&hashes[0].1, &hashes[0].2), "{p}");
    }
}

/// The interpreter, its standard library and the packages uvicorn imports
/// are the image's and the guest's files: the app answers in a container
/// and in a guest booted from the initramfs (TCG or KVM, as detected).
#[test]
fn a_python_app_under_uvicorn_runs_natively_in_a_container_and_in_a_guest() {
    let test = "uvicorn";
    if !Path::new(PYTHON).exists() || !Path::new("/usr/lib/python3/dist-packages/uvicorn").exists()
    {
        eprintln!("{test}: skipped: no Debian python3-uvicorn here (scripts/setup.sh)");
        return;
    }
    for placement in ["native", "docker-bridge", "vm-bridge"] {
        let Some(p) = available(placement, test) else {
            continue;
        };
        if placement == "vm-bridge" {
            eprintln!("{test}: {}", p.available().unwrap_or_default());
        }
        let before = support::machine_state();
        let s = spec(&format!("uv{}", &placement[..3]), uvicorn(), p);
        let d = deploy(&s).unwrap_or_else(|e| panic!("{placement}: {e}"));
        let r = load(&d);
        assert_eq!(r.errors.total(), 0, "{placement}: {:?}", r.errors);
        // It answered; how fast is not this test's (a guest under TCG on a
        // loaded machine answered 10 in the second).
        assert!(r.requests > 0, "{placement}: {} requests", r.requests);
        let f = d.facts().clone();
        assert!(
            f.process.binary_path.ends_with("python3.11")
                || f.process.binary_path.ends_with("python3"),
            "{f:?}"
        );
        d.stop().unwrap();
        support::assert_nothing_left(&before, &s.run_id, placement);
    }
}

/// A deployment that fails: one line, its cause and the service's last
/// output, and nothing left behind.
fn fails(test: &str, target: Target, placement: PlacementKind) -> String {
    let before = support::machine_state();
    let s = spec(test, target, placement);
    let e = deploy(&s)
        .expect_err("the deployment should fail")
        .to_string();
    assert!(!e.contains('\n'), "one line: {e}");
    support::assert_nothing_left(&before, &s.run_id, "");
    e
}

#[test]
fn a_command_that_exits_at_once_is_named_with_its_last_output() {
    let native = PlacementKind::reference();
    let t = service(
        &[
            "/bin/sh",
            "-c",
            "echo cannot open config >&2; exit 3",
            "{port}",
        ],
        &[],
        &[],
        &[],
    );
    let started = std::time::Instant::now();
    let e = fails("exits", t, native);
    assert!(
        e.contains("exited") && e.contains("cannot open config"),
        "{e}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "reported at once"
    );
}

/// It listens, but not where it was told: the error says where it does.
#[test]
fn a_command_listening_on_another_port_says_which() {
    if !Path::new(PYTHON).exists() {
        return;
    }
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other = free.local_addr().unwrap().port();
    drop(free);
    let mut t = service(
        &[
            PYTHON,
            "-m",
            "http.server",
            "--bind",
            "127.0.0.1",
            &other.to_string(),
        ],
        &[("TOLD_PORT", "{port}")],
        &[],
        &[],
    );
    t.ready_within = Some(Duration::from_secs(3));
    let e = fails("elsewhere", t, PlacementKind::reference());
    assert!(
        e.contains(&format!("it listens on port {other}, not on")),
        "{e}"
    );
}

/// A library the program loads at run time that the image does not hold
/// (a dlopen: ldd cannot see it) fails the container cell with the
/// program's own words; natively the same command serves.
#[test]
fn a_library_the_image_lacks_fails_the_container_cell_with_its_output() {
    let test = "nolib";
    let Some(docker) = available("docker-host", test) else {
        return;
    };
    if !Path::new(PYTHON).exists() {
        return;
    }
    let script = "import ctypes, http.server, sys; ctypes.CDLL('libpq.so.5'); \
                  http.server.test(HandlerClass=http.server.SimpleHTTPRequestHandler, \
                  port=int(sys.argv[1]), bind='127.0.0.1')";
    let t = service(
        &[PYTHON, "-c", script, "{port}"],
        &[],
        &[],
        &["/usr/lib/python3.11"],
    );
    let native = deploy(&spec("nolibn", t.clone(), PlacementKind::reference()));
    if native.is_err() {
        eprintln!("{test}: skipped: no libpq here either");
        return;
    }
    native.unwrap().stop().unwrap();
    let e = fails("nolibd", t, docker);
    assert!(e.contains("libpq.so.5"), "{e}");
}
