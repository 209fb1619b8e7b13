//! What is sent: redis-benchmark's tests (`-t set,get`) and a custom command
//! (`tare redis -- SET key:__rand_int__ val`), each built once into RESP
//! bytes with the places of `__rand_int__` marked.
//!
//! As redis-benchmark does, every `__rand_int__` in an argument becomes a
//! 12-digit number below the keyspace (`-r`) on each send: the placeholder
//! is 12 bytes too, so the bytes are rewritten in place, never rebuilt.
//! Without `-r` the placeholder is sent as it is (one key).

use std::fmt;
use std::str::FromStr;

use crate::resp;

/// The placeholder redis-benchmark replaces with a random key number.
pub(crate) const RAND: &[u8] = b"__rand_int__";

/// redis-benchmark's named tests (its `-t`), in its order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Test {
    PingInline,
    PingMbulk,
    Set,
    Get,
    Incr,
    Lpush,
    Rpush,
    Lpop,
    Rpop,
    Sadd,
    Hset,
    Spop,
    Zadd,
    Zpopmin,
    /// `LPUSH mylist`, run before the LRANGE tests so they read a list
    /// (redis-benchmark's `LPUSH (needed to benchmark LRANGE)`); never
    /// chosen by name.
    LpushForLrange,
    Lrange100,
    Lrange300,
    Lrange500,
    Lrange600,
    Mset,
}

impl Test {
    pub const ALL: [Test; 19] = [
        Test::PingInline,
        Test::PingMbulk,
        Test::Set,
        Test::Get,
        Test::Incr,
        Test::Lpush,
        Test::Rpush,
        Test::Lpop,
        Test::Rpop,
        Test::Sadd,
        Test::Hset,
        Test::Spop,
        Test::Zadd,
        Test::Zpopmin,
        Test::Lrange100,
        Test::Lrange300,
        Test::Lrange500,
        Test::Lrange600,
        Test::Mset,
    ];

    /// Whether it is one of the four LRANGE tests.
    pub(crate) fn is_lrange(self) -> bool {
        matches!(
            self,
            Test::Lrange100 | Test::Lrange300 | Test::Lrange500 | Test::Lrange600
        )
    }

    /// Its name in `-t` and in experiment files (lower case).
    pub fn name(self) -> &'static str {
        match self {
            Test::PingInline => "ping_inline",
            Test::PingMbulk => "ping_mbulk",
            Test::Set => "set",
            Test::Get => "get",
            Test::Incr => "incr",
            Test::Lpush => "lpush",
            Test::Rpush => "rpush",
            Test::Lpop => "lpop",
            Test::Rpop => "rpop",
            Test::Sadd => "sadd",
            Test::Hset => "hset",
            Test::Spop => "spop",
            Test::Zadd => "zadd",
            Test::Zpopmin => "zpopmin",
            Test::LpushForLrange => "lpush_for_lrange",
            Test::Lrange100 => "lrange_100",
            Test::Lrange300 => "lrange_300",
            Test::Lrange500 => "lrange_500",
            Test::Lrange600 => "lrange_600",
            Test::Mset => "mset",
        }
    }

    /// Its title in redis-benchmark's output (`====== SET ======`).
    pub fn title(self) -> &'static str {
        match self {
            Test::PingInline => "PING_INLINE",
            Test::PingMbulk => "PING_MBULK",
            Test::Set => "SET",
            Test::Get => "GET",
            Test::Incr => "INCR",
            Test::Lpush => "LPUSH",
            Test::Rpush => "RPUSH",
            Test::Lpop => "LPOP",
            Test::Rpop => "RPOP",
            Test::Sadd => "SADD",
            Test::Hset => "HSET",
            Test::Spop => "SPOP",
            Test::Zadd => "ZADD",
            Test::Zpopmin => "ZPOPMIN",
            Test::LpushForLrange => "LPUSH (needed to benchmark LRANGE)",
            Test::Lrange100 => "LRANGE_100 (first 100 elements)",
            Test::Lrange300 => "LRANGE_300 (first 300 elements)",
            Test::Lrange500 => "LRANGE_500 (first 500 elements)",
            Test::Lrange600 => "LRANGE_600 (first 600 elements)",
            Test::Mset => "MSET (10 keys)",
        }
    }

    /// Its arguments as redis-benchmark 7 sends them (`data`: the `-d` value).
    fn args(self, data: &[u8]) -> Vec<Vec<u8>> {
        let v = |parts: &[&[u8]]| parts.iter().map(|p| p.to_vec()).collect::<Vec<_>>();
        match self {
            Test::PingInline | Test::PingMbulk => v(&[b"PING"]),
            Test::Set => v(&[b"SET", b"key:__rand_int__", data]),
            Test::Get => v(&[b"GET", b"key:__rand_int__"]),
            Test::Incr => v(&[b"INCR", b"counter:__rand_int__"]),
            Test::Lpush | Test::LpushForLrange => v(&[b"LPUSH", b"mylist", data]),
            Test::Rpush => v(&[b"RPUSH", b"mylist", data]),
            Test::Lpop => v(&[b"LPOP", b"mylist"]),
            Test::Rpop => v(&[b"RPOP", b"mylist"]),
            Test::Sadd => v(&[b"SADD", b"myset", b"element:__rand_int__"]),
            Test::Hset => v(&[b"HSET", b"myhash", b"element:__rand_int__", data]),
            Test::Spop => v(&[b"SPOP", b"myset"]),
            Test::Zadd => v(&[b"ZADD", b"myzset", b"0", b"element:__rand_int__"]),
            Test::Zpopmin => v(&[b"ZPOPMIN", b"myzset"]),
            Test::Lrange100 => v(&[b"LRANGE", b"mylist", b"0", b"99"]),
            Test::Lrange300 => v(&[b"LRANGE", b"mylist", b"0", b"299"]),
            Test::Lrange500 => v(&[b"LRANGE", b"mylist", b"0", b"499"]),
            Test::Lrange600 => v(&[b"LRANGE", b"mylist", b"0", b"599"]),
            Test::Mset => {
                let mut a = vec![b"MSET".to_vec()];
                for _ in 0..10 {
                    a.push(b"key:__rand_int__".to_vec());
                    a.push(data.to_vec());
                }
                a
            }
        }
    }
}

