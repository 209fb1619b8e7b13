//! Every experiment in `examples/` is one `tare run --check` accepts: the
//! files are documentation users copy, and `examples/ibm-mysql.toml` once
//! set a key (`[target] variant`) the parser rejects without any test
//! noticing.

use std::process::Command;

#[test]
fn every_example_passes_check() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let o = Command::new(env!("CARGO_BIN_EXE_tare"))
            .args(["run", "--check"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} examples found in {dir}");
}
