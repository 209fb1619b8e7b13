//! The scripts of a run, parsed and compiled once before any thread starts:
//! variables interned, and the protocol bytes that never change prebuilt
//! (Parse messages; for statements without parameters, the whole
//! Bind + Execute + Sync), so the hot path copies bytes instead of encoding.

use std::sync::Arc;

use crate::config::{PgConfig, QueryMode, ScriptSource};
use crate::error::PgError;
use crate::protocol;
use crate::script::expr::Value;
use crate::script::vars::{VarId, Vars};
use crate::script::{self, builtin, CommandKind, Script, Sql};

/// Prebuilt protocol bytes for one SQL command.
#[derive(Clone, Debug)]
pub(crate) struct Stmt {
    /// `P{script}_{command}`, pgbench's prepared statement names.
    pub name: String,
    /// The Parse message: named in prepared mode, unnamed in extended mode.
    pub parse: Vec<u8>,
    /// Without parameters: the constant message(s) of one execution
    /// (prepared: Bind+Execute+Sync; extended: Parse+Bind+Execute+Sync).
    pub fixed: Option<Vec<u8>>,
    /// Index into the run's flat statement table (per-connection "prepared" flags).
    pub slot: usize,
}

pub(crate) struct CompiledScript {
    pub script: Script,
    /// One entry per command; `Some` for SQL commands.
    pub stmts: Vec<Option<Stmt>>,
    /// True for pgbench's built-ins.
    pub builtin: bool,
}

pub(crate) struct Program {
    pub scripts: Vec<CompiledScript>,
    pub vars: Vars,
    /// Values every client starts with (`:scale`, `-D`, `:random_seed`).
    pub initial: Vec<Option<Value>>,
    pub client_id: VarId,
    pub total_weight: u64,
    pub mode: QueryMode,
    /// Number of SQL commands over all scripts.
    pub statements: usize,
    /// Flat index of each (script, command), for per-command statistics.
    pub command_base: Vec<usize>,
    pub commands: usize,
}

/// Reads and parses the scripts `cfg` names (pgbench's tpcb-like when it
/// names none), each with whether it is built in.
fn read_scripts(cfg: &PgConfig, vars: &mut Vars) -> Result<Vec<(Script, bool)>, PgError> {
    let default_spec = [crate::config::ScriptSpec {
        source: ScriptSource::Builtin("tpcb-like".into()),
        weight: 1,
    }];
    let specs = if cfg.scripts.is_empty() {
        &default_spec[..]
    } else {
        &cfg.scripts[..]
    };
    let mut scripts = Vec::new();
    for spec in specs {
        let (name, text, is_builtin) = match &spec.source {
            ScriptSource::Builtin(n) => {
                let b = builtin::find(n).map_err(PgError::Config)?;
                (b.desc.to_string(), b.script.to_string(), true)
            }
            ScriptSource::File(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    PgError::Config(format!("could not open file \"{}\": {e}", path.display()))
                })?;
                (path.display().to_string(), text, false)
            }
            ScriptSource::Text { name, text } => (name.clone(), text.clone(), false),
        };
        let parsed = script::parse(&name, &text, spec.weight, vars)?;
        if cfg.mode != QueryMode::Simple {
            too_many_arguments(&parsed)?;
        } else if parsed
            .commands
            .iter()
            .any(|c| matches!(c.kind, CommandKind::StartPipeline))
        {
            return Err(PgError::Config(format!(
                "{name}: cannot use pipeline mode with the simple query protocol"
            )));
        }
        scripts.push((parsed, is_builtin));
    }
    Ok(scripts)
}

/// A SQL command's statement as `mode` sends it: its name (prepared
/// mode), its Parse message and, without parameters, its whole message
/// built once; `slot`: its index over all scripts.
fn statement(mode: QueryMode, sql: &Sql, si: usize, ci: usize, slot: usize) -> Stmt {
    let name = match mode {
        QueryMode::Prepared => format!("P{si}_{ci}"),
        _ => String::new(),
    };
    let mut parse = Vec::new();
    protocol::parse(&mut parse, &name, &sql.parameterized);
    let fixed = (sql.params.is_empty() && mode != QueryMode::Simple).then(|| {
        let mut b = Vec::new();
        if mode == QueryMode::Extended {
            b.extend_from_slice(&parse);
        }
        protocol::bind(&mut b, &name, 0, |_, _| true);
        if sql.gset.is_some() {
            b.extend_from_slice(&protocol::DESCRIBE_PORTAL);
        }
        b.extend_from_slice(&protocol::EXECUTE);
        b.extend_from_slice(&protocol::SYNC);
        b
    });
    Stmt {
        name,
        parse,
        fixed,
        slot,
    }
}

