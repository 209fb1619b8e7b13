//! sysbench 1.0's OLTP workloads (`src/lua/oltp_*.lua` and
//! `oltp_common.lua`), rebuilt from what they do: the same tables, the same
//! statements per transaction, the same random distributions.
//!
//! A transaction is a list of groups; each group picks one table
//! (`sysbench.rand.uniform(1, tables)`) and runs its statements `count`
//! times, each with fresh ids from `sysbench.rand.default(1, table_size)`.
//! [`Plan::transaction`] lays a transaction out as [`Planned`] statements;
//! [`Plan::encode`] writes one as COM_STMT_EXECUTE (sysbench's default,
//! `--db-ps-mode=auto`) or COM_QUERY with the values inlined
//! (`--db-ps-mode=disable`).

use std::fmt::Write as _;

use tare_engine::splitmix::SplitMix64;

use crate::protocol::{self, Param};

/// The four OLTP tests, by sysbench's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    ReadOnly,
    ReadWrite,
    PointSelect,
    WriteOnly,
}

impl Workload {
    pub const ALL: [Workload; 4] = [
        Workload::ReadOnly,
        Workload::ReadWrite,
        Workload::PointSelect,
        Workload::WriteOnly,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Workload::ReadOnly => "oltp_read_only",
            Workload::ReadWrite => "oltp_read_write",
            Workload::PointSelect => "oltp_point_select",
            Workload::WriteOnly => "oltp_write_only",
        }
    }

    /// A test by name, or by the path of its sysbench script
    /// (`/usr/share/sysbench/oltp_read_only.lua` is `oltp_read_only`).
    pub fn parse(s: &str) -> Result<Workload, String> {
        let s = s.rsplit('/').next().unwrap_or(s);
        let s = s.strip_suffix(".lua").unwrap_or(s);
        Workload::ALL
            .into_iter()
            .find(|w| w.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown test {s:?} (oltp_read_only, oltp_read_write, oltp_point_select, oltp_write_only)"
                )
            })
    }
}

/// The per-transaction counts and switches of `oltp_common.lua`, with its
/// defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mix {
    pub point_selects: u32,
    pub simple_ranges: u32,
    pub sum_ranges: u32,
    pub order_ranges: u32,
    pub distinct_ranges: u32,
    pub index_updates: u32,
    pub non_index_updates: u32,
    pub delete_inserts: u32,
    pub range_size: u32,
    pub range_selects: bool,
    /// `--skip_trx`: autocommit, no BEGIN/COMMIT.
    pub skip_trx: bool,
}

impl Default for Mix {
    fn default() -> Mix {
        Mix {
            point_selects: 10,
            simple_ranges: 1,
            sum_ranges: 1,
            order_ranges: 1,
            distinct_ranges: 1,
            index_updates: 1,
            non_index_updates: 1,
            delete_inserts: 1,
            range_size: 100,
            range_selects: true,
            skip_trx: false,
        }
    }
}

/// sysbench's `--rand-type`: how ids are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RandType {
    Uniform,
    Gaussian,
    /// sysbench 1.0's default.
    Special,
    Pareto,
}

impl RandType {
    pub fn name(self) -> &'static str {
        match self {
            RandType::Uniform => "uniform",
            RandType::Gaussian => "gaussian",
            RandType::Special => "special",
            RandType::Pareto => "pareto",
        }
    }

    pub fn parse(s: &str) -> Result<RandType, String> {
        [
            RandType::Uniform,
            RandType::Gaussian,
            RandType::Special,
            RandType::Pareto,
        ]
        .into_iter()
        .find(|r| r.name() == s)
        .ok_or_else(|| format!("unknown --rand-type {s:?} (uniform, gaussian, special, pareto)"))
    }
}

/// `sb_rand.c`'s generators on tare's [`SplitMix64`], with sysbench's
/// defaults: `--rand-spec-iter=12 --rand-spec-pct=1 --rand-spec-res=75
/// --rand-pareto-h=0.2`.
pub(crate) struct Rand {
    rng: SplitMix64,
    kind: RandType,
}

const SPEC_ITER: u32 = 12;
const SPEC_PCT: f64 = 1.0;
const SPEC_RES: f64 = 75.0;
const PARETO_H: f64 = 0.2;

impl Rand {
    pub(crate) fn new(seed: u64, kind: RandType) -> Rand {
        Rand {
            rng: SplitMix64::new(seed),
            kind,
        }
    }

