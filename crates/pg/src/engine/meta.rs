//! The meta commands that neither touch the server nor wait: `\if`
//! blocks, `\shell`, `\setshell` (pgbench's `executeMetaCommand`).
//! Each moves the client's command pointer itself.

use std::process::{Command, Stdio};
use std::sync::Arc;

use super::client::Client;
use super::worker::failed;
use crate::program::Program;
use crate::script::expr::{truth, Env, Expr, Value};
use crate::script::{CommandKind, ShellWord};

/// pgbench's reason for a meta command that could not run.
const EXECUTION: &str = "execution of meta-command failed";

/// Runs `kind` (the client's current command); `Err` is why the client
/// aborts.
pub(crate) fn run(kind: &CommandKind, c: &mut Client, program: &Program) -> Result<(), String> {
    match kind {
        CommandKind::If { expr, next } => {
            c.cmd = if condition(expr, c, program)? {
                c.cmd + 1
            } else {
                branch_from(*next, c, program)?
            };
        }
        // Reached after the branch before them ran: the block is done.
        CommandKind::Elif { endif, .. } | CommandKind::Else { endif } => c.cmd = endif + 1,
        CommandKind::Endif => c.cmd += 1,
        CommandKind::Shell { into, words } => {
            shell(c, *into, words)?;
            c.cmd += 1;
        }
        CommandKind::Fail(why) => return Err(why.clone()),
        CommandKind::Sql(_)
        | CommandKind::Set { .. }
        | CommandKind::Sleep { .. }
        | CommandKind::StartPipeline
        | CommandKind::EndPipeline => {
            unreachable!("run by the worker")
        }
    }
    Ok(())
}

fn condition(expr: &Expr, c: &mut Client, program: &Program) -> Result<bool, String> {
    eval(expr, c, program).map(|v| truth(&v))
}

/// `expr` evaluated with client `c`'s variables and generator, at its
/// current command; `Err`: pgbench's words for the failure.
pub(crate) fn eval(expr: &Expr, c: &mut Client, program: &Program) -> Result<Value, String> {
    let mut env = Env {
        vars: &c.vars,
        names: &program.vars,
        rng: &mut c.rng,
        at: (c.script, c.cmd + 1),
    };
    expr.eval(&mut env)
        .map_err(|e| failed(e, "evaluation of meta-command failed"))
}

/// The command to go on at once `\if` (or an `\elif`) was false: the first
/// `\elif` whose condition holds, an `\else`, or past the `\endif`.
fn branch_from(mut at: usize, c: &mut Client, program: &Program) -> Result<usize, String> {
    let commands = &program.scripts[c.script].script.commands;
    // Bounded: every step moves forward through the script.
    loop {
        match &commands[at].kind {
            CommandKind::Elif { expr, next, .. } => {
                let saved = c.cmd;
                c.cmd = at;
                let holds = condition(expr, c, program);
                c.cmd = saved;
                if holds? {
                    return Ok(at + 1);
                }
                at = *next;
            }
            _ => return Ok(at + 1),
        }
    }
}

fn shell(
    c: &mut Client,
    into: Option<crate::script::vars::VarId>,
    words: &[ShellWord],
) -> Result<(), String> {
    let name = if into.is_some() { "setshell" } else { "shell" };
    let mut line = String::new();
    for w in words {
        if !line.is_empty() {
            line.push(' ');
        }
        match w {
            ShellWord::Lit(s) => line.push_str(s),
            ShellWord::Var(id, text) => match &c.vars[id.0] {
                Some(v) => line.push_str(&v.to_string()),
                None => {
                    let detail = format!("{name}: undefined variable \"{text}\"");
                    return Err(failed(detail, EXECUTION));
                }
            },
        }
    }
    let Some(var) = into else {
        let ok = Command::new("/bin/sh")
            .arg("-c")
            .arg(&line)
            .status()
            .is_ok_and(|s| s.success());
        return if ok {
            Ok(())
        } else {
            Err(failed(
                format!("{line}: could not launch shell command"),
                EXECUTION,
            ))
        };
    };
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg(&line)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|_| failed(format!("{line}: could not launch shell command"), EXECUTION))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap_or("");
    if first.is_empty() {
        let detail = format!("{line}: could not read result of shell command");
        return Err(failed(detail, EXECUTION));
    }
    match first.trim().parse::<i64>() {
        Ok(v) => {
            c.vars[var.0] = Some(Value::Int(v));
            Ok(())
        }
        Err(_) => Err(failed(
            format!(
                "{line}: shell command must return an integer (not \"{}\")",
                Arc::<str>::from(first)
            ),
            EXECUTION,
        )),
    }
}
