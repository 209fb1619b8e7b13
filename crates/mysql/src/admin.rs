//! `tare mysql prepare`, `prewarm` and `cleanup`: sysbench's tables made,
//! read into the server's caches and dropped (`oltp_common.lua`'s
//! `cmd_prepare`, `cmd_prewarm` and `cleanup`), with its messages.
//! Tables are made and prewarmed in parallel, table `t` by thread
//! `(t - 1) % threads`.

use std::io::Write;
use std::time::Duration;

use tare_engine::Endpoint;

use crate::error::MysqlError;
use crate::oltp::{self, Rand, RandType, Schema};
use crate::run::{check_tables, in_netns};
use crate::session::Session;
use crate::wire::Login;

/// Rows per INSERT: ~190 KB statements, far below the default
/// `max_allowed_packet` (16 MiB).
const ROWS_PER_INSERT: u32 = 1000;

/// What `prepare` and `cleanup` need.
#[derive(Clone, Debug)]
pub struct Admin {
    pub endpoint: Endpoint,
    pub login: Login,
    pub tables: u32,
    pub table_size: u32,
    /// Tables made at once (sysbench's `--threads` for `prepare`).
    pub threads: u32,
    /// `--mysql_storage_engine`.
    pub storage_engine: String,
    /// `--auto_inc`, `--secondary`, `--create_secondary`.
    pub schema: Schema,
    pub rand: RandType,
    pub seed: u64,
    /// Bounds connecting; each statement may take up to ten times more
    /// (an index build on a large table).
    pub timeout: Duration,
    pub netns: Option<std::path::PathBuf>,
    pub allow_remote: bool,
}