    /// A double in [0, 1), from the top 53 bits.
    #[inline]
    pub(crate) fn double(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `sb_rand_uniform(a, b)`.
    #[inline]
    pub(crate) fn uniform(&mut self, a: u32, b: u32) -> u32 {
        a + (self.double() * (b - a + 1) as f64) as u32
    }

    /// `sysbench.rand.default(a, b)`: the `--rand-type` distribution.
    pub(crate) fn default(&mut self, a: u32, b: u32) -> u32 {
        match self.kind {
            RandType::Uniform => self.uniform(a, b),
            RandType::Gaussian => {
                let t = (b - a + 1) as f64;
                let sum: f64 = (0..SPEC_ITER).map(|_| self.double() * t).sum();
                a + (sum / SPEC_ITER as f64) as u32
            }
            RandType::Special => self.special(a, b),
            RandType::Pareto => {
                let power = PARETO_H.ln() / (1.0 - PARETO_H).ln();
                a + ((b - a + 1) as f64 * self.double().powf(power)) as u32
            }
        }
    }

    /// `sb_rand_special`: a quarter of the values from a Gaussian-like sum
    /// over the whole range, three quarters uniform over the middle 1%.
    fn special(&mut self, a: u32, b: u32) -> u32 {
        let t = (b - a) as f64;
        let range_size = t * (100.0 / (100.0 - SPEC_RES));
        let rnd = self.double();
        let res = rnd * range_size;
        if res < t {
            let sum: f64 = (0..SPEC_ITER).map(|_| self.double()).sum();
            return a + (sum * t / SPEC_ITER as f64) as u32;
        }
        let d = t * SPEC_PCT / 100.0;
        let res = rnd * (d + 1.0) + t / 2.0 - t * SPEC_PCT / 200.0;
        a + res as u32
    }

    /// `sysbench.rand.string(template)`: `#` → a digit, `@` → a letter.
    pub(crate) fn fill_template(&mut self, template: &[u8], out: &mut Vec<u8>) {
        for &c in template {
            out.push(match c {
                b'#' => self.uniform(b'0' as u32, b'9' as u32) as u8,
                b'@' => self.uniform(b'a' as u32, b'z' as u32) as u8,
                c => c,
            });
        }
    }
}

/// `c_value_template`: 10 groups of 11 digits, 119 characters.
pub(crate) const C_TEMPLATE: &[u8] = b"###########-###########-###########-###########-###########-###########-###########-###########-###########-###########";
/// `pad_value_template`: 5 groups, 59 characters.
pub(crate) const PAD_TEMPLATE: &[u8] =
    b"###########-###########-###########-###########-###########";

/// One statement kind of the OLTP scripts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Begin,
    Commit,
    PointSelect,
    SimpleRange,
    SumRange,
    OrderRange,
    DistinctRange,
    IndexUpdate,
    NonIndexUpdate,
    Delete,
    Insert,
}

/// How sysbench counts a statement: read, write or other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    Read,
    Write,
    Other,
}

impl Kind {
    /// The statements prepared per table (BEGIN and COMMIT once).
    pub(crate) const PER_TABLE: [Kind; 9] = [
        Kind::PointSelect,
        Kind::SimpleRange,
        Kind::SumRange,
        Kind::OrderRange,
        Kind::DistinctRange,
        Kind::IndexUpdate,
        Kind::NonIndexUpdate,
        Kind::Delete,
        Kind::Insert,
    ];

    /// The statement's text for table `t` (sysbench's `stmt_defs`).
    pub(crate) fn sql(self, t: u32) -> String {
        match self {
            Kind::Begin => "BEGIN".into(),
            Kind::Commit => "COMMIT".into(),
            Kind::PointSelect => format!("SELECT c FROM sbtest{t} WHERE id=?"),
            Kind::SimpleRange => format!("SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ?"),
            Kind::SumRange => format!("SELECT SUM(k) FROM sbtest{t} WHERE id BETWEEN ? AND ?"),
            Kind::OrderRange => {
                format!("SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c")
            }
            Kind::DistinctRange => {
                format!("SELECT DISTINCT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c")
            }
            Kind::IndexUpdate => format!("UPDATE sbtest{t} SET k=k+1 WHERE id=?"),
            Kind::NonIndexUpdate => format!("UPDATE sbtest{t} SET c=? WHERE id=?"),
            Kind::Delete => format!("DELETE FROM sbtest{t} WHERE id=?"),
            Kind::Insert => format!("INSERT INTO sbtest{t} (id, k, c, pad) VALUES (?, ?, ?, ?)"),
        }
    }

