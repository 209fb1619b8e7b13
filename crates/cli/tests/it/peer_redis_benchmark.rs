//! redis-benchmark 7.0's own cases (its tests/integration/redis-benchmark.tcl,
//! rewritten here), plus the text and `--csv` rows `tare redis` claims,
//! replayed against a redis-server the test starts, with redis-benchmark
//! (to prove each case) and with `tare redis`: the exit status, the
//! lines redis-benchmark prints (run-dependent numbers aside) and the
//! server-side effect (each command's calls in `INFO commandstats`, the
//! keys left). `TARE_BIN` runs the cases against another tare binary (an
//! older build, to count what it passed).
//!
//! docs/redis.md lists the cases left out and tare's deliberate
//! differences.

use std::collections::BTreeMap;
use std::process::Output;
use std::time::Duration;

use tare_engine::Endpoint;
use tare_redis::resp::Value;
use tare_redis::session::Session;
use tare_testbed::RedisServer;

use crate::support::peer::{assert_cases_pass, bounded, has_lines, text, Case, Check, Tool};

/// How long a tool may run: a hung one fails its case.
const LIMIT: Duration = Duration::from_secs(60);

struct Ctx {
    server: RedisServer,
}

impl Ctx {
    fn session(&self) -> Session {
        Session::connect(
            &Endpoint::Tcp(self.server.addr()),
            Duration::from_secs(5),
            None,
            None,
            0,
        )
        .expect("the test's redis-server answers")
    }

    fn redis(&self, args: &[&str]) -> Value {
        self.session().command(args).expect("a reply")
    }

    /// `CONFIG RESETSTAT` and `FLUSHALL`, as the peer's `common_bench_setup`.
    fn reset(&self) {
        self.redis(&["CONFIG", "RESETSTAT"]);
        self.redis(&["FLUSHALL"]);
    }

    fn calls(&self) -> BTreeMap<String, u64> {
        self.session()
            .command_calls()
            .expect("INFO commandstats")
            .into_iter()
            .map(|(k, c)| (k, c.calls))
            .collect()
    }

    fn keys(&self) -> i64 {
        match self.redis(&["DBSIZE"]) {
            Value::Int(n) => n,
            other => panic!("DBSIZE: {other:?}"),
        }
    }

    /// Runs `tool` with `-h 127.0.0.1 -p PORT` and `args`.
    fn run(&self, tool: Tool, args: &[&str]) -> Output {
        let port = self.server.port.to_string();
        let mut c = tool.command("redis-benchmark", "redis");
        c.args(["-h", "127.0.0.1", "-p", &port]).args(args);
        bounded(c, LIMIT)
    }
}

fn succeeded(o: &Output) -> Check {
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "exit {:?}: {}",
            o.status.code(),
            text(&o.stderr).lines().next().unwrap_or("")
        ))
    }
}

/// `cmd`'s calls are `want` (0: the command was never called).
fn calls_are(calls: &BTreeMap<String, u64>, cmd: &str, want: u64) -> Check {
    let got = calls.get(cmd).copied().unwrap_or(0);
    if got == want {
        Ok(())
    } else {
        Err(format!("{cmd}: {got} calls, not {want}"))
    }
}

/// The peer's `default_set_get_checks`: 10 SETs, 10 GETs, no LRANGE.
fn set_get_checks(ctx: &Ctx) -> Check {
    let c = ctx.calls();
    calls_are(&c, "set", 10)?;
    calls_are(&c, "get", 10)?;
    calls_are(&c, "lrange", 0)
}

fn case_set_get(ctx: &Ctx, tool: Tool) -> Check {
    succeeded(&ctx.run(tool, &["-c", "5", "-n", "10", "-t", "set,get"]))?;
    set_get_checks(ctx)
}

fn case_uri(ctx: &Ctx, tool: Tool) -> Check {
    let uri = format!("redis://127.0.0.1:{}", ctx.server.port);
    let mut c = tool.command("redis-benchmark", "redis");
    c.args(["-u", &uri, "-c", "5", "-n", "10", "-t", "set,get"]);
    succeeded(&bounded(c, LIMIT))?;
    set_get_checks(ctx)
}

fn case_uri_auth(ctx: &Ctx, tool: Tool) -> Check {
    // The default user has no password: AUTH default ANY succeeds.
    let uri = format!("redis://default:pass@127.0.0.1:{}", ctx.server.port);
    let mut c = tool.command("redis-benchmark", "redis");
    c.args(["-u", &uri, "-c", "5", "-n", "10", "-t", "set,get"]);
    succeeded(&bounded(c, LIMIT))?;
    set_get_checks(ctx)?;
    // Every connection authenticated.
    let auth = ctx.calls().get("auth").copied().unwrap_or(0);
    if auth < 5 {
        return Err(format!("{auth} AUTH calls for 5 connections"));
    }
    Ok(())
}

