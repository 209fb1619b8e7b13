//! `tare run` with a user's own service (`kind = "command"`,
//! docs/your-service.md): a Python HTTP server that loads a library at run
//! time (a dlopen, which no `ldd` sees) serves natively, while its Docker
//! cell, whose image lacks the library, fails: the run keeps the native
//! cell's results, records the failed trial with the service's own words,
//! and leaves nothing behind.

use std::path::Path;
use std::process::Command;

const TARE: &str = env!("CARGO_BIN_EXE_tare");
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

[load]
threads = 1
connections = 2
duration = "1s"
warmup = "0s"

[trials]
count = 1
cooldown = "0s"
"#
    );
    let file = dir.path().join("svc.toml");
    std::fs::write(&file, exp).unwrap();
    // The run directory's name is the run's deployment id (`r` + it).
    let name = format!("svc{}", std::process::id());
    let out_dir = dir.path().join(&name);
    let out = Command::new(TARE)
        .args([
            "run",
            file.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let records = std::fs::read_to_string(out_dir.join("trials.jsonl")).unwrap_or_default();
    let records: Vec<serde_json::Value> = records
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |cell: &str| {
        records
            .iter()
            .find(|r| r["cell"] == cell)
            .unwrap_or_else(|| panic!("no record of {cell}: {text}"))
    };
    let native = of("placement=native");
    assert!(native["error"].is_null(), "{native}\n{text}");
    assert!(
        native["result"]["requests"].as_u64().unwrap_or(0) > 0,
        "{native}"
    );
    if placements.contains("docker-host") {
        let failed = of("placement=docker-host");
        let error = failed["error"].as_str().unwrap_or_default();
        assert!(error.contains("libpq.so.5"), "{failed}");
        assert!(!error.contains('\n'), "one line: {error}");
        let named = text
            .lines()
            .any(|l| l.contains("placement=docker-host") && l.contains("libpq"));
        assert!(named, "the cell and its cause on one line:\n{text}");
    }
    assert_eq!(things(&format!("tare-r{name}-")), Vec::<String>::new());
}
