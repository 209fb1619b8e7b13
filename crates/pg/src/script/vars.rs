//! Variable names interned to dense ids, so each client keeps its variables
//! in a plain `Vec` indexed by id (no hashing, no allocation per lookup).

use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct VarId(pub usize);

#[derive(Clone, Debug, Default)]
pub(crate) struct Vars {
    names: Vec<String>,
    ids: HashMap<String, VarId>,
}

impl Vars {
    pub(crate) fn intern(&mut self, name: &str) -> VarId {
        if let Some(id) = self.ids.get(name) {
            return *id;
        }
        let id = VarId(self.names.len());
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), id);
        id
    }

    pub(crate) fn lookup(&self, name: &str) -> Option<VarId> {
        self.ids.get(name).copied()
    }

    pub(crate) fn name(&self, id: VarId) -> &str {
        &self.names[id.0]
    }

    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }
}

/// pgbench's rule for a variable name: ASCII letters, digits, `_`, and any
/// non-ASCII byte (`parseVariable` / `valid_variable_name`).
pub(crate) fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}
