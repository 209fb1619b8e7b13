//! What the CLI tests share: the JSON contract check, and `tare run` of an
//! experiment file with what it printed and recorded; [`peer`]: the cases
//! replayed with a peer tool and with tare.

pub(crate) mod peer;

/// A validator of `docs/json-schema.json`.
pub(crate) fn schema_validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/json-schema.json"
    ))
    .unwrap();
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).expect("schema compiles")
}

/// Asserts that `value` follows `docs/json-schema.json`, listing every
/// violation with where it is.
pub(crate) fn validate(value: &serde_json::Value) {
    let validator = schema_validator();
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

/// The `tare` binary under test.
pub(crate) const TARE: &str = env!("CARGO_BIN_EXE_tare");

/// `tare ARGS` run in `dir`.
pub(crate) fn tare_in(args: &[&str], dir: &std::path::Path) -> std::process::Output {
    std::process::Command::new(TARE)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("tare runs")
}

/// All a child's piped stderr says, to its end.
pub(crate) fn stderr_of(child: &mut std::process::Child) -> String {
    use std::io::Read;
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    err
}

/// Waits for `child` at most `limit` (then kills it) and returns what it
/// said on its piped stderr.
pub(crate) fn wait_stderr(child: &mut std::process::Child, limit: std::time::Duration) -> String {
    let deadline = std::time::Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let mut s = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut s);
    }
    s
}

/// Kills the child on drop, if the test fails before it does.
pub(crate) struct Killer(pub(crate) std::process::Child);

impl Drop for Killer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A test's scratch directory, removed on drop, failed test or not.
pub(crate) struct ScratchDir(pub(crate) std::path::PathBuf);

impl ScratchDir {
    /// A fresh, empty `tare-test-<tag>-<pid>` in the temp directory.
    pub(crate) fn new(tag: &str) -> ScratchDir {
        let dir = std::env::temp_dir().join(format!("tare-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        ScratchDir(dir)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The tail of an experiment file for one short trial a cell: one thread,
/// two connections, one second, no warm-up and no cool-down.
pub(crate) const ONE_SHORT_TRIAL: &str = r#"
[load]
threads = 1
connections = 2
duration = "1s"
warmup = "0s"

[trials]
count = 1
cooldown = "0s"
"#;

/// What a `tare run` printed (stdout then stderr) and the trial records
/// it wrote to its run directory.
pub(crate) struct Ran {
    pub(crate) text: String,
    pub(crate) records: Vec<serde_json::Value>,
}

impl Ran {
    /// The record of `cell` (as `placement=native`), or a panic that shows
    /// what tare printed.
    pub(crate) fn of(&self, cell: &str) -> &serde_json::Value {
        self.records
            .iter()
            .find(|r| r["cell"] == cell)
            .unwrap_or_else(|| panic!("no record of {cell}: {}", self.text))
    }
}

/// Runs `tare run FILE --out OUT_DIR`, whatever its exit status.
pub(crate) fn tare_run(file: &std::path::Path, out_dir: &std::path::Path) -> Ran {
    let out = std::process::Command::new(TARE)
        .arg("run")
        .arg(file)
        .arg("--out")
        .arg(out_dir)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let records = std::fs::read_to_string(out_dir.join("trials.jsonl")).unwrap_or_default();
    let records = records
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    Ran { text, records }
}

/// Asserts that the native cell of `ran` has no error and counted
/// requests.
pub(crate) fn assert_native_served(ran: &Ran) {
    let native = ran.of("placement=native");
    assert!(native["error"].is_null(), "{native}\n{}", ran.text);
    assert!(
        native["result"]["requests"].as_u64().unwrap_or(0) > 0,
        "{native}"
    );
}

/// Asserts that the record of `cell` failed with a one-line error that
/// contains `cause`, and that tare printed the cell and `said` on one
/// line; returns the error.
pub(crate) fn assert_cell_failed<'a>(ran: &'a Ran, cell: &str, cause: &str, said: &str) -> &'a str {
    let failed = ran.of(cell);
    let error = failed["error"].as_str().unwrap_or_default();
    assert!(error.contains(cause), "{failed}");
    assert!(!error.contains('\n'), "one line: {error}");
    let named = ran
        .text
        .lines()
        .any(|l| l.contains(cell) && l.contains(said));
    assert!(named, "the cell and its cause on one line:\n{}", ran.text);
    error
}
