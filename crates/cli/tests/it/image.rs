//! `tare run` with a user's image (`kind = "image"`, docs/your-service.md,
//! "Your image") that rootless Podman cannot load: its files belong to a
//! uid outside the rootless user's subordinate ids. The native cell runs
//! it from its exported files and keeps its results; the rootless cell is
//! one line naming the cell and Podman's cause; the image is exported
//! once for the run; nothing is left behind. The build context gets the
//! host's busybox from `files`, with no copy made by hand.

use std::path::Path;
use std::process::Command;

use tare_testbed::rootless::{self, TestUser, DEFAULT_USER};

const TARE: &str = env!("CARGO_BIN_EXE_tare");

/// What tare left that names this run.
fn things(run: &str) -> Vec<String> {
    let mut v: Vec<String> = tare_testbed::machine::resources()
        .into_iter()
        .filter(|l| l.contains(run))
        .collect();
    if let Ok(rd) = std::fs::read_dir(std::env::temp_dir()) {
        v.extend(
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| n.contains(run)),
        );
    }
    v
}

#[test]
fn podman_rootless_cannot_load_an_image_of_foreign_ids_and_native_keeps_its_results() {
    let test = "image_podman_foreign";
    if !Path::new("/bin/busybox").exists() {
        eprintln!("{test}: skipped: no busybox-static here (scripts/setup.sh installs it)");
        return;
    }
    if let Err(why) = tare_deploy::docker::engine_version() {
        eprintln!("{test}: skipped: no Docker engine here: {why}");
        return;
    }
    let rootless_cell = "podman-rootless-pasta";
    if let Err(why) = tare_deploy::PlacementKind::named(rootless_cell)
        .unwrap()
        .available()
    {
        eprintln!("{test}: skipped: {why}");
        return;
    }
    let _user = TestUser::adopt(DEFAULT_USER);
    let user_before = rootless::things(DEFAULT_USER);
    let dir = tempfile::tempdir().unwrap();
    let ctx = dir.path().join("web");
    std::fs::create_dir_all(ctx.join("www")).unwrap();
    std::fs::write(ctx.join("www/index.html"), "hello\n").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::write(
        ctx.join("Dockerfile"),
        format!(
            "FROM scratch\nCOPY bin/busybox /bin/busybox\n\
             COPY --chown=300000:300000 www /www\nUSER 65534:65534\nEXPOSE {port}\n\
             ENTRYPOINT [\"/bin/busybox\", \"httpd\", \"-f\", \"-p\", \"{port}\", \"-h\", \"/www\"]\n"
        ),
    )
    .unwrap();
    let exp = format!(
        r#"[target]
kind = "image"
build = "web"
files = ["/bin/busybox"]
path = "/index.html"
ready_timeout = "20s"

[factors]
placement = ["native", "{rootless_cell}"]

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
    let file = dir.path().join("img.toml");
    std::fs::write(&file, exp).unwrap();
    let name = format!("img{}", std::process::id());
    let out_dir = dir.path().join(&name);
    let out = Command::new(TARE)
        .args(["run", file.to_str().unwrap(), "--out"])
        .arg(&out_dir)
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
    let cell = format!("placement={rootless_cell}");
    let failed = of(&cell);
    let error = failed["error"].as_str().unwrap_or_default();
    eprintln!("{test}: {error}");
    assert!(error.contains("podman import"), "{failed}");
    assert!(!error.contains('\n'), "one line: {error}");
    let named = text
        .lines()
        .any(|l| l.contains(&cell) && l.contains("podman import"));
    assert!(named, "the cell and its cause on one line:\n{text}");
    assert_eq!(things(&format!("tare-r{name}-")), Vec::<String>::new());
    let user_left: Vec<String> = rootless::things(DEFAULT_USER)
        .into_iter()
        .filter(|l| !user_before.contains(l) && l.contains("tare/image"))
        .collect();
    assert_eq!(user_left, Vec::<String>::new());
}
