//! `--combine`: one config entry for the whole configuration, each `include`
//! replaced by the statements of the files it pulled in (crossplane's
//! `_combine_parsed_configs`). Statements keep a `file` key saying where they came from.

use crate::payload::{ConfigFile, Payload, Statement, Status};

/// Includes nested deeper than this are cut off: a file including itself would
/// otherwise recurse forever (crossplane dies with `RecursionError` there).
const MAX_DEPTH: usize = 64;

pub fn combine(payload: Payload) -> Payload {
    let configs = &payload.config;
    let mut combined = ConfigFile {
        file: configs.first().map(|c| c.file.clone()).unwrap_or_default(),
        status: Status::Ok,
        errors: Vec::new(),
        parsed: Vec::new(),
    };
    for config in configs {
        combined.errors.extend(config.errors.iter().cloned());
        if config.status == Status::Failed {
            combined.status = Status::Failed;
        }
    }
    if let Some(first) = configs.first() {
        combined.parsed = splice(&first.parsed, configs, 0);
    }
    Payload {
        status: payload.status,
        errors: payload.errors.clone(),
        config: vec![combined],
    }
}

fn splice(block: &[Statement], configs: &[ConfigFile], depth: usize) -> Vec<Statement> {
    let mut out = Vec::new();
    if depth > MAX_DEPTH {
        return out;
    }
    for stmt in block {
        if let Some(includes) = &stmt.includes {
            for &i in includes {
                if let Some(config) = configs.get(i) {
                    out.extend(splice(&config.parsed, configs, depth + 1));
                }
            }
            continue;
        }
        let mut stmt = stmt.clone();
        if let Some(inner) = &stmt.block {
            stmt.block = Some(splice(inner, configs, depth + 1));
        }
        out.push(stmt);
    }
    out
}
