//! Running `ip`, `nft`, `tc` and `iptables`: the kernel's own front ends, so the
//! lab is built exactly as a person would build it by hand, and every failure
//! carries the command line and its stderr.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::LabError;

/// Where a tool lives. Looks in `PATH` and then in the sbin directories, which
/// a non-login root shell (cargo test under sudo) often lacks in `PATH`.
pub(crate) fn locate(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|dir| dir.join(tool))
        .find(|candidate| candidate.is_file())
}

/// Runs `tool args…` and returns its stdout, or the failure with its stderr.
pub(crate) fn run(tool: &str, args: &[&str]) -> Result<String, LabError> {
    run_with_input(tool, args, None)
}

/// Same, feeding `input` on stdin (`nft -f -` takes a whole ruleset at once,
/// which nftables applies atomically).
pub(crate) fn run_with_input(
    tool: &str,
    args: &[&str],
    input: Option<&str>,
) -> Result<String, LabError> {
    let command = render(tool, args);
    let program = locate(tool).unwrap_or_else(|| PathBuf::from(tool));
    let mut child = Command::new(program)
        .args(args)
        .env("LC_ALL", "C")
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| LabError::Spawn {
            command: command.clone(),
            source,
        })?;
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin
            .write_all(text.as_bytes())
            .map_err(|source| LabError::Spawn {
                command: command.clone(),
                source,
            })?;
    }
    let out = child.wait_with_output().map_err(|source| LabError::Spawn {
        command: command.clone(),
        source,
    })?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    Err(LabError::Command {
        command,
        status: out.status.to_string(),
        stderr: one_line(&stderr),
    })
}

/// The command as a person would type it, for error messages.
fn render(tool: &str, args: &[&str]) -> String {
    std::iter::once(tool)
        .chain(args.iter().copied())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Tools print multi-line diagnostics (nft points at the column with `^^^`);
/// errors here are one line.
fn one_line(text: &str) -> String {
    let joined = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.chars().all(|c| c == '^' || c == ' '))
        .collect::<Vec<_>>()
        .join(" | ");
    if joined.is_empty() {
        "(no output)".to_string()
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_drops_nft_carets_and_blank_lines() {
        let text = "Error: syntax error\n\nadd table x y\n    ^^^^^\n";
        assert_eq!(one_line(text), "Error: syntax error | add table x y");
        assert_eq!(one_line("\n"), "(no output)");
    }

    #[test]
    fn a_failing_command_reports_its_command_line_and_stderr() {
        let err = run("sh", &["-c", "echo nope >&2; exit 3"]).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("sh -c echo nope >&2; exit 3"), "{text}");
        assert!(text.contains("nope"), "{text}");
        assert!(text.contains("3"), "{text}");
    }

    #[test]
    fn input_reaches_stdin() {
        assert_eq!(run_with_input("cat", &[], Some("abc")).unwrap(), "abc");
    }
}
