//! pgbench's built-in scripts, verbatim from pgbench.c (PostgreSQL 15,
//! `builtin_script[]`), so `-S`, `-N` and the default run the same SQL.

pub(crate) struct Builtin {
    /// The name `-b` accepts.
    pub name: &'static str,
    /// What pgbench prints as the transaction type.
    pub desc: &'static str,
    pub script: &'static str,
}

pub(crate) const BUILTINS: [Builtin; 3] = [
    Builtin {
        name: "tpcb-like",
        desc: "<builtin: TPC-B (sort of)>",
        script: "\\set aid random(1, 100000 * :scale)\n\
                 \\set bid random(1, 1 * :scale)\n\
                 \\set tid random(1, 10 * :scale)\n\
                 \\set delta random(-5000, 5000)\n\
                 BEGIN;\n\
                 UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n\
                 SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n\
                 UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;\n\
                 UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;\n\
                 INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);\n\
                 END;\n",
    },
    Builtin {
        name: "simple-update",
        desc: "<builtin: simple update>",
        script: "\\set aid random(1, 100000 * :scale)\n\
                 \\set bid random(1, 1 * :scale)\n\
                 \\set tid random(1, 10 * :scale)\n\
                 \\set delta random(-5000, 5000)\n\
                 BEGIN;\n\
                 UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n\
                 SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n\
                 INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);\n\
                 END;\n",
    },
    Builtin {
        name: "select-only",
        desc: "<builtin: select only>",
        script: "\\set aid random(1, 100000 * :scale)\n\
                 SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n",
    },
];

/// Finds a built-in by name or unambiguous prefix, as `pgbench -b` does.
pub(crate) fn find(name: &str) -> Result<&'static Builtin, String> {
    if let Some(b) = BUILTINS.iter().find(|b| b.name == name) {
        return Ok(b);
    }
    let matches: Vec<&Builtin> = BUILTINS
        .iter()
        .filter(|b| b.name.starts_with(name))
        .collect();
    match matches.as_slice() {
        [one] => Ok(one),
        [] => Err(format!(
            "no builtin script found for name \"{name}\" (available: tpcb-like, simple-update, select-only)"
        )),
        _ => Err(format!("ambiguous builtin name: \"{name}\"")),
    }
}
