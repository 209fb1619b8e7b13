//! What the load commands (`http`, `pg`) share around a run: the Ctrl-C flag
//! that ends it early, `--netns NAME|PATH`, and where the result goes (text on
//! stdout, JSON to a file beside it, or JSON alone on stdout with `--json -`).

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Context;
use serde::Serialize;

/// A flag set by Ctrl-C: the run ends early and what was measured still prints.
pub(super) fn ctrl_c_flag() -> anyhow::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, stop.clone())
        .context("installing the Ctrl-C handler")?;
    Ok(stop)
}

/// `--netns`: a name from `ip netns`, or a path to a namespace file.
pub(super) fn netns_path(arg: Option<&str>) -> Option<PathBuf> {
    arg.map(|n| {
        if n.contains('/') {
            PathBuf::from(n)
        } else {
            tare_engine::netns::named(n)
        }
    })
}

/// Prints `value` as the `--json` flag asks: `-` replaces the text on stdout,
/// a path gets the JSON while `text()` goes to stdout, none prints the text.
pub(super) fn result(
    json: Option<&str>,
    value: &impl Serialize,
    text: impl FnOnce() -> String,
) -> anyhow::Result<()> {
    let pretty = serde_json::to_string_pretty(value)?;
    match json {
        Some("-") => stdout(&format!("{pretty}\n"))?,
        other => {
            stdout(&text())?;
            if let Some(path) = other {
                std::fs::write(path, pretty + "\n").with_context(|| format!("writing {path}"))?;
            }
        }
    }
    Ok(())
}

/// Writes `text` to stdout; a reader that went away (`tare ... | head`)
/// is not an error: what it wanted it has.
fn stdout(text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::Error::new(e).context("writing to stdout"))
        }
        _ => Ok(()),
    }
}