impl Admin {
    fn check(&self) -> Result<(), MysqlError> {
        check_tables(self.tables, self.table_size)?;
        if !self.allow_remote && !self.endpoint.is_local() {
            return Err(MysqlError::Config(format!(
                "{} is not a loopback address or Unix socket; tare sends load elsewhere only with --allow-remote",
                self.endpoint
            )));
        }
        if !self
            .storage_engine
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(MysqlError::Config(format!(
                "--mysql_storage_engine {:?} is not an engine name",
                self.storage_engine
            )));
        }
        Ok(())
    }

    fn session(&self) -> Result<Session, MysqlError> {
        Session::connect(&self.endpoint, &self.login, self.timeout * 10)
    }

    /// Creates and fills `sbtest1..N`, then their index on `k`; messages
    /// go to `out` as sysbench prints them.
    pub fn prepare(&self, out: &mut (dyn Write + Send)) -> Result<(), MysqlError> {
        let out = std::sync::Mutex::new(out);
        let say = |s: String| {
            let mut o = out.lock().unwrap_or_else(|p| p.into_inner());
            let _ = writeln!(o, "{s}");
        };
        self.each_table(&[], &|sess, rand, t| self.create_table(sess, rand, t, &say))
    }

    /// sysbench's `prewarm`: each table read through its primary key and
    /// through `k`, so the run starts with warm caches (MySQL only in
    /// sysbench, as here).
    pub fn prewarm(&self, out: &mut (dyn Write + Send)) -> Result<(), MysqlError> {
        let out = std::sync::Mutex::new(out);
        // As sysbench: no on-disk temporary tables for the reads below.
        let setup = [
            "SET tmp_table_size=2*1024*1024*1024",
            "SET max_heap_table_size=2*1024*1024*1024",
        ];
        self.each_table(&setup, &|sess, _, t| {
            {
                let mut o = out.lock().unwrap_or_else(|p| p.into_inner());
                let _ = writeln!(o, "Prewarming table sbtest{t}");
            }
            let n = self.table_size;
            sess.query(&format!("ANALYZE TABLE sbtest{t}"))?;
            sess.query(&format!(
                "SELECT AVG(id) FROM (SELECT * FROM sbtest{t} FORCE KEY (PRIMARY) LIMIT {n}) t"
            ))?;
            sess.query(&format!(
                "SELECT COUNT(*) FROM (SELECT * FROM sbtest{t} WHERE k LIKE '%0%' LIMIT {n}) t"
            ))?;
            Ok(())
        })
    }

    /// Runs `work` on every table, `threads` sessions at once (each first
    /// sends `setup`); the first error is returned once all have ended.
    fn each_table(
        &self,
        setup: &[&str],
        work: &(dyn Fn(&mut Session, &mut Rand, u32) -> Result<(), MysqlError> + Sync),
    ) -> Result<(), MysqlError> {
        self.check()?;
        let threads = self.threads.clamp(1, self.tables);
        in_netns(self.netns.as_deref(), || {
            // Log in once first: a wrong password is one error, not one per thread.
            self.session()?.quit();
            std::thread::scope(|s| {
                let handles: Vec<_> = (0..threads)
                    .map(|tid| {
                        s.spawn(move || -> Result<(), MysqlError> {
                            if let Some(ns) = &self.netns {
                                tare_engine::netns::enter(ns).map_err(|e| {
                                    MysqlError::io("entering the network namespace", e)
                                })?;
                            }
                            let mut sess = self.session()?;
                            for sql in setup {
                                sess.query(sql)?;
                            }
                            let mut rand = Rand::new(
                                self.seed ^ (tid as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                                self.rand,
                            );
                            let mut t = tid + 1;
                            while t <= self.tables {
                                work(&mut sess, &mut rand, t)?;
                                t += threads;
                            }
                            sess.quit();
                            Ok(())
                        })
                    })
                    .collect();
                let mut first = None;
                for h in handles {
                    let r = h.join().unwrap_or_else(|_| {
                        Err(MysqlError::Protocol("a prepare thread panicked".into()))
                    });
                    if let Err(e) = r {
                        first.get_or_insert(e);
                    }
                }
                first.map_or(Ok(()), Err)
            })
        })
    }

    fn create_table(
        &self,
        s: &mut Session,
        rand: &mut Rand,
        t: u32,
        say: &(dyn Fn(String) + Sync),
    ) -> Result<(), MysqlError> {
        say(format!("Creating table 'sbtest{t}'..."));
        s.query(&oltp::create_table_sql(
            t,
            &self.storage_engine,
            self.schema,
        ))?;
        say(format!(
            "Inserting {} records into 'sbtest{t}'",
            self.table_size
        ));
        let mut sql = Vec::with_capacity(ROWS_PER_INSERT as usize * 200);
        let mut done = 0;
        while done < self.table_size {
            let n = ROWS_PER_INSERT.min(self.table_size - done);
            sql.clear();
            // Without AUTO_INCREMENT the ids are written: 1..N, as sysbench.
            let columns = if self.schema.auto_inc {
                "k, c, pad"
            } else {
                "id, k, c, pad"
            };
            sql.extend_from_slice(format!("INSERT INTO sbtest{t}({columns}) VALUES").as_bytes());
            for i in 0..n {
                if i > 0 {
                    sql.push(b',');
                }
                if !self.schema.auto_inc {
                    sql.extend_from_slice(format!("({}, ", done + i + 1).as_bytes());
                } else {
                    sql.push(b'(');
                }
                let k = rand.default(1, self.table_size);
                sql.extend_from_slice(format!("{k}, '").as_bytes());
                rand.fill_template(oltp::C_TEMPLATE, &mut sql);
                sql.extend_from_slice(b"', '");
                rand.fill_template(oltp::PAD_TEMPLATE, &mut sql);
                sql.extend_from_slice(b"')");
            }
            // Digits, dashes and ASCII only: valid UTF-8.
            s.query(std::str::from_utf8(&sql).expect("ASCII"))?;
            done += n;
        }
        if self.schema.create_secondary {
            say(format!("Creating a secondary index on 'sbtest{t}'..."));
            s.query(&format!("CREATE INDEX k_{t} ON sbtest{t}(k)"))?;
        }
        Ok(())
    }

    /// Makes the tables unless all of `sbtest1..N` are there (then says
    /// `false`): an experiment's first load of a fresh deployment. Tables
    /// left half-made are dropped first.
    pub fn prepare_if_missing(&self, out: &mut (dyn Write + Send)) -> Result<bool, MysqlError> {
        self.check()?;
        let have = in_netns(self.netns.as_deref(), || {
            let mut s = self.session()?;
            let n = s
                .value(&format!(
                    "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN ({})",
                    (1..=self.tables)
                        .map(|t| format!("'sbtest{t}'"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))?
                .and_then(|v| v.parse::<u32>().ok())
                .unwrap_or(0);
            s.quit();
            Ok(n)
        })?;
        if have == self.tables {
            return Ok(false);
        }
        self.cleanup(&mut std::io::sink())?;
        self.prepare(out)?;
        Ok(true)
    }

    /// Drops `sbtest1..N` (those that exist).
    pub fn cleanup(&self, out: &mut (dyn Write + Send)) -> Result<(), MysqlError> {
        self.check()?;
        in_netns(self.netns.as_deref(), || {
            let mut s = self.session()?;
            for t in 1..=self.tables {
                let _ = writeln!(out, "Dropping table 'sbtest{t}'...");
                s.query(&format!("DROP TABLE IF EXISTS sbtest{t}"))?;
            }
            s.quit();
            Ok(())
        })
    }
}