impl Program {
    /// Reads and parses the scripts; `scale` is already resolved.
    pub(crate) fn compile(cfg: &PgConfig, scale: u32, seed: u64) -> Result<Arc<Program>, PgError> {
        let mut vars = Vars::default();
        let scale_id = vars.intern("scale");
        let client_id = vars.intern("client_id");
        let seed_id = vars.intern("random_seed");
        let default_seed_id = vars.intern("default_seed");
        let scripts = read_scripts(cfg, &mut vars)?;
        let total_weight: u64 = scripts.iter().map(|(s, _)| s.weight as u64).sum();
        if total_weight == 0 {
            return Err(PgError::Config(
                "total script weight must not be zero".into(),
            ));
        }
        let mut initial = vec![None; vars.len()];
        for (name, value) in &cfg.variables {
            if name.is_empty() || !name.bytes().all(script::vars::is_name_byte) {
                return Err(PgError::Config(format!(
                    "invalid variable name: \"{name}\""
                )));
            }
            let id = vars.intern(name);
            initial.resize(vars.len(), None);
            initial[id.0] = Some(Value::Text(Arc::from(value.as_str())));
        }
        initial[scale_id.0].get_or_insert(Value::Int(scale as i64));
        initial[seed_id.0].get_or_insert(Value::Int(seed as i64));
        let seeds = crate::script::random::Seeds::derive(seed, cfg.load.connections, 0);
        initial[default_seed_id.0].get_or_insert(Value::Int(seeds.default_seed as i64));

        let mut statements = 0;
        let mut compiled = Vec::new();
        let mut command_base = Vec::new();
        let mut commands = 0;
        for (si, (script, is_builtin)) in scripts.into_iter().enumerate() {
            command_base.push(commands);
            commands += script.commands.len();
            let stmts = script
                .commands
                .iter()
                .enumerate()
                .map(|(ci, cmd)| match &cmd.kind {
                    CommandKind::Sql(sql) => {
                        statements += 1;
                        Some(statement(cfg.mode, sql, si, ci, statements - 1))
                    }
                    _ => None,
                })
                .collect();
            compiled.push(CompiledScript {
                script,
                stmts,
                builtin: is_builtin,
            });
        }
        Ok(Arc::new(Program {
            scripts: compiled,
            vars,
            initial,
            client_id,
            total_weight,
            mode: cfg.mode,
            statements,
            command_base,
            commands,
        }))
    }

    /// Picks a script by weight from a uniform draw in `[0, total_weight)`.
    #[inline]
    pub(crate) fn choose(&self, draw: u64) -> usize {
        let mut acc = 0u64;
        for (i, s) in self.scripts.iter().enumerate() {
            acc += s.script.weight as u64;
            if draw < acc {
                return i;
            }
        }
        self.scripts.len() - 1
    }

    pub(crate) fn uses_builtin(&self) -> bool {
        self.scripts.iter().any(|s| s.builtin)
    }
}

/// pgbench's `MAX_ARGS - 1`: parameters of one statement in the extended
/// and prepared modes.
fn too_many_arguments(script: &Script) -> Result<(), PgError> {
    for c in &script.commands {
        if let CommandKind::Sql(sql) = &c.kind {
            if sql.params.len() > 255 {
                return Err(PgError::Config(format!(
                    "statement has too many arguments (maximum is 255): {}",
                    c.first_line
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ScriptSpec;

    fn cfg(mode: QueryMode, scripts: Vec<ScriptSpec>) -> PgConfig {
        let mut c = PgConfig::new(
            tare_engine::Endpoint::Unix("/tmp/.s.PGSQL.5432".into()),
            "u",
            "d",
        );
        c.mode = mode;
        c.scripts = scripts;
        c
    }

    fn text(name: &str, t: &str, weight: u32) -> ScriptSpec {
        ScriptSpec {
            source: ScriptSource::Text {
                name: name.into(),
                text: t.into(),
            },
            weight,
        }
    }

    #[test]
    fn weights_pick_scripts_in_proportion() {
        let c = cfg(
            QueryMode::Simple,
            vec![text("a", "select 1;", 1), text("b", "select 2;", 3)],
        );
        let p = Program::compile(&c, 1, 0).unwrap();
        assert_eq!(p.total_weight, 4);
        let picks: Vec<usize> = (0..4).map(|d| p.choose(d)).collect();
        assert_eq!(picks, vec![0, 1, 1, 1]);
    }

    #[test]
    fn prepared_statements_without_parameters_are_prebuilt() {
        let c = cfg(
            QueryMode::Prepared,
            vec![text("a", "select 1;\n\\set x 1\nselect :x;", 1)],
        );
        let p = Program::compile(&c, 1, 0).unwrap();
        let s = &p.scripts[0];
        let first = s.stmts[0].as_ref().unwrap();
        assert_eq!(first.name, "P0_0");
        assert!(first.fixed.as_ref().unwrap().ends_with(&protocol::SYNC));
        assert!(s.stmts[1].is_none());
        assert!(s.stmts[2].as_ref().unwrap().fixed.is_none());
        assert_eq!(p.statements, 2);
    }

    #[test]
    fn default_is_tpcb_and_scale_is_a_variable() {
        let c = cfg(QueryMode::Simple, vec![]);
        let p = Program::compile(&c, 7, 0).unwrap();
        assert!(p.uses_builtin());
        let scale = p.vars.lookup("scale").unwrap();
        assert_eq!(p.initial[scale.0], Some(Value::Int(7)));
    }

    #[test]
    fn missing_file_is_a_clear_error() {
        let c = cfg(
            QueryMode::Simple,
            vec![ScriptSpec {
                source: ScriptSource::File("/nonexistent/tare.sql".into()),
                weight: 1,
            }],
        );
        let e = Program::compile(&c, 1, 0).err().unwrap().to_string();
        assert!(e.contains("/nonexistent/tare.sql"), "{e}");
    }
}