impl FromStr for Test {
    type Err = String;
    fn from_str(s: &str) -> Result<Test, String> {
        let s = s.trim().to_ascii_lowercase();
        // redis-benchmark's `-t ping` and `-t lrange` name several tests;
        // `parse_tests` expands them.
        Test::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Test::ALL.iter().map(|t| t.name()).collect();
                format!(
                    "unknown test {s:?} (ping, lrange, {}, or a command)",
                    names.join(", ")
                )
            })
    }
}

impl fmt::Display for Test {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Expands a `-t` list as redis-benchmark does: `ping` is both pings,
/// `lrange` the four LRANGE tests; the tests run in redis-benchmark's
/// order, each once, and the LRANGE tests after the `LPUSH` that fills
/// their list ([`suite`]).
pub fn parse_tests(list: &str) -> Result<Vec<Test>, String> {
    let mut chosen: Vec<Test> = Vec::new();
    for name in list.split(',').filter(|s| !s.trim().is_empty()) {
        let name = name.trim();
        if name.eq_ignore_ascii_case("ping") {
            chosen.extend([Test::PingInline, Test::PingMbulk]);
        } else if name.eq_ignore_ascii_case("lrange") {
            chosen.extend(Test::ALL.into_iter().filter(|t| t.is_lrange()));
        } else {
            chosen.push(name.parse::<Test>()?);
        }
    }
    if chosen.is_empty() {
        return Err(format!("no test in {list:?}"));
    }
    Ok(suite(&chosen))
}

/// The tests to run for `chosen`: in redis-benchmark's order, and with
/// its `LPUSH (needed to benchmark LRANGE)` before the first LRANGE test,
/// so they time a list of `-n` elements, not a missing key.
pub fn suite(chosen: &[Test]) -> Vec<Test> {
    let mut out = Vec::new();
    for t in Test::ALL {
        if t == Test::Lrange100 && chosen.iter().any(|c| c.is_lrange()) {
            out.push(Test::LpushForLrange);
        }
        if chosen.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// One kind of command a run sends: a named test or a custom command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Workload {
    Test(Test),
    /// The arguments given after `--`.
    Custom(Vec<String>),
}

impl Workload {
    /// Its title as the text output prints it.
    pub fn title(&self) -> String {
        match self {
            Workload::Test(t) => t.title().to_string(),
            Workload::Custom(args) => args.join(" "),
        }
    }

    /// Its name in records (`get`, or the custom command's words).
    pub fn name(&self) -> String {
        match self {
            Workload::Test(t) => t.name().to_string(),
            Workload::Custom(args) => args.join(" "),
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// A command built once: its bytes and where its placeholders are.
#[derive(Clone, Debug)]
pub struct Template {
    pub bytes: Vec<u8>,
    /// Offsets of every 12-byte `__rand_int__` in `bytes` (only with a keyspace).
    pub slots: Vec<usize>,
}

impl Template {
    /// `data_size`: bytes of the value (`-d`); `randomize`: whether `-r`
    /// was given.
    pub fn build(w: &Workload, data_size: usize, randomize: bool) -> Result<Template, String> {
        let data = vec![b'x'; data_size];
        let args: Vec<Vec<u8>> = match w {
            Workload::Test(t) => t.args(&data),
            Workload::Custom(a) if a.is_empty() => return Err("the custom command is empty".into()),
            Workload::Custom(a) => a.iter().map(|s| s.as_bytes().to_vec()).collect(),
        };
        let bytes = if *w == Workload::Test(Test::PingInline) {
            b"PING\r\n".to_vec()
        } else {
            let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            let mut out = Vec::new();
            resp::encode(&refs, &mut out);
            out
        };
        let mut slots = Vec::new();
        if randomize {
            let mut i = 0;
            while i + RAND.len() <= bytes.len() {
                if &bytes[i..i + RAND.len()] == RAND {
                    slots.push(i);
                    i += RAND.len();
                } else {
                    i += 1;
                }
            }
        }
        Ok(Template { bytes, slots })
    }

    /// Appends one command to `out`, each placeholder a number below
    /// `keyspace` drawn from `next`.
    #[inline]
    pub fn write(&self, out: &mut Vec<u8>, keyspace: u64, mut next: impl FnMut() -> u64) {
        let start = out.len();
        out.extend_from_slice(&self.bytes);
        for &s in &self.slots {
            let mut n = next() % keyspace.max(1);
            let digits = &mut out[start + s..start + s + RAND.len()];
            for d in digits.iter_mut().rev() {
                *d = b'0' + (n % 10) as u8;
                n /= 10;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ping_expands_and_names_are_checked() {
        assert_eq!(
            parse_tests("get,ping,SET,set").unwrap(),
            vec![Test::PingInline, Test::PingMbulk, Test::Set, Test::Get]
        );
        assert_eq!(
            parse_tests("mset,lrange").unwrap(),
            vec![
                Test::LpushForLrange,
                Test::Lrange100,
                Test::Lrange300,
                Test::Lrange500,
                Test::Lrange600,
                Test::Mset
            ]
        );
        assert_eq!(
            parse_tests("lrange_300").unwrap(),
            vec![Test::LpushForLrange, Test::Lrange300]
        );
        assert_eq!(suite(&Test::ALL).len(), 20);
        assert!(parse_tests("lpush_for_lrange").is_err());
        let e = parse_tests("set,bogus").unwrap_err();
        assert!(e.starts_with("unknown test \"bogus\""), "{e}");
        assert!(parse_tests(",").is_err());
    }

    #[test]
    fn placeholders_become_twelve_digit_keys_below_the_keyspace() {
        let t = Template::build(&Workload::Test(Test::Set), 3, true).unwrap();
        assert_eq!(t.slots.len(), 1);
        let mut out = Vec::new();
        t.write(&mut out, 100_000, || 1_234_567);
        assert_eq!(
            out,
            b"*3\r\n$3\r\nSET\r\n$16\r\nkey:000000034567\r\n$3\r\nxxx\r\n".to_vec()
        );
        // Without -r, the placeholder is sent as it is.
        let t = Template::build(&Workload::Test(Test::Get), 3, false).unwrap();
        let mut out = Vec::new();
        t.write(&mut out, 0, || 5);
        assert_eq!(
            out,
            b"*2\r\n$3\r\nGET\r\n$16\r\nkey:__rand_int__\r\n".to_vec()
        );
        let m = Template::build(&Workload::Test(Test::Mset), 50, true).unwrap();
        assert_eq!(m.slots.len(), 10);
    }

    #[test]
    fn custom_commands_and_inline_ping() {
        let w = Workload::Custom(vec!["SET".into(), "a:__rand_int__".into(), "v".into()]);
        let t = Template::build(&w, 3, true).unwrap();
        assert_eq!(t.slots.len(), 1);
        assert_eq!(w.title(), "SET a:__rand_int__ v");
        let p = Template::build(&Workload::Test(Test::PingInline), 3, true).unwrap();
        assert_eq!(p.bytes, b"PING\r\n");
        assert!(Template::build(&Workload::Custom(vec![]), 3, false).is_err());
    }
}
