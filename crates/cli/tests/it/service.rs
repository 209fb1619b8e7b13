//! `tare run` with a user's own service (`kind = "command"`,
//! docs/your-service.md): a Python HTTP server that loads a library at run
//! time (a dlopen, which no `ldd` sees) serves natively, while its Docker
//! cell, whose image lacks the library, fails: the run keeps the native
//! cell's results, records the failed trial with the service's own words,
//! and leaves nothing behind.

use std::path::Path;

use crate::support::{assert_cell_failed, assert_native_served, tare_run, ONE_SHORT_TRIAL};

const PYTHON: &str = "/usr/bin/python3";

/// What tare left that names this run.
fn things(run: &str) -> Vec<String> {
    tare_testbed::machine::resources()
        .into_iter()
        .filter(|l| l.contains(run))
        .collect()
}

#[test]
fn a_failing_cell_keeps_the_others_results_and_names_its_cause() {
    if !Path::new(PYTHON).exists() || !Path::new("/usr/lib/python3.11").is_dir() {
        eprintln!("skipped: no Debian python3.11 here (scripts/setup.sh)");
        return;
    }
    let docker = tare_deploy::PlacementKind::named("docker-host").unwrap();
    let placements = match docker.available() {
        Ok(_) => r#"["native", "docker-host"]"#,
        Err(why) => {
            eprintln!("docker-host skipped: {why}");
            r#"["native"]"#
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let script = "import ctypes, http.server, sys; ctypes.CDLL('libpq.so.5'); \
                  http.server.test(HandlerClass=http.server.SimpleHTTPRequestHandler, \
                  port=int(sys.argv[1]), bind=sys.argv[2])";
    let exp = format!(
        r#"[target]
kind = "command"
command = ["{PYTHON}", "-c", "{script}", "{{port}}", "{{host}}"]
files = ["/usr/lib/python3.11"]
ready = "tcp"

[factors]
placement = {placements}
{ONE_SHORT_TRIAL}"#
    );
    let file = dir.path().join("svc.toml");
    std::fs::write(&file, exp).unwrap();
    // The run directory's name is the run's deployment id (`r` + it).
    let name = format!("svc{}", std::process::id());
    let ran = tare_run(&file, &dir.path().join(&name));
    assert_native_served(&ran);
    if placements.contains("docker-host") {
        assert_cell_failed(&ran, "placement=docker-host", "libpq.so.5", "libpq");
    }
    assert_eq!(things(&format!("tare-r{name}-")), Vec::<String>::new());
}