fn case_full_suite(ctx: &Ctx, tool: Tool) -> Check {
    let o = ctx.run(tool, &["-c", "10", "-n", "100"]);
    succeeded(&o)?;
    let c = ctx.calls();
    // Both pings; LPUSH again before the LRANGE tests; four LRANGEs.
    for (cmd, n) in [
        ("ping", 200),
        ("set", 100),
        ("get", 100),
        ("incr", 100),
        ("lpush", 200),
        ("rpush", 100),
        ("lpop", 100),
        ("rpop", 100),
        ("sadd", 100),
        ("hset", 100),
        ("spop", 100),
        ("zadd", 100),
        ("zpopmin", 100),
        ("lrange", 400),
        ("mset", 100),
        ("rpoplpush", 0),
    ] {
        calls_are(&c, cmd, n)?;
    }
    has_lines(
        &text(&o.stdout),
        &[
            "*====== PING_INLINE ======",
            "*====== ZPOPMIN ======",
            "*====== LPUSH (needed to benchmark LRANGE) ======",
            "*====== LRANGE_100 (first 100 elements) ======",
            "*====== LRANGE_600 (first 600 elements) ======",
            "*====== MSET (10 keys) ======",
        ],
    )
}

/// The full suite's `--csv`: the header and one row per test, the LPUSH
/// that fills the list included.
fn case_full_suite_csv(ctx: &Ctx, tool: Tool) -> Check {
    let o = ctx.run(tool, &["-c", "10", "-n", "100", "--csv"]);
    succeeded(&o)?;
    let out = text(&o.stdout);
    let titles: Vec<String> = out
        .lines()
        .map(|l| {
            l.split(',')
                .next()
                .unwrap_or("")
                .trim_matches('"')
                .to_string()
        })
        .collect();
    let want = [
        "test",
        "PING_INLINE",
        "PING_MBULK",
        "SET",
        "GET",
        "INCR",
        "LPUSH",
        "RPUSH",
        "LPOP",
        "RPOP",
        "SADD",
        "HSET",
        "SPOP",
        "ZADD",
        "ZPOPMIN",
        "LPUSH (needed to benchmark LRANGE)",
        "LRANGE_100 (first 100 elements)",
        "LRANGE_300 (first 300 elements)",
        "LRANGE_500 (first 500 elements)",
        "LRANGE_600 (first 600 elements)",
        "MSET (10 keys)",
    ];
    if titles != want {
        return Err(format!("--csv rows {titles:?}"));
    }
    has_lines(
        &out,
        &[
            "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"",
            "\"PING_INLINE\",\"*.*\",\"*.*\",\"*.*\",\"*.*\",\"*.*\",\"*.*\",\"*.*\"",
        ],
    )
}

fn case_multi_thread(ctx: &Ctx, tool: Tool) -> Check {
    succeeded(&ctx.run(
        tool,
        &["--threads", "10", "-c", "5", "-n", "10", "-t", "set,get"],
    ))?;
    set_get_checks(ctx)?;
    one_key(ctx)
}

fn one_key(ctx: &Ctx) -> Check {
    match ctx.keys() {
        1 => Ok(()),
        n => Err(format!("{n} keys, not 1")),
    }
}

fn case_pipelined(ctx: &Ctx, tool: Tool) -> Check {
    succeeded(&ctx.run(
        tool,
        &["-P", "5", "-c", "10", "-n", "10010", "-t", "set,get"],
    ))?;
    let c = ctx.calls();
    calls_are(&c, "set", 10010)?;
    calls_are(&c, "get", 10010)?;
    calls_are(&c, "lrange", 0)?;
    one_key(ctx)
}

fn case_arbitrary_command(ctx: &Ctx, tool: Tool) -> Check {
    let o = ctx.run(
        tool,
        &["-c", "5", "-n", "150", "INCRBYFLOAT", "mykey", "10.0"],
    );
    succeeded(&o)?;
    let c = ctx.calls();
    calls_are(&c, "incrbyfloat", 150)?;
    calls_are(&c, "get", 0)?;
    one_key(ctx)?;
    has_lines(&text(&o.stdout), &["*====== INCRBYFLOAT mykey 10.0 ======"])
}

fn case_keyspace_length(ctx: &Ctx, tool: Tool) -> Check {
    succeeded(&ctx.run(tool, &["-r", "50", "-t", "set", "-n", "1000"]))?;
    let c = ctx.calls();
    calls_are(&c, "set", 1000)?;
    calls_are(&c, "get", 0)?;
    // 1000 keys drawn from 50: all 50 but with a chance of 50 * (49/50)^1000.
    match ctx.keys() {
        50 => Ok(()),
        n => Err(format!("{n} keys, not 50")),
    }
}

