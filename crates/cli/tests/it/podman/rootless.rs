//! tare serve in the rootless Podman placements, as a user the test makes
//! and names with the experiment key `[target] rootless_user`: exact
//! counts, a whole `tare run` whose monitor sees each forwarder as its own
//! column, and a SIGKILLed `tare run` whose container, pasta and images
//! `tare cleanup` removes. Podman missing from PATH: a one-line note and
//! native still runs. In podman.rs's binary, so they take turns with the
//! rootful tests on `tare cleanup` (one_at_a_time).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use tare_deploy::{deploy, DeploySpec, PlacementKind, TargetKind, TargetSpec};
use tare_testbed::rootless::{self, TestUser};

use super::{counts_exactly, one_at_a_time, trials, TARE};
use crate::support::{Killer, ScratchDir};

const ROOTLESS: [(&str, &str); 3] = [
    ("podman-rootless-publish", "rootlessport"),
    ("podman-rootless-slirp", "slirp4netns"),
    ("podman-rootless-pasta", "pasta"),
];

fn rootless_ok() -> bool {
    match PlacementKind::named("podman-rootless-pasta")
        .unwrap()
        .available()
    {
        Ok(_) => true,
        Err(reason) => {
            eprintln!("rootless Podman not available here: {reason}");
            false
        }
    }
}

/// A scratch directory holding `exp` as `NAME.toml`.
fn experiment(name: &str, exp: &str) -> (ScratchDir, PathBuf) {
    let dir = ScratchDir::new(name);
    let file = dir.0.join(format!("{name}.toml"));
    std::fs::write(&file, exp).unwrap();
    (dir, file)
}

/// `tare run FILE --out DIR` (with `PATH` set to `path`, when given), which
/// must succeed: its stdout and stderr.
fn tare_run(file: &Path, out_dir: &Path, path: Option<&Path>) -> String {
    let mut cmd = Command::new(TARE);
    cmd.arg("run").arg(file).arg("--out").arg(out_dir);
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    text
}

#[test]
fn tare_serve_in_every_rootless_placement_counts_exactly_and_is_monitored() {
    if !rootless_ok() {
        return;
    }
    let _store = one_at_a_time();
    let user = TestUser::create(&format!("tare-t{}", std::process::id() % 100000));
    for (name, _) in ROOTLESS {
        let mut target = TargetSpec::of(TargetKind::named("tare-serve").unwrap());
        target.target.binary = Some(PathBuf::from(TARE));
        let run = format!("c{}{}", std::process::id() % 100000, &name[16..]);
        let mut spec = DeploySpec::new(&run, target, PlacementKind::named(name).unwrap());
        spec.rootless_user = Some(user.name.clone());
        let d = deploy(&spec).unwrap_or_else(|e| panic!("{name}: {e}"));
        counts_exactly(&d, name);
        assert_eq!(d.facts().process.binary_path, TARE, "the host's own binary");
        d.stop().unwrap();
    }
    // The same through `tare run`, the user named in the experiment.
    let cells: Vec<String> = ROOTLESS.iter().map(|(p, _)| format!("\"{p}\"")).collect();
    let (_scratch, file) = experiment(
        "rootless",
        &format!(
            "name = \"rootless\"\n[target]\nkind = \"tare-serve\"\nrootless_user = \"{}\"\n\
             [factors]\nplacement = [\"native\", {}]\n\
             [load]\nthreads = 1\nconnections = 4\nduration = \"1500ms\"\nwarmup = \"200ms\"\n\
             [trials]\ncount = 1\ncooldown = \"0s\"\n",
            user.name,
            cells.join(", ")
        ),
    );
    let out_dir = file.with_extension("out");
    let text = tare_run(&file, &out_dir, None);
    let records = trials(&out_dir);
    for (name, helper) in ROOTLESS {
        let r = records
            .iter()
            .find(|r| r["factors"]["placement"] == name)
            .unwrap_or_else(|| panic!("no trial of {name}: {text}"));
        assert!(r["error"].is_null(), "{name}: {r}");
        assert!(r["result"]["requests"].as_u64().unwrap_or(0) > 0, "{r}");
        // The forwarder is its own column of where the CPU goes, and it
        // carried this cell's load: CPU time comes in 10 ms ticks, so the
        // window is long enough for a forwarder starved on a loaded machine
        // (191 requests in 500 ms at load average 14 showed none).
        let used = r["monitor"]["summary"]["cpu_s"]["watched"][helper]
            .as_f64()
            .unwrap_or(0.0);
        assert!(used > 0.0, "{name}: no CPU in {helper}: {}", r["monitor"]);
    }
    assert!(
        text.contains("rootlessport") && text.contains("slirp4netns"),
        "{text}"
    );
    // Everything but the image cache is gone from the user's store.
    let left: Vec<String> = rootless::things(&user.name)
        .into_iter()
        .filter(|l| !l.starts_with("image "))
        .collect();
    assert_eq!(left, Vec::<String>::new());
}

