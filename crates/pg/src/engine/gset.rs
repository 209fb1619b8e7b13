//! `\gset` and `\aset`: a statement's results stored into the client's
//! variables, as pgbench's `readCommandResponse` does. Only statements
//! with `\gset`/`\aset` reach this code; others skip their rows.

use std::sync::Arc;

use crate::protocol;
use crate::script::expr::Value;
use crate::script::vars::{is_name_byte, Vars};
use crate::script::Gset;

/// A row's values, `None` for SQL NULL.
type Row = Vec<Option<String>>;

/// A finished result: its columns, first row and row count.
type Finished = (Vec<String>, Option<Row>, usize);

/// The results of the statement in flight (several under `\;`).
#[derive(Default, Debug)]
pub(crate) struct Results {
    cols: Vec<String>,
    /// Rows of the current result.
    rows: usize,
    /// The first row of the current result (`\gset`).
    first: Option<Row>,
    /// The last finished result.
    last: Option<Finished>,
    /// The first failure to store a value.
    pub failure: Option<String>,
}

impl Results {
    pub(crate) fn clear(&mut self) {
        *self = Results::default();
    }

    pub(crate) fn describe(&mut self, body: &[u8]) {
        self.cols = protocol::column_names(body).unwrap_or_default();
        self.rows = 0;
        self.first = None;
    }

    /// A DataRow: `\aset` stores it now (the last row wins), `\gset`
    /// keeps the first row of the result.
    pub(crate) fn row(&mut self, body: &[u8], g: &Gset, vars: &mut [Option<Value>], names: &Vars) {
        let values = protocol::row_values(body).unwrap_or_default();
        self.rows += 1;
        if g.all {
            let cols = std::mem::take(&mut self.cols);
            self.store(g, &cols, &values, vars, names);
            self.cols = cols;
        } else if self.first.is_none() {
            self.first = Some(values);
        }
    }

    /// CommandComplete or EmptyQueryResponse: one result of the statement.
    pub(crate) fn complete(&mut self) {
        let cols = std::mem::take(&mut self.cols);
        self.last = Some((cols, self.first.take(), self.rows));
        self.rows = 0;
    }

    /// ReadyForQuery: `\gset` stores the last result, which must have
    /// exactly one row. An error is pgbench's message.
    pub(crate) fn finish(
        &mut self,
        g: &Gset,
        vars: &mut [Option<Value>],
        names: &Vars,
    ) -> Result<(), String> {
        if !g.all {
            let (cols, first, rows) = self.last.take().unwrap_or_default();
            if rows != 1 {
                return Err(format!("expected one row, got {rows}"));
            }
            let first = first.unwrap_or_default();
            self.store(g, &cols, &first, vars, names);
        }
        match self.failure.take() {
            Some(f) => Err(f),
            None => Ok(()),
        }
    }

    fn store(
        &mut self,
        g: &Gset,
        cols: &[String],
        values: &[Option<String>],
        vars: &mut [Option<Value>],
        names: &Vars,
    ) {
        for (col, v) in cols.iter().zip(values) {
            let name = format!("{}{col}", g.prefix);
            if name.is_empty() || !name.bytes().all(is_name_byte) {
                self.failure
                    .get_or_insert(format!("error storing into variable {name}"));
                continue;
            }
            // A name no script reads is not kept (variables are interned
            // when the scripts are parsed).
            if let Some(id) = names.lookup(&name) {
                vars[id.0] = Some(match v {
                    Some(s) => Value::Text(Arc::from(s.as_str())),
                    None => Value::Null,
                });
            }
        }
    }
}
