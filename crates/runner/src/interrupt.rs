//! Ctrl-C: the first SIGINT (or SIGTERM) sets a flag; the schedule finishes
//! tearing down the current deployment, keeps everything on disk and stops.
//! A second one means "now": `on_second` (tare-deploy's `teardown_all`)
//! runs and the process exits with 130, as shells expect after SIGINT.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Installs the handler; returns the flag the schedule watches.
pub fn install(on_second: fn()) -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    let seen = flag.clone();
    std::thread::Builder::new()
        .name("tare-interrupt".into())
        .spawn(move || {
            for _ in signals.forever() {
                if seen.swap(true, Ordering::SeqCst) {
                    eprintln!("tare: interrupted again; removing what this run created and exiting");
                    on_second();
                    std::process::exit(130);
                }
                eprintln!(
                    "tare: interrupted; stopping after tearing down the current deployment (Ctrl-C again to quit now)"
                );
            }
        })?;
    Ok(flag)
}