    pub(crate) fn class(self) -> Class {
        match self {
            Kind::Begin | Kind::Commit => Class::Other,
            Kind::PointSelect
            | Kind::SimpleRange
            | Kind::SumRange
            | Kind::OrderRange
            | Kind::DistinctRange => Class::Read,
            _ => Class::Write,
        }
    }

    fn slot(self) -> usize {
        Kind::PER_TABLE
            .iter()
            .position(|k| *k == self)
            .unwrap_or(usize::MAX)
    }
}

/// One statement of a transaction, its values drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Planned {
    pub kind: Kind,
    /// 1-based table number (0 for BEGIN/COMMIT).
    pub table: u32,
    /// The id (the range's start); the range's end, or the insert's k.
    pub a: u32,
    pub b: u32,
}

/// A group of `oltp_common.lua`: statements on one table, `count` times.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Group {
    kinds: &'static [Kind],
    count: u32,
}

/// A workload made concrete: what each transaction runs.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub tables: u32,
    pub table_size: u32,
    pub range_size: u32,
    pub rand: RandType,
    /// BEGIN ... COMMIT around each transaction.
    pub explicit: bool,
    groups: Vec<Group>,
}

impl Plan {
    pub(crate) fn new(
        workload: Workload,
        mix: &Mix,
        tables: u32,
        table_size: u32,
        rand: RandType,
    ) -> Plan {
        let mut groups = Vec::new();
        let mut g = |kinds: &'static [Kind], count: u32| {
            if count > 0 {
                groups.push(Group { kinds, count });
            }
        };
        let reads = |g: &mut dyn FnMut(&'static [Kind], u32), point: u32| {
            g(&[Kind::PointSelect], point);
            if mix.range_selects {
                g(&[Kind::SimpleRange], mix.simple_ranges);
                g(&[Kind::SumRange], mix.sum_ranges);
                g(&[Kind::OrderRange], mix.order_ranges);
                g(&[Kind::DistinctRange], mix.distinct_ranges);
            }
        };
        let writes = |g: &mut dyn FnMut(&'static [Kind], u32)| {
            g(&[Kind::IndexUpdate], mix.index_updates);
            g(&[Kind::NonIndexUpdate], mix.non_index_updates);
            g(&[Kind::Delete, Kind::Insert], mix.delete_inserts);
        };
        // oltp_point_select: one point select, no transaction block.
        let explicit = workload != Workload::PointSelect && !mix.skip_trx;
        match workload {
            Workload::ReadOnly => reads(&mut g, mix.point_selects),
            Workload::ReadWrite => {
                reads(&mut g, mix.point_selects);
                writes(&mut g);
            }
            Workload::PointSelect => g(&[Kind::PointSelect], 1),
            Workload::WriteOnly => writes(&mut g),
        }
        Plan {
            tables,
            table_size,
            range_size: mix.range_size,
            rand,
            explicit,
            groups,
        }
    }

    /// The kinds this plan runs (what each connection prepares).
    pub(crate) fn kinds(&self) -> Vec<Kind> {
        let mut v: Vec<Kind> = Vec::new();
        if self.explicit {
            v.extend([Kind::Begin, Kind::Commit]);
        }
        for g in &self.groups {
            for k in g.kinds {
                if !v.contains(k) {
                    v.push(*k);
                }
            }
        }
        v
    }

    /// Statements per transaction.
    pub(crate) fn statements(&self) -> usize {
        self.groups
            .iter()
            .map(|g| g.kinds.len() * g.count as usize)
            .sum::<usize>()
            + if self.explicit { 2 } else { 0 }
    }

    /// Lays out one transaction into `out` (cleared first).
    pub(crate) fn transaction(&self, r: &mut Rand, out: &mut Vec<Planned>) {
        out.clear();
        let plain = |kind, table, a, b| Planned { kind, table, a, b };
        if self.explicit {
            out.push(plain(Kind::Begin, 0, 0, 0));
        }
        for g in &self.groups {
            let table = r.uniform(1, self.tables);
            for _ in 0..g.count {
                match g.kinds {
                    [Kind::Delete, Kind::Insert] => {
                        let id = r.default(1, self.table_size);
                        let k = r.default(1, self.table_size);
                        out.push(plain(Kind::Delete, table, id, 0));
                        out.push(plain(Kind::Insert, table, id, k));
                    }
                    [kind] => {
                        let id = r.default(1, self.table_size);
                        let end = id.saturating_add(self.range_size - 1);
                        out.push(plain(*kind, table, id, end));
                    }
                    _ => unreachable!("groups are one kind or delete+insert"),
                }
            }
        }
        if self.explicit {
            out.push(plain(Kind::Commit, 0, 0, 0));
        }
    }

    /// The slot of a prepared statement in a connection's id table.
    pub(crate) fn slot(&self, p: &Planned) -> usize {
        match p.kind {
            Kind::Begin => 0,
            Kind::Commit => 1,
            k => 2 + (p.table as usize - 1) * Kind::PER_TABLE.len() + k.slot(),
        }
    }

    /// Slots in a connection's id table.
    pub(crate) fn slots(&self) -> usize {
        2 + self.tables as usize * Kind::PER_TABLE.len()
    }

    /// Writes statement `p` as one command into `out`: COM_STMT_EXECUTE of
    /// `ids[slot]` when `ids` is given (its parameters' types only the
    /// first time, `typed[slot]` false, which it sets), else COM_QUERY
    /// with values inlined. `scratch` holds the random strings.
    pub(crate) fn encode(
        &self,
        p: &Planned,
        ids: Option<(&[u32], &mut [bool])>,
        r: &mut Rand,
        scratch: &mut Vec<u8>,
        out: &mut Vec<u8>,
    ) {
        scratch.clear();
        match p.kind {
            Kind::NonIndexUpdate => r.fill_template(C_TEMPLATE, scratch),
            Kind::Insert => {
                r.fill_template(C_TEMPLATE, scratch);
                r.fill_template(PAD_TEMPLATE, scratch);
            }
            _ => {}
        }
        let (c, pad) = scratch.split_at(scratch.len().min(C_TEMPLATE.len()));
        let (a, b) = (p.a as i64, p.b as i64);
        if let Some((ids, typed)) = ids {
            let slot = self.slot(p);
            let id = ids[slot];
            let types = !typed[slot];
            typed[slot] = true;
            let params: &[Param<'_>] = match p.kind {
                Kind::Begin | Kind::Commit => &[],
                Kind::PointSelect | Kind::IndexUpdate | Kind::Delete => &[Param::Int(a)],
                Kind::SimpleRange | Kind::SumRange | Kind::OrderRange | Kind::DistinctRange => {
                    &[Param::Int(a), Param::Int(b)]
                }
                Kind::NonIndexUpdate => &[Param::Str(c), Param::Int(a)],
                Kind::Insert => &[Param::Int(a), Param::Int(b), Param::Str(c), Param::Str(pad)],
            };
            protocol::stmt_execute(out, id, params, types);
            return;
        }
        let at = protocol::begin_packet(out, 0);
        out.push(protocol::COM_QUERY);
        let mut s = String::with_capacity(160);
        let t = p.table;
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let _ = match p.kind {
            Kind::Begin => write!(s, "BEGIN"),
            Kind::Commit => write!(s, "COMMIT"),
            Kind::PointSelect => write!(s, "SELECT c FROM sbtest{t} WHERE id={a}"),
            Kind::SimpleRange => write!(s, "SELECT c FROM sbtest{t} WHERE id BETWEEN {a} AND {b}"),
            Kind::SumRange => write!(
                s,
                "SELECT SUM(k) FROM sbtest{t} WHERE id BETWEEN {a} AND {b}"
            ),
            Kind::OrderRange => write!(
                s,
                "SELECT c FROM sbtest{t} WHERE id BETWEEN {a} AND {b} ORDER BY c"
            ),
            Kind::DistinctRange => write!(
                s,
                "SELECT DISTINCT c FROM sbtest{t} WHERE id BETWEEN {a} AND {b} ORDER BY c"
            ),
            Kind::IndexUpdate => write!(s, "UPDATE sbtest{t} SET k=k+1 WHERE id={a}"),
            Kind::NonIndexUpdate => write!(s, "UPDATE sbtest{t} SET c='{}' WHERE id={a}", text(c)),
            Kind::Delete => write!(s, "DELETE FROM sbtest{t} WHERE id={a}"),
            Kind::Insert => write!(
                s,
                "INSERT INTO sbtest{t} (id, k, c, pad) VALUES ({a}, {b}, '{}', '{}')",
                text(c),
                text(pad)
            ),
        };
        out.extend_from_slice(s.as_bytes());
        protocol::end_packet(out, at);
    }
}

