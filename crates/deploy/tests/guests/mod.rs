//! Shared by the guest tests of tare-deploy and of the `tare` binary
//! (tests/<crate>/it/vm.rs) and their namespace tests: whether guests run
//! here, one guest at a time, a new tap's lab id, and a psql query.

#![allow(dead_code)]

use std::sync::{Mutex, MutexGuard};

use tare_deploy::{Deployment, PlacementKind};

/// One guest at a time: two TCG guests on two cores boot slowly, and the
/// leftover checks compare the machine before and after.
static ONE_GUEST: Mutex<()> = Mutex::new(());

/// Whether guests can run here; prints how, or why not.
pub(crate) fn vm_ready(test: &str) -> bool {
    match PlacementKind::named("vm-bridge").unwrap().available() {
        Ok(how) => {
            eprintln!("{test}: guests run here: {how}");
            true
        }
        Err(why) => {
            eprintln!("{test}: skipped, no guests here: {why}");
            false
        }
    }
}

/// This test's turn to boot guests, if guests run here.
pub(crate) fn guest_turn(test: &str) -> Option<MutexGuard<'static, ()>> {
    vm_ready(test).then(|| ONE_GUEST.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Of the lines `new` (of a machine snapshot), those naming what is this
/// test's: lines carrying `needle`, or the lab id of a new tap
/// (`tr<id>tp`: only guests make taps; its bridge and table carry the id).
/// Other suites may build lab networks meanwhile.
pub(crate) fn theirs(new: Vec<String>, needle: &str) -> Vec<String> {
    let labs: Vec<String> = new
        .iter()
        .filter_map(|l| {
            l.strip_prefix("link tr")?
                .strip_suffix("tp")
                .map(String::from)
        })
        .collect();
    new.into_iter()
        .filter(|l| l.contains(needle) || labs.iter().any(|id| l.contains(id.as_str())))
        .collect()
}

/// `psql -Atc SQL` as postgres against the deployment `d`: its stdout,
/// trimmed, and its stderr.
pub(crate) fn psql(d: &Deployment, sql: &str) -> (String, String) {
    let tare_engine::Endpoint::Tcp(a) = d.endpoint().clone() else {
        panic!("tcp expected")
    };
    let out = std::process::Command::new("psql")
        .args([
            "-h",
            &a.ip().to_string(),
            "-p",
            &a.port().to_string(),
            "-U",
            "postgres",
            "-d",
            "postgres",
            "-Atc",
            sql,
        ])
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