/// A `tare run` killed with SIGKILL while its podman-rootless-pasta cell
/// runs leaves its container and its pasta in the user's store and
/// processes; `tare cleanup` removes them and tare's image, and nothing
/// the user had before.
#[test]
fn cleanup_after_sigkill_removes_the_rootless_container_pasta_and_images() {
    if !rootless_ok() {
        return;
    }
    let _store = one_at_a_time();
    let _cleanup = tare_testbed::machine::cleanup_lock();
    let user = TestUser::create(&format!("tare-k{}", std::process::id() % 100000));
    let (_scratch, file) = experiment(
        "rlkill",
        &format!(
            "name = \"rlkill\"\n[target]\nkind = \"tare-serve\"\nrootless_user = \"{}\"\n\
             [factors]\nplacement = [\"podman-rootless-pasta\"]\n\
             [load]\nthreads = 1\nconnections = 2\nduration = \"30s\"\nwarmup = \"0s\"\n\
             [trials]\ncount = 1\n",
            user.name
        ),
    );
    let before = rootless::things(&user.name);
    let child = Command::new(TARE)
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(file.with_extension("out"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Killer(child);
    let start = Instant::now();
    // The container and its pasta, still there a second later (the runner
    // may deploy a cell more than once before its trial).
    let mut seen: Vec<String> = Vec::new();
    let made = loop {
        let new: Vec<String> = rootless::things(&user.name)
            .into_iter()
            .filter(|l| !before.contains(l))
            .collect();
        let container = new.iter().any(|l| l.starts_with("container tare-"));
        let pasta = new.iter().any(|l| l.starts_with("process pas"));
        if container && pasta && new == seen {
            break new;
        }
        seen = new;
        assert!(
            child.0.try_wait().unwrap().is_none(),
            "tare run ended before it made a container"
        );
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "tare run made no container and pasta in 120 s: {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(1000));
    };
    // SAFETY: plain syscall on our own child.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGKILL) };
    let _ = child.0.wait();
    let left = rootless::things(&user.name);
    assert!(
        made.iter().all(|m| left.contains(m)),
        "SIGKILL left nothing to clean ({made:?}, now {left:?}): the test proves nothing"
    );
    let out = Command::new(TARE).arg("cleanup").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{text}");
    for m in made.iter().filter(|m| m.starts_with("container ")) {
        let name = m.trim_start_matches("container ");
        assert!(text.contains(name), "cleanup did not name {name}: {text}");
    }
    // Podman's forwarders go with their container; give them a moment.
    let deadline = Instant::now() + Duration::from_secs(10);
    let after = loop {
        let after = rootless::things(&user.name);
        if after.iter().all(|l| before.contains(l)) || Instant::now() > deadline {
            break after;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let diff: Vec<&String> = after.iter().filter(|l| !before.contains(l)).collect();
    assert_eq!(diff, Vec::<&String>::new(), "left after cleanup: {text}");
    let gone: Vec<&String> = before.iter().filter(|l| !after.contains(l)).collect();
    assert_eq!(
        gone,
        Vec::<&String>::new(),
        "cleanup removed what tare did not make"
    );
}

/// No podman on PATH: the Podman cells are skipped with one line naming
/// what to install, and native still runs.
#[test]
fn podman_absent_is_one_line_and_native_still_runs() {
    let (_scratch, file) = experiment(
        "nopodman",
        "name = \"nopodman\"\n[target]\nkind = \"tare-serve\"\n[factors]\n\
         placement = [\"native\", \"podman-publish\", \"podman-rootless-pasta\"]\n\
         [load]\nthreads = 1\nconnections = 2\nduration = \"300ms\"\nwarmup = \"0s\"\n\
         [trials]\ncount = 1\ncooldown = \"0s\"\n",
    );
    let empty = file.with_extension("bin");
    std::fs::create_dir_all(&empty).unwrap();
    let out_dir = file.with_extension("out");
    let text = tare_run(&file, &out_dir, Some(&empty));
    for p in ["podman-publish", "podman-rootless-pasta"] {
        let line = text
            .lines()
            .find(|l| l.contains(p) && l.contains("podman command is not installed"))
            .unwrap_or_else(|| panic!("no note for {p}: {text}"));
        assert!(line.contains("apt-get install podman"), "{line}");
    }
    let records = trials(&out_dir);
    let native = records
        .iter()
        .find(|r| r["factors"]["placement"] == "native")
        .unwrap_or_else(|| panic!("native did not run: {text}"));
    assert!(
        native["result"]["requests"].as_u64().unwrap_or(0) > 0,
        "{native}"
    );
}
