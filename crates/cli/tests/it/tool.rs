//! The tool engine end to end: fio and hpcc (tiny sizes) natively and in
//! docker-host through `tare run`, their real output parsed into records
//! that match the JSON schema, the filesystem under fio's file recorded
//! per storage level, nothing left behind; `tare tool run` locally; a tool
//! missing on the host is one line naming the Debian package.

use std::process::Command;

const TARE: &str = env!("CARGO_BIN_EXE_tare");

fn metric(r: &serde_json::Value, name: &str) -> f64 {
    r["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("{name} in {r}"))["value"]
        .as_f64()
        .unwrap()
}

fn docker_ok() -> bool {
    tare_deploy::docker::engine_version().is_ok()
}

#[test]
fn fio_and_hpcc_natively_and_in_docker_record_parsed_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let docker = docker_ok();
    let mut cells = String::new();
    for (job, placement, storage) in [
        ("fio-randread", "native", None),
        ("hpcc", "native", None),
        ("fio-randread", "docker-host", Some("image")),
        ("fio-randread", "docker-host", Some("tmpfs")),
        ("hpcc", "docker-host", Some("volume")),
    ] {
        if placement != "native" && !docker {
            continue;
        }
        cells.push_str(&format!(
            "[[cells]]\nconfig = \"{job}\"\nplacement = \"{placement}\"\n"
        ));
        if let Some(s) = storage {
            cells.push_str(&format!("storage = \"{s}\"\n"));
        }
    }
    let exp = dir.path().join("tools.toml");
    std::fs::write(
        &exp,
        format!(
            "[target]\nkind = \"tool\"\n{cells}[load]\nduration = \"1s\"\n\
             [load.tool]\nsize = \"8m\"\nhpl_n = 400\nlimit = \"2m\"\n\
             [trials]\ncount = 1\ncooldown = \"0s\"\n"
        ),
    )
    .unwrap();
    let out_dir = dir.path().join("run");
    let out = Command::new(TARE)
        .args([
            "run",
            exp.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trials = std::fs::read_to_string(out_dir.join("trials.jsonl")).unwrap();
    let mut seen = 0;
    for line in trials.lines() {
        let t: serde_json::Value = serde_json::from_str(line).unwrap();
        let cell = t["cell"].as_str().unwrap().to_string();
        let r = &t["result"];
        assert!(r.is_object(), "{cell}: {}", t["error"]);
        crate::support::validate(r);
        assert_eq!(r["engine"], "tool");
        let fs = r["tool"]["data_fs"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if cell.contains("fio-randread") {
            assert_eq!(r["primary"], "read_iops");
            assert!(
                metric(r, "read_iops") > 0.0 && metric(r, "read_clat_p99_us") > 0.0,
                "{cell}"
            );
            assert!(r["latency_us"]["p99"].as_f64().unwrap() > 0.0);
            assert_eq!(r["tool"]["tool"], "fio");
            assert!(r["tool"]["version"].as_str().unwrap().starts_with("fio-"));
        } else {
            assert_eq!(r["primary"], "hpl_gflops");
            assert!(metric(r, "hpl_gflops") > 0.0 && metric(r, "stream_triad_gb_s") > 0.0);
            assert!(metric(r, "randomaccess_gups") > 0.0, "{cell}");
        }
        // The filesystem under the job's directory, as the program saw it.
        match cell.as_str() {
            c if c.contains("storage=image") => assert!(fs.contains("overlay"), "{c}: {fs}"),
            c if c.contains("storage=tmpfs") => assert_eq!(fs, "tmpfs", "{c}"),
            c if c.contains("placement=native") => {
                assert!(!fs.contains("overlay") && !fs.is_empty(), "{c}: {fs}")
            }
            _ => {}
        }
        seen += 1;
    }
    assert_eq!(seen, if docker { 5 } else { 2 });
    // The report names each cell's metric and where its data lived.
    assert!(text.contains("IOPS") && text.contains("GFLOP/s"), "{text}");
    assert!(text.contains("ran on"), "{text}");
    if docker {
        assert!(text.contains("ran on tmpfs"), "{text}");
        // Nothing of this run left in Docker (containers, volumes).
        let plan: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out_dir.join("plan.json")).unwrap())
                .unwrap();
        let run = plan["run_id"].as_str().unwrap();
        for what in [&["ps", "-aq"][..], &["volume", "ls", "-q"][..]] {
            let mut args = what.to_vec();
            let filter = format!("label=tare.run={run}");
            args.extend(["--filter", &filter]);
            let left = Command::new("docker").args(&args).output().unwrap();
            assert!(
                left.stdout.is_empty(),
                "{what:?} left: {}",
                String::from_utf8_lossy(&left.stdout)
            );
        }
    }
}

#[test]
fn tool_run_locally_and_a_missing_tool_names_its_package() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(TARE)
        .args([
            "tool",
            "run",
            "sysbench-cpu",
            "-d",
            "1s",
            "--json",
            "-",
            "--dir",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    tare_testbed::assert_success(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON only");
    crate::support::validate(&v);
    assert!(metric(&v, "events_per_s") > 0.0);
    assert_eq!(v["transport"], "local");

    let out = Command::new(TARE)
        .args(["tool", "run", "fio-randread", "-d", "1s", "--dir"])
        .arg(dir.path())
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("install the Debian package fio"), "{err}");
}