/// `CREATE TABLE sbtestN` as `oltp_common.lua` writes it for MySQL
/// (auto-increment id, InnoDB).
/// How `prepare` lays out a table: `oltp_common.lua`'s `--auto_inc`,
/// `--secondary` and `--create_secondary`, with its defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schema {
    /// `id` is AUTO_INCREMENT (else `prepare` writes ids 1..N itself).
    pub auto_inc: bool,
    /// `id` has a plain index `xid` instead of the PRIMARY KEY.
    pub secondary: bool,
    /// The index `k_N` on `k` is made after the rows.
    pub create_secondary: bool,
}

impl Default for Schema {
    fn default() -> Schema {
        Schema {
            auto_inc: true,
            secondary: false,
            create_secondary: true,
        }
    }
}

/// `oltp_common.lua`'s CREATE TABLE for MySQL.
pub(crate) fn create_table_sql(t: u32, engine: &str, schema: Schema) -> String {
    let id = if schema.auto_inc {
        "INTEGER NOT NULL AUTO_INCREMENT"
    } else {
        "INTEGER NOT NULL"
    };
    let key = if schema.secondary {
        "KEY xid"
    } else {
        "PRIMARY KEY"
    };
    format!(
        "CREATE TABLE sbtest{t}(\n  id {id},\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  {key} (id)\n) /*! ENGINE = {engine} */"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_is_sysbench_s_sixteen_statements() {
        let p = Plan::new(
            Workload::ReadOnly,
            &Mix::default(),
            3,
            1000,
            RandType::Special,
        );
        let mut r = Rand::new(1, RandType::Special);
        let mut t = Vec::new();
        p.transaction(&mut r, &mut t);
        // BEGIN, 10 point selects, 4 ranges, COMMIT.
        assert_eq!(t.len(), 16);
        assert_eq!(p.statements(), 16);
        assert_eq!(t[0].kind, Kind::Begin);
        assert_eq!(t[15].kind, Kind::Commit);
        assert!(t[1..11].iter().all(|s| s.kind == Kind::PointSelect));
        // One table per group.
        assert!(t[1..11].iter().all(|s| s.table == t[1].table));
        assert!(t.iter().all(|s| s.table <= 3));
        assert_eq!(t[11].b - t[11].a, 99);
        let rw = Plan::new(
            Workload::ReadWrite,
            &Mix::default(),
            1,
            1000,
            RandType::Special,
        );
        assert_eq!(rw.statements(), 20);
        let wo = Plan::new(
            Workload::WriteOnly,
            &Mix::default(),
            1,
            1000,
            RandType::Special,
        );
        assert_eq!(wo.statements(), 6);
        let ps = Plan::new(
            Workload::PointSelect,
            &Mix::default(),
            1,
            1000,
            RandType::Special,
        );
        assert_eq!(ps.statements(), 1);
        assert_eq!(ps.kinds(), vec![Kind::PointSelect]);
    }

    #[test]
    fn special_puts_three_quarters_in_the_middle_percent() {
        let mut r = Rand::new(7, RandType::Special);
        let n = 200_000;
        let (a, b) = (1u32, 1_000_000u32);
        let mut middle = 0;
        for _ in 0..n {
            let v = r.default(a, b);
            assert!((a..=b).contains(&v));
            // The middle 1%: [t/2 - t/200, t/2 + t/200].
            if (495_000..=505_001).contains(&v) {
                middle += 1;
            }
        }
        let share = middle as f64 / n as f64;
        // 75% uniform in the middle, plus the Gaussian-like part's mass there.
        assert!((0.75..0.80).contains(&share), "{share}");
    }

    #[test]
    fn uniform_covers_the_range_and_templates_fill() {
        let mut r = Rand::new(3, RandType::Uniform);
        let mut seen = [false; 10];
        for _ in 0..1000 {
            seen[(r.uniform(1, 10) - 1) as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
        let mut out = Vec::new();
        r.fill_template(C_TEMPLATE, &mut out);
        assert_eq!(out.len(), 119);
        assert!(out.iter().zip(C_TEMPLATE).all(|(o, t)| if *t == b'#' {
            o.is_ascii_digit()
        } else {
            o == t
        }));
    }
}
