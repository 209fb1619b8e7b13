//! `tare run` with a user's image (`kind = "image"`, docs/your-service.md,
//! "Your image") that rootless Podman cannot load: its files belong to a
//! uid outside the rootless user's subordinate ids. The native cell runs
//! it from its exported files and keeps its results; the rootless cell is
//! one line naming the cell and Podman's cause; the image is exported
//! once for the run; nothing is left behind. The build context gets the
//! host's busybox from `files`, with no copy made by hand.

use std::path::Path;

use tare_testbed::rootless::{self, TestUser, DEFAULT_USER};

use crate::support::{assert_cell_failed, assert_native_served, tare_run, ONE_SHORT_TRIAL};

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
    let port = tare_testbed::free_port();
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
{ONE_SHORT_TRIAL}"#
    );
    let file = dir.path().join("img.toml");
    std::fs::write(&file, exp).unwrap();
    let name = format!("img{}", std::process::id());
    let ran = tare_run(&file, &dir.path().join(&name));
    assert_native_served(&ran);
    let cell = format!("placement={rootless_cell}");
    let error = assert_cell_failed(&ran, &cell, "podman import", "podman import");
    eprintln!("{test}: {error}");
    assert_eq!(things(&format!("tare-r{name}-")), Vec::<String>::new());
    let user_left: Vec<String> = rootless::things(DEFAULT_USER)
        .into_iter()
        .filter(|l| !user_before.contains(l) && l.contains("tare/image"))
        .collect();
    assert_eq!(user_left, Vec::<String>::new());
}