fn case_idle_maxclients(ctx: &Ctx, tool: Tool) -> Check {
    let before = match ctx.redis(&["CONFIG", "GET", "maxclients"]) {
        Value::Array(Some(v)) => v[1].text().unwrap_or_default(),
        other => return Err(format!("CONFIG GET maxclients: {other:?}")),
    };
    ctx.redis(&["CONFIG", "SET", "maxclients", "5"]);
    let o = ctx.run(tool, &["-c", "10", "-I"]);
    ctx.redis(&["CONFIG", "SET", "maxclients", &before]);
    let all = format!("{}{}", text(&o.stdout), text(&o.stderr));
    if o.status.success() || !all.contains("Error") {
        return Err(format!("exit {:?}, no error in: {all}", o.status.code()));
    }
    Ok(())
}

/// One LRANGE test: the LPUSH that fills the list runs first, so LRANGE
/// reads 100 elements (the list is still there afterwards).
fn case_lrange_fills_the_list(ctx: &Ctx, tool: Tool) -> Check {
    let o = ctx.run(tool, &["-c", "5", "-n", "100", "-t", "lrange_300", "--csv"]);
    succeeded(&o)?;
    let c = ctx.calls();
    calls_are(&c, "lpush", 100)?;
    calls_are(&c, "lrange", 100)?;
    match ctx.redis(&["LLEN", "mylist"]) {
        Value::Int(100) => {}
        other => return Err(format!("LLEN mylist: {other:?}")),
    }
    has_lines(
        &text(&o.stdout),
        &[
            "\"LPUSH (needed to benchmark LRANGE)\",*",
            "\"LRANGE_300 (first 300 elements)\",*",
        ],
    )
}

/// `-t lrange`: the four LRANGE tests.
fn case_lrange_is_all_four(ctx: &Ctx, tool: Tool) -> Check {
    let o = ctx.run(tool, &["-c", "5", "-n", "50", "-t", "lrange", "-q"]);
    succeeded(&o)?;
    let c = ctx.calls();
    calls_are(&c, "lpush", 50)?;
    calls_are(&c, "lrange", 200)?;
    has_lines(
        &text(&o.stdout),
        &[
            "*LPUSH (needed to benchmark LRANGE): * requests per second, p50=* msec",
            "*LRANGE_100 (first 100 elements): * requests per second, p50=* msec",
            "*LRANGE_300 (first 300 elements): *",
            "*LRANGE_500 (first 500 elements): *",
            "*LRANGE_600 (first 600 elements): *",
        ],
    )
}

/// The full text block: the server's persistence settings under the
/// title, both distributions, the summary.
fn case_text_block(ctx: &Ctx, tool: Tool) -> Check {
    let o = ctx.run(tool, &["-c", "5", "-n", "200", "-t", "get"]);
    succeeded(&o)?;
    has_lines(
        &text(&o.stdout),
        &[
            "*====== GET ======",
            "  200 requests completed in *.** seconds",
            "  5 parallel clients",
            "  3 bytes payload",
            "  keep alive: 1",
            "  host configuration \"save\": ",
            "  host configuration \"appendonly\": no",
            "  multi-thread: no",
            "Latency by percentile distribution:",
            "0.000% <= *.*** milliseconds (cumulative count *)",
            "100.000% <= *.*** milliseconds (cumulative count 200)",
            // One line when every request fits the first bucket (0.1 ms on
            // a quiet machine), as redis-benchmark prints it too.
            "Cumulative distribution of latencies:",
            "100.000% <= *.*** milliseconds (cumulative count 200)",
            "Summary:",
            "  throughput summary: *.** requests per second",
            "  latency summary (msec):",
            "*avg       min       p50       p95       p99*max",
        ],
    )
}

const CASES: [Case<Ctx>; 13] = [
    ("set,get", case_set_get),
    ("connecting using URI set,get", case_uri),
    (
        "connecting using URI with authentication set,get",
        case_uri_auth,
    ),
    ("full test suite", case_full_suite),
    ("full test suite --csv", case_full_suite_csv),
    ("multi-thread set,get", case_multi_thread),
    ("pipelined full set,get", case_pipelined),
    ("arbitrary command", case_arbitrary_command),
    ("keyspace length", case_keyspace_length),
    (
        "clients idle mode should return error when reached maxclients limit",
        case_idle_maxclients,
    ),
    (
        "-t lrange_300 fills the list first",
        case_lrange_fills_the_list,
    ),
    (
        "-t lrange is the four LRANGE tests",
        case_lrange_is_all_four,
    ),
    ("the text block", case_text_block),
];

#[test]
fn redis_benchmark_cases_pass_with_the_peer_and_tare() {
    // The server as the peer's tests start it: persistence off.
    let ctx = Ctx {
        server: RedisServer::start(None),
    };
    ctx.redis(&["CONFIG", "SET", "save", ""]);
    ctx.redis(&["CONFIG", "SET", "appendonly", "no"]);
    assert_cases_pass(&ctx, &CASES, Ctx::reset, "redis-benchmark");
}
