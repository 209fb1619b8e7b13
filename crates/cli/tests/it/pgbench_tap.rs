//! pgbench 15's own TAP cases (src/bin/pgbench/t/001_pgbench_with_server.pl
//! and 002_pgbench_no_server.pl), rewritten as a table: each case is run
//! with pgbench (which must pass it: the case is right) and with
//! `tare pg` against a PostgreSQL the test starts. A case passes when the
//! exit status and every expected piece of stdout and stderr match; the
//! cases tare is allowed to fail are listed in `ALLOWED` with the reason
//! (docs/pg.md, "Differences from pgbench"). Expression cases also compare
//! every `debug()` line of the two tools, value for value, under one
//! `--random-seed`.

use crate::pgserver;

use std::path::PathBuf;
use std::process::{Command, Output};

use pgserver::PgServer;

/// One case: flags, scripts, exit status and what stdout and stderr hold.
/// A pattern is a piece of text that must appear; `""` means the stream is
/// empty, `"!x"` that `x` must not appear.
struct Case {
    name: &'static str,
    args: &'static str,
    status: i32,
    out: &'static [&'static str],
    err: &'static [&'static str],
    /// (file name, optionally `@weight`, text).
    files: &'static [(&'static str, &'static str)],
    /// Both tools' `debug(...)` lines must be the same.
    same_debug: bool,
    /// Environment for both tools (`PGOPTIONS`).
    env: &'static [(&'static str, &'static str)],
    /// SQL run before each tool's run (the retry cases' tables).
    setup: &'static str,
    /// `-l`: the log files the run must leave (001's `check_pgbench_logs`).
    log: Option<LogCheck>,
    /// A check of stderr beyond its patterns (001's regular expressions).
    check: Option<StderrCheck>,
}

/// A check of a run's stderr: why it fails, if it does.
type StderrCheck = fn(&str) -> Result<(), String>;

/// 001's `check_pgbench_logs`: the run is given `--log-prefix=DIR/prefix`
/// and must leave `files` files named `prefix.PID[.N]`, each of `min` to
/// `max` lines, each line accepted by `line`.
#[derive(Clone, Copy)]
struct LogCheck {
    prefix: &'static str,
    files: usize,
    min: usize,
    max: usize,
    line: fn(&str) -> bool,
}

const fn case(
    name: &'static str,
    args: &'static str,
    status: i32,
    out: &'static [&'static str],
    err: &'static [&'static str],
) -> Case {
    Case {
        name,
        args,
        status,
        out,
        err,
        files: &[],
        same_debug: false,
        env: &[],
        setup: "",
        log: None,
        check: None,
    }
}

const fn script(
    name: &'static str,
    args: &'static str,
    status: i32,
    out: &'static [&'static str],
    err: &'static [&'static str],
    files: &'static [(&'static str, &'static str)],
) -> Case {
    Case {
        name,
        args,
        status,
        out,
        err,
        files,
        same_debug: false,
        env: &[],
        setup: "",
        log: None,
        check: None,
    }
}

/// The cases tare does not pass, each with why (docs/pg.md keeps the same
/// list). A case here that passes is reported, so the list only shrinks.
const ALLOWED: &[(&str, &str)] = &[
    (
        "help",
        "tare's --help is its own (clap's), not pgbench's text",
    ),
    ("version", "-V is tare's version"),
    (
        "invalid rate",
        "-R is the shared load flag, checked with tare's words",
    ),
];

/// Cases that need no server (002_pgbench_no_server.pl): option mistakes.
const OPTIONS: &[Case] = &[
    case("bad option", "-h home -p 5432 -U calvin --bad-option", 1, &[""], &["--help", "more information"]),
    case("no file", "-f no-such-file", 1, &[""], &["could not open file \"no-such-file\""]),
    case("no builtin", "-b no-such-builtin", 1, &[""], &["no builtin script", "\"no-such-builtin\""]),
    case("invalid weight", "--builtin=select-only@one", 1, &[""], &["invalid weight specification: @one"]),
    case("negative weight", "-b select-only@-1", 1, &[""], &["out of range", ": -1"]),
    case("bad clients", "-c three", 1, &[""], &["invalid value \"three\" for option -c/--clients"]),
    case("bad threads", "-j eleven", 1, &[""], &["invalid value \"eleven\" for option -j/--jobs"]),
    case("bad scale", "-i -s two", 1, &[""], &["invalid value \"two\" for option -s/--scale"]),
    case("bad transactions", "-t zil", 1, &[""], &["invalid value \"zil\" for option -t/--transactions"]),
    case("bad duration", "-T ten", 1, &[""], &["invalid value \"ten\" for option -T/--time"]),
    case("-t and -T", "-N -l --aggregate-interval=5 --log-prefix=x -t 1000 -T 1", 1, &[""], &["specify either "]),
    case("-T and -t", "-P 1 --progress-timestamp -l --sampling-rate=0.001 -T 10 -t 1000", 1, &[""], &["specify either "]),
    case("bad variable", "--define foobla", 1, &[""], &["invalid variable definition"]),
    case("bad fillfactor", "-i -F 1", 1, &[""], &["-F/--fillfactor must be in range"]),
    case("bad query mode", "-M no-such-mode", 1, &[""], &["invalid query mode"]),
    case("progress zero", "--progress=0", 1, &[""], &["-P/--progress must be in range"]),
    case("invalid rate", "--rate=0.0", 1, &[""], &["invalid rate limit"]),
    case("latency limit zero", "--latency-limit=0.0", 1, &[""], &["invalid latency limit"]),
    case("sampling rate zero", "--sampling-rate=0", 1, &[""], &["invalid sampling rate"]),
    case("negative aggregate", "--aggregate-interval=-3", 1, &[""], &["--aggregate-interval must be in range"]),
    case("all weights zero", "-b se@0 -b si@0 -b tpcb@0", 1, &[""], &["weight must not be zero"]),
    case("init and run", "-i -S", 1, &[""], &["cannot be used in initialization"]),
    case("run and init", "-S -F 90", 1, &[""], &["cannot be used in benchmarking"]),
    case("ambiguous builtin", "-b s", 1, &[""], &["ambiguous"]),
    case("timestamp without progress", "--progress-timestamp", 1, &[""], &["allowed only under"]),
    case("steps without init", "-I dtg", 1, &[""], &["cannot be used in benchmarking mode"]),
    case("bad init step", "-i -I dta", 1, &[""], &["unrecognized initialization step", "Allowed step characters are"]),
    case("bad random seed", "--random-seed=one", 1, &[""], &["unrecognized random seed option \"one\"", "Expecting an unsigned integer, \"time\" or \"rand\""]),
    case("bad partition method", "-i --partition-method=BAD", 1, &[""], &["\"range\"", "\"hash\"", "\"BAD\""]),
    case("bad partitions", "-i --partitions -1", 1, &[""], &["--partitions must be in range"]),
    case("method without partitions", "-i --partition-method=hash", 1, &[""], &["partition-method requires greater than zero --partitions"]),
    case("bad max tries", "--max-tries -10", 1, &[""], &["invalid number of maximum tries: \"-10\""]),
    case("unlimited tries", "--max-tries 0", 1, &[""], &["an unlimited number of transaction tries can only be used with --latency-limit or a duration"]),
    case("sampling without log", "--sampling-rate=0.01", 1, &[""], &["log sampling", "only when"]),
    case("sampling and aggregate", "-l --sampling-rate=0.1 --aggregate-interval=3", 1, &[""], &["cannot be used at the same time"]),
    case("aggregate without log", "--aggregate-interval=3", 1, &[""], &["aggregation", "only when"]),
    case("prefix without log", "--log-prefix=x", 1, &[""], &["prefix", "only when"]),
    case("aggregate above duration", "-l -T 1 --aggregate-interval=3", 1, &[""], &["not be higher"]),
    case("duration not a multiple", "-l -T 5 --aggregate-interval=3", 1, &[""], &["multiple"]),
    case("help", "--help", 0, &["benchmarking tool for PostgreSQL", "Initialization options:"], &[""]),
    case("version", "-V", 0, &["pgbench (PostgreSQL)"], &[""]),
    case("builtin list", "-b list", 0, &[""], &["Available builtin scripts:", "tpcb-like", "simple-update", "select-only"]),
    case("show script", "--show-script se", 0, &[""], &["select-only: ", "SELECT abalance FROM pgbench_accounts WHERE", "!UPDATE", "!INSERT"]),
];

/// Script mistakes found before any connection (002): exit 1.
const SCRIPT_MISTAKES: &[(&str, &str, &[&str])] = &[
    (
        "missing endif",
        "\\if 1",
        &["\\if without matching \\endif"],
    ),
    (
        "elif without if",
        "\\elif 1",
        &["\\elif without matching \\if"],
    ),
    (
        "else without if",
        "\\else",
        &["\\else without matching \\if"],
    ),
    (
        "endif without if",
        "\\endif",
        &["\\endif without matching \\if"],
    ),
    (
        "elif after else",
        "\\if 1\n\\else\n\\elif 0\n\\endif",
        &["\\elif after \\else"],
    ),
    (
        "else after else",
        "\\if 1\n\\else\n\\else\n\\endif",
        &["\\else after \\else"],
    ),
    (
        "if without condition",
        "\\if\n\\endif\n",
        &["syntax error in command \"if\""],
    ),
    (
        "elif bad condition",
        "\\if 0\n\\elif +\n\\endif\n",
        &["syntax error in command \"elif\""],
    ),
    (
        "else with argument",
        "\\if 0\n\\else BAD\n\\endif\n",
        &["unexpected argument in command \"else\""],
    ),
    (
        "endif with argument",
        "\\if 0\n\\endif BAD\n",
        &["unexpected argument in command \"endif\""],
    ),
    (
        "least of nothing",
        "\\set i least()\n",
        &["at least one argument expected (least)"],
    ),
    (
        "greatest of nothing",
        "\\set i greatest()\n",
        &["at least one argument expected (greatest)"],
    ),
    (
        "hash of nothing",
        "\\set i hash()\n",
        &["unexpected number of arguments (hash)"],
    ),
    (
        "hash of three",
        "\\set i hash(1,2,3)\n",
        &["unexpected number of arguments (hash)"],
    ),
    (
        "bigint constant",
        "\\set i 100000000000000000000\n",
        &["bigint constant overflow"],
    ),
    (
        "double constant",
        "\\set d 1.0E309\n",
        &["double constant overflow"],
    ),
    (
        "double constant fraction",
        "\\set d .1E310\n",
        &["double constant overflow"],
    ),
    (
        "caret",
        "\\set i 1 +\n",
        &["set i 1 ", "^ error found here"],
    ),
    (
        "permute of one",
        "\\set i permute(1)\n",
        &["unexpected number of arguments (permute)"],
    ),
    (
        "permute of four",
        "\\set i permute(1, 2, 3, 4)\n",
        &["unexpected number of arguments (permute)"],
    ),
];

/// `001`'s error table: one script each, run with these flags.
const ERROR_FLAGS: &str = "-n -t 1 -Dfoo=bla -Dnull=null -Dtrue=true -Done=1 -Dzero=0.0 -Dbadtrue=trueXXX -Dmaxint=9223372036854775807 -Dminint=-9223372036854775808 -M prepared";

const ERRORS: &[(&str, i32, &str, &[&str])] = &[
    (
        "sql syntax error",
        2,
        "SELECT 1 + ;\n",
        &["ERROR:  syntax error"],
    ),
    (
        "too many parameters",
        1,
        "",
        &["statement has too many arguments", "255"],
    ),
    (
        "shell fails",
        2,
        "\\shell no-such-command\n",
        &["(shell)", "meta-command failed"],
    ),
    (
        "shell undefined variable",
        2,
        "\\shell echo ::foo :nosuchvariable\n",
        &["undefined variable \":nosuchvariable\""],
    ),
    ("shell without command", 1, "\\shell", &["missing command"]),
    (
        "shell too many words",
        1,
        "",
        &["too many arguments in command \"shell\""],
    ),
    (
        "set syntax error",
        1,
        "\\set i 1 +",
        &["syntax error in command \"set\""],
    ),
    (
        "set unknown function",
        1,
        "\\set i noSuchFunction()",
        &["unexpected function name"],
    ),
    ("set bad name", 2, "\\set . 1", &["invalid variable name"]),
    (
        "set division by zero",
        2,
        "\\set i 1/0",
        &["division by zero"],
    ),
    (
        "set undefined variable",
        2,
        "\\set i :nosuchvariable",
        &["undefined variable \"nosuchvariable\""],
    ),
    (
        "set bad character",
        1,
        "\\set i ;",
        &["unexpected character", ";"],
    ),
    (
        "set 17 arguments",
        2,
        "\\set i least(0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16)",
        &["too many function arguments"],
    ),
    (
        "random empty range",
        2,
        "\\set i random(5,3)",
        &["empty range given to random"],
    ),
    (
        "random range too large",
        2,
        "\\set i random(:minint, :maxint)",
        &["random range is too large"],
    ),
    (
        "gaussian parameter",
        2,
        "\\set i random_gaussian(0, 10, 1.0)",
        &["gaussian param", "at least 2"],
    ),
    (
        "exponential parameter",
        2,
        "\\set i random_exponential(0, 10, 0.0)",
        &["exponential parameter must be greater "],
    ),
    (
        "zipfian parameter one",
        2,
        "\\set i random_zipfian(0, 10, 1)",
        &["zipfian parameter must be in range [1.001, 1000]"],
    ),
    (
        "zipfian parameter large",
        2,
        "\\set i random_zipfian(0, 10, 1000000)",
        &["zipfian parameter must be in range [1.001, 1000]"],
    ),
    (
        "malformed variable",
        2,
        "\\set i :foo + 1",
        &["malformed variable \"foo\" value: \"bla\""],
    ),
    ("set without expression", 1, "\\set i", &["syntax error"]),
    ("set alone", 1, "\\set", &["missing argument"]),
    (
        "not of a double",
        2,
        "\\set b NOT 0.0",
        &["cannot coerce double to boolean"],
    ),
    (
        "boolean plus int",
        2,
        "\\set i TRUE + 2",
        &["cannot coerce boolean to int"],
    ),
    (
        "ln of boolean",
        2,
        "\\set d ln(TRUE)",
        &["cannot coerce boolean to double"],
    ),
    (
        "case without when",
        1,
        "\\set i CASE TRUE THEN 1 ELSE 0 END",
        &["syntax error in command \"set\""],
    ),
    (
        "random of booleans",
        2,
        "\\set b random(FALSE, TRUE)",
        &["cannot coerce boolean to int"],
    ),
    (
        "ln of two",
        1,
        "\\set d ln(1.0, 2.0))",
        &["unexpected number of arguments"],
    ),
    (
        "greatest of none",
        1,
        "\\set i greatest())",
        &["at least one argument expected"],
    ),
    (
        "double to int",
        2,
        "\\set i int(1E32)",
        &["double to int overflow for 100"],
    ),
    (
        "add overflow",
        2,
        "\\set i (1<<62) + (1<<62)",
        &["int add out"],
    ),
    (
        "sub overflow",
        2,
        "\\set i 0 - (1<<62) - (1<<62) - (1<<62)",
        &["int sub out"],
    ),
    ("mul overflow", 2, "\\set i 2 * (1<<62)", &["int mul out"]),
    (
        "div overflow",
        2,
        "\\set i :minint / -1",
        &["bigint div out of range"],
    ),
    (
        "setshell not an int",
        2,
        "\\setshell i echo -n one",
        &["command must return an integer"],
    ),
    (
        "setshell without command",
        1,
        "\\setshell var",
        &["missing argument "],
    ),
    (
        "setshell fails",
        2,
        "\\setshell var no-such-command",
        &["could not read result "],
    ),
    (
        "sleep undefined variable",
        2,
        "\\sleep :nosuchvariable",
        &["sleep: undefined variable"],
    ),
    (
        "sleep too many",
        1,
        "\\sleep too many args",
        &["too many arguments"],
    ),
    ("sleep alone", 1, "\\sleep", &["missing argument", "sleep"]),
    (
        "sleep unit",
        1,
        "\\sleep 1 week",
        &["unrecognized time unit"],
    ),
    (
        "unknown command",
        1,
        "\\nosuchcommand",
        &["invalid command", "\"nosuchcommand\""],
    ),
    ("empty script", 1, "", &["empty command list for script"]),
    (
        "bad boolean",
        2,
        "\\set b :badtrue or true",
        &["malformed variable", "trueXXX"],
    ),
    (
        "permute size zero",
        2,
        "\\set i permute(0, 0)",
        &["permute size parameter must be greater than zero"],
    ),
    (
        "gset no row",
        2,
        "SELECT WHERE FALSE \\gset",
        &["expected one row, got 0"],
    ),
    (
        "gset alone",
        1,
        "\\gset",
        &["gset must follow an SQL command"],
    ),
    (
        "gset after set",
        1,
        "\\set i +1\n\\gset",
        &["gset must follow an SQL command"],
    ),
    (
        "gset two words",
        1,
        "SELECT 1 \\gset a b",
        &["too many arguments"],
    ),
    (
        "gset twice",
        1,
        "SELECT 1 AS i \\gset\n\\gset",
        &["gset must follow an SQL command"],
    ),
    (
        "gset non select",
        2,
        "DROP TABLE IF EXISTS no_such_table \\gset",
        &["expected one row, got 0"],
    ),
    (
        "gset default name",
        2,
        "SELECT 1 \\gset",
        &["error storing into variable ?column?"],
    ),
    (
        "gset bad name",
        2,
        "SELECT 1 AS \"bad name!\" \\gset",
        &["error storing into variable bad name!"],
    ),
];

/// An expression script of our own covering what 001's expression case
/// covers: every function and operator, NULLs, CASE, IS, booleans from
/// `-D`, `\if` chains, hashes, `permute`, the four random draws.
const EXPRESSIONS: &str = r#"-- draws: the same seed gives pgbench's values
\set v_u debug(random(10, 19))
\set v_e debug(random_exponential(100, 199, 10.0))
\set v_g debug(random_gaussian(1000, 1999, 10.0))
\set v_z debug(random_zipfian(1, 9, 1.3))
\set v_z2 debug(random_zipfian(1, 1000, 2.5))
\set v_a debug(abs(-7) + greatest(1, 9, 3) + least(4, -2))
\set v_b debug(int(2.5) + int(3.5) + int(-2.5))
\set v_c debug(17 / (4|1) + (4 + (7 >> 2)) - 3 % -1)
\set v_d debug(- (3 * 4 - (-(~ 1) + -(~ 0))) / -1)
\set v_f debug(64 % (((2 + 1 * 2 + (1 # 2) | 4 * (2 & 11)) - (1 << 2)) + 2))
\set v_h debug(sqrt(2.25) * abs(-0.8E1) + double(3) * (-75.0 / :foo))
\set v_k debug(pi() * 2 + ln(exp(1.5)) + greatest(1, 2.5, -1.17))
\set v_l debug(least(-5.18, .0E0, 1.0/0) * -3.3)
\set v_m debug(1.0 / 0)
\set v_n debug(-1.0 / 0 + 1)
\set v_p debug(pow(-3, 3) + pow(2.0, 10) + power(-5.0, -5.0))
\set v_q debug(pow(9223372036854775807, 2))
\set v_r debug(pow(10, 30))
\set v_s debug(0.1 + 0.2)
\set v_t debug(1.0E-7 * 3)
\set v_v debug(mod(-19 * 11 - 17, 19) + mod(13 * 7 + 12, 13))
\set v_w debug(1.0 = 0.0 or 1.0 != 0.0 and 2 >= 2)
\set v_x debug(case when 0 > 1 then 1 when 2 <= 2 then 22 else 3 end)
\set v_y debug(case when false then 1 end)
\set v_nn debug(NULL * 3 + exp(NULL))
\set v_n1 debug(:v_nn IS NULL AND :t IS TRUE AND NOT :f AND :f IS NOT TRUE)
\set v_n2 debug(:v_nn ISNULL OR :v_u NOTNULL)
\set v_n3 debug(NULL AND FALSE)
\set v_n4 debug(NULL OR TRUE)
\set v_n5 debug(NULL AND TRUE)
\set v_n6 debug(NOT :v_nn)
\set v_n7 debug(:n IS NULL)
\set v_n8 debug(CASE WHEN :n THEN 1 ELSE 2 END)
\set v_bo debug(:t AND :yes OR :no)
\set v_i3 debug(:i * 2)
\set v_dd debug(:d + 1)
\set v_h1 debug(hash(10, 5432))
\set v_h2 debug(hash_murmur2(-3, 1))
\set v_h3 debug(hash_fnv1a(10, 5432))
\set v_h4 debug(hash(10) = hash(10, :default_seed))
\set v_h5 debug(hash_fnv1a(123456789))
\set v_p1 debug(permute(3, 10, 42) + permute(7, 1000000, 5))
\set v_p2 debug(permute(9223372036854775806, 9223372036854775797, 5432))
\set v_p3 debug(permute(5, 7))
\set v_mn debug(-9223372036854775808)
\set v_mx debug(-(:v_mn + 1))
\set v_sc debug(:scale + :client_id * 10)
\set v_rs debug(:random_seed)
\if :v_u > 15
\set v_br debug(1)
\elif :v_u > 12
\set v_br debug(2)
\else
\set v_br debug(3)
\endif
\if false
\set v_never debug(0)
\elif :v_nn
\set v_never debug(0)
\endif
\set v_after debug(4)
SELECT :v_nn, :v_n1, :v_mx, :v_s, :v_t;
"#;

/// 001's cases that need the server, in its order.
fn server_cases() -> Vec<Case> {
    vec![
        script("concurrent OID generation", "--no-vacuum --client=5 --protocol=prepared --transactions=25", 0,
            &["processed: 125/125"], &[""],
            &[("oid.sql", "CREATE TYPE pg_temp.e AS ENUM ('l1', 'l2', 'l3', 'l4'); DROP TYPE pg_temp.e;")]),
        case("no such database", "no-such-database", 1, &[""], &["connection to server", "FATAL:  database \"no-such-database\" does not exist"]),
        case("run without init", "-S -t 1", 1, &[], &["Perhaps you need to do initialization"]),
        case("init", "-i", 0, &[""], &["creating tables", "vacuuming", "creating primary keys", "done in "]),
        case("init with every option", "--initialize --init-steps=dtpvg --scale=1 --unlogged-tables --fillfactor=98 --foreign-keys --quiet --tablespace=tap_ts --index-tablespace=tap_ts --partitions=2 --partition-method=hash", 0,
            &[""], &["dropping old tables", "creating tables", "creating 2 partitions", "vacuuming", "creating primary keys", "creating foreign keys", "done in "]),
        case("init steps", "--initialize --init-steps=dtpvGvv --no-vacuum --foreign-keys --unlogged-tables --partitions=3", 0,
            &[""], &["dropping old tables", "creating tables", "creating 3 partitions", "creating primary keys", "generating data (server-side)", "creating foreign keys", "!vacuuming", "done in "]),
        case("tpcb-like", "--transactions=5 -Dfoo=bla --client=2 --protocol=simple --builtin=t --connect -n -v -n", 0,
            &["builtin: TPC-B", "clients: 2\n", "processed: 10/10", "mode: simple", "maximum number of tries: 1"], &[""]),
        case("simple update", "--transactions=20 --client=5 -M extended --builtin=si -C --no-vacuum -s 1", 0,
            &["builtin: simple update", "clients: 5\n", "threads: 1\n", "processed: 100/100", "mode: extended"], &["scale option ignored"]),
        case("select only --debug", "-t 100 -c 7 -M prepared -b se --debug", 0,
            &["builtin: select only", "clients: 7\n", "threads: 1\n", "processed: 700/700", "mode: prepared"], &["vacuum", "client 0", "sending", "receiving", "executing"]),
        script("custom scripts", "-t 100 -c 1 -j 2 -M prepared -n", 0,
            &["type: multiple scripts", "mode: prepared", "custom_1.sql", "weight: 2", "custom_2.sql", "weight: 1", "processed: 100/100"], &[""],
            &[("custom_1.sql@1", "-- a select\n\\set aid random(1, :scale * 100000)\nSELECT abalance::INTEGER AS balance\n  FROM pgbench_accounts\n  WHERE aid=:aid;\n"),
              ("custom_2.sql@2", "-- the special variables\nBEGIN;\n\\set foo 1\nSELECT :foo::INT + :scale::INT * :client_id::INT AS bla;\nCOMMIT;\n")]),
        script("custom script simple", "-n -t 10 -c 1 -M simple", 0,
            &["custom_3.sql", "processed: 10/10", "mode: simple"], &[""],
            &[("custom_3.sql", "\\set aid random(1, :scale * 100000)\nBEGIN;\nSELECT abalance::INTEGER AS balance\n  FROM pgbench_accounts\n  WHERE aid=:aid;\nCOMMIT;\n")]),
        script("custom script extended", "-n -t 10 -c 2 -M extended", 0,
            &["custom_4.sql", "processed: 20/20", "mode: extended"], &[""],
            &[("custom_4.sql", "\\set aid random(1, :scale * 100000)\nBEGIN;\nSELECT abalance::INTEGER AS balance\n  FROM pgbench_accounts\n  WHERE aid=:aid;\nCOMMIT;\n")]),
        script("json parameter error", "-n -t1 -c1 -M prepared", 2, &[], &["ERROR:  invalid input syntax for type json"],
            &[("param_1.sql", "select '{ invalid ' as value \\gset\nselect $$'a long' 'quoted'; 'text'$$ as long \\gset\nselect column1::jsonb from (values (:value), (:long)) as q;\n")]),
        script("division by zero parameters", "-n -t1 -c1 -M prepared", 2, &[], &["ERROR:  division by zero"],
            &[("param_2.sql", "select '1' as one \\gset\nSELECT 1 / (random() / 2)::int, :one::int, :two::int;\n")]),
        script("smallint parameter error", "-n -t1 -c1 -M prepared", 2, &[], &["ERROR:  invalid input syntax for type smallint: \"1a\""],
            &[("param_6.sql", "select 42 as value1, '1a' as value2 \\gset\nselect :value1::smallint, :value2::smallint;\n")]),
        Case { same_debug: true, ..script("expressions", "--random-seed=5432 -t 1 -Dfoo=-10.1 -Dbla=false -Di=+3 -Dn=null -Dt=t -Df=of -Dd=1.0 -Dyes=y -Dno=n", 0,
            &["expressions.sql", "processed: 1/1"],
            &["setting random seed to 5432", "command=1): int 17\n", "command=2): int 104\n", "command=3): int 1498\n", "command=4): int 3\n",
              "int -5817877081768721676\n", "int -7793829335365542153\n", "double Infinity\n", "boolean true\n", "null\n"],
            &[("expressions.sql", EXPRESSIONS)]) },
        Case { same_debug: true, ..script("random streams of clients and threads", "--random-seed=987654321 -t 4 -c 5 -n", 0,
            &["processed: 20/20"], &["setting random seed to 987654321"],
            &[("streams.sql", "\\set u debug(random(1, 1000000000) * 100 + :client_id)\n\\set e debug(random_exponential(1, 1000000, 3.0) * 100 + :client_id)\n\\set g debug(random_gaussian(1, 1000000, 2.5) * 100 + :client_id)\n\\set z debug(random_zipfian(1, 1000000, 1.07) * 100 + :client_id)\n\\set p debug(permute(:client_id, 1000) + hash(:client_id))\n")]) },
        Case { same_debug: true, ..script("script choice", "--random-seed=31 -t 40 -c 1 -n", 0,
            &["processed: 40/40"], &[],
            &[("one.sql@1", "\\set s debug(1)\n"), ("two.sql@3", "\\set s debug(2)\n"), ("three.sql@2", "\\set s debug(random(1, 100))\n")]) },
        script("backslash commands", "-t 1", 0,
            &["processed: 1/1", "shell-echo-output"], &["command=8): int 1\n"],
            &[("backslash.sql", "\\set zero 0\n\\set one 1.0\n\\sleep :one ms\n\\sleep 100 us\n\\sleep 0 s\n\\sleep :zero\n\\setshell another_one\\\n  echo \\\n    :one\n\\set n debug(:another_one)\n\\shell echo shell-echo-output\n")]),
        script("gset", "-t 1", 0,
            &["processed: 1/1"], &["command=3): int 0\n", "command=5): int 1\n", "command=6): int 2\n", "command=8): int 3\n", "command=10): int 4\n", "command=12): int 5\n"],
            &[("gset.sql", "SELECT \\gset\nSELECT 0 AS i0 \\gset\n\\set i debug(:i0)\nSELECT 1 AS i1, 2 AS i2 \\gset\n\\set i debug(:i1)\n\\set i debug(:i2)\nSELECT 3 AS i3 \\gset x_\n\\set i debug(:x_i3)\nSELECT 0 AS i4, 4 AS i4 \\gset\n\\set i debug(:i4)\n\\; \\; SELECT 0 AS i5 \\; SELECT 5 AS i5 \\; \\; \\gset\n\\set i debug(:i5)\n")]),
        script("gset two rows", "-t 1", 2, &["processed: 0/1"], &["expected one row, got 2"],
            &[("gset_two.sql", "SELECT 5432 AS fail UNION SELECT 5433 ORDER BY 1 \\gset\n")]),
        script("aset", "-t 1", 0, &["processed: 1/1"], &["command=3): int 8\n", "command=4): int 7\n"],
            &[("aset.sql", "\\; SELECT 6 AS i6 \\; SELECT 7 AS i7 \\; \\aset\nSELECT 8 AS i6 UNION SELECT 9 ORDER BY 1 DESC \\aset\n\\set i debug(:i6)\n\\set i debug(:i7)\n")]),
        script("aset empty", "-t 1", 2, &["processed: 0/1"], &["undefined variable \"i8\"", "evaluation of meta-command failed"],
            &[("aset_empty.sql", "\\; SELECT 5432 AS i8 WHERE FALSE \\; \\aset\n\\set i debug(:i8)\n")]),
        script("dollar quotes and null", "-t 2 -n", 0, &["processed: 2/2"], &[""],
            &[("dollar.sql", "DO $$BEGIN PERFORM 1; END$$;\nSELECT $tag$ ; $$ $tag$ AS x \\gset\n\\set n NULL\nSELECT :n::int IS NULL AS isnull \\gset\n\\if NOT :isnull\nSELECT 1/0;\n\\endif\n")]),
        script("copy refused", "-t 1 -n", 2, &[], &["COPY is not supported"],
            &[("copy.sql", "CREATE TEMP TABLE t(x int); COPY t FROM stdin;\n")]),
        script("pipeline", "-t 1 -n -M extended", 0, &["actually processed: 1/1"], &[],
            &[("pipeline.sql", "\\startpipeline\nselect 1;\nselect 1;\nselect 1;\n\\endpipeline\n")]),
        script("pipeline prepared", "-t 1 -n -M prepared", 0, &["actually processed: 1/1"], &[],
            &[("pipeline_p.sql", "\\startpipeline\nselect 1;\nselect 1;\n\\endpipeline\n")]),
        script("pipeline twice", "-t 1 -n -M extended", 2, &[], &["already in pipeline mode"],
            &[("pipeline_2.sql", "\\startpipeline\n\\startpipeline\n")]),
        script("pipeline not started", "-t 1 -n -M extended", 2, &[], &["not in pipeline mode"],
            &[("pipeline_3.sql", "\\endpipeline\n")]),
        script("pipeline gset", "-t 1 -n -M extended", 2, &[], &["gset is not allowed in pipeline mode"],
            &[("pipeline_4.sql", "\\startpipeline\nselect 1 \\gset f\n\\endpipeline\n")]),
        script("pipeline serializable", "-c4 -j2 -t 10 -n -M prepared", 0, &["actually processed: 40/40"], &[],
            &[("pipeline_s.sql", "\\startpipeline\nBEGIN ISOLATION LEVEL SERIALIZABLE;\nselect 1;\nselect 1;\nEND;\n\\endpipeline\n")]),
        case("throttling latency limit", "-t 100 -S --rate=100000 --latency-limit=1000000 -c 2 -n -r", 0, &["processed: 200/200", "builtin: select only"], &[""]),
        script("late throttling", "-t 10 --rate=100000 --latency-limit=1 -n -r", 0, &["sleep.sql", "above the 1.0 ms latency limit"], &[""],
            &[("sleep.sql", "\\sleep 2ms")]),
        // Clients 0 and 1, about half of 2 x 50 lines.
        Case { log: Some(LogCheck { prefix: "001_pgbench_log_2", files: 1, min: 8, max: 92, line: |l| log_line(l, "01") }),
            ..case("logs sampling", "-n -S -t 50 -c 2 --log --sampling-rate=0.5", 0, &["select only", "processed: 100/100"], &[""]) },
        Case { log: Some(LogCheck { prefix: "001_pgbench_log_3", files: 1, min: 10, max: 10, line: |l| log_line(l, "0") }),
            ..case("logs", "-n -b select-only -t 10 -l", 0, &["select only", "processed: 10/10"], &[""]) },
        script("incomplete transaction block", "--no-vacuum", 2, &["processed: 1/10"],
            &["client 0 aborted: end of script reached without completing the last transaction"],
            &[("incomplete.sql", "BEGIN;SELECT 1;")]),
        // 001's retry cases. pgbench's `-d` (its --debug) is tare's
        // database, so both tools are given `--debug`.
        Case { env: REPEATABLE_READ, setup: RETRY_TABLES, check: Some(same_update_retried),
            ..script("concurrent update with retrying", "-n -c 2 -t 1 --debug --verbose-errors --max-tries 2", 0,
                &["processed: 2/2", "number of transactions retried: 1 (", "total number of retries: 1\n"], &[],
                &[("serialization.sql", SERIALIZATION)]) },
        Case { env: READ_COMMITTED, setup: RETRY_TABLES, check: Some(deadlock_error),
            ..script("deadlock with retrying", "-n -c 2 -t 1 --max-tries 2 --verbose-errors", 0,
                &["processed: 2/2", "number of transactions retried: 1 (", "total number of retries: 1\n"], &[],
                &[("deadlock.sql", DEADLOCK)]) },
    ]
}

const REPEATABLE_READ: &[(&str, &str)] = &[(
    "PGOPTIONS",
    "-c default_transaction_isolation=repeatable\\ read",
)];
const READ_COMMITTED: &[(&str, &str)] = &[(
    "PGOPTIONS",
    "-c default_transaction_isolation=read\\ committed",
)];
const RETRY_TABLES: &str = "DROP TABLE IF EXISTS first_client_table, xy; \
    CREATE UNLOGGED TABLE first_client_table (value integer); \
    CREATE UNLOGGED TABLE xy (x integer, y integer); INSERT INTO xy VALUES (1, 2);";

/// 001's serialization script (its comments shortened): the second client
/// waits for the first, whose commit makes the second's update fail with
/// a serialization failure; the retry finds first_client_table filled.
const SERIALIZATION: &str = r#"\set delta random(-5000, 5000)
SELECT pg_advisory_lock(0);
BEGIN;
UPDATE xy SET y = y + :delta WHERE x = 1 AND pg_advisory_lock(1) IS NOT NULL;
DO $$
DECLARE
  exists boolean;
  waiters integer;
BEGIN
  SELECT EXISTS (SELECT * FROM first_client_table) INTO STRICT exists;
  IF NOT exists THEN
    PERFORM pg_advisory_unlock(0);
    LOOP
      SELECT COUNT(*) INTO STRICT waiters FROM pg_locks WHERE
      locktype = 'advisory' AND objsubid = 1 AND
      ((classid::bigint << 32) | objid::bigint = 1::bigint) AND NOT granted;
      IF waiters = 1 THEN
        INSERT INTO first_client_table VALUES (1);
        EXIT;
      END IF;
    END LOOP;
  END IF;
END$$;
COMMIT;
SELECT pg_advisory_unlock_all();
"#;

/// 001's deadlock script: the two clients take advisory locks 2 and 3 in
/// opposite orders; one of them gets a deadlock error and retries.
const DEADLOCK: &str = r#"SELECT pg_advisory_unlock_all();
SELECT pg_advisory_lock(0);
SELECT pg_advisory_lock(1);
DO $$
DECLARE
  exists boolean;
BEGIN
  SELECT EXISTS (SELECT * FROM first_client_table) INTO STRICT exists;
  IF exists THEN
    PERFORM pg_advisory_unlock(0);
    PERFORM pg_advisory_lock(3);
    PERFORM pg_advisory_lock(2);
  ELSE
    INSERT INTO first_client_table VALUES (1);
    PERFORM pg_advisory_lock(2);
  END IF;
END$$;
DO $$
DECLARE
  num_rows integer;
  waiters integer;
BEGIN
  SELECT COUNT(*) FROM first_client_table INTO STRICT num_rows;
  IF num_rows = 1 THEN
    INSERT INTO first_client_table VALUES (2);
    PERFORM pg_advisory_unlock(0);
    PERFORM pg_advisory_unlock(1);
    LOOP
      SELECT COUNT(*) INTO STRICT waiters FROM pg_locks WHERE
      locktype = 'advisory' AND
      objsubid = 1 AND
      ((classid::bigint << 32) | objid::bigint = 2::bigint) AND
      NOT granted;
      IF waiters = 1 THEN
        EXIT;
      END IF;
    END LOOP;
    PERFORM pg_advisory_lock(0);
  END IF;
END$$;
SELECT pg_advisory_lock(3);
SELECT pg_advisory_unlock_all();
"#;

/// 001's `(client (0|1) sending UPDATE xy SET y = y \+ -?\d+\b).*client \2
/// got an error in command 3 \(SQL\) of script 0; ERROR:  could not
/// serialize access due to concurrent update\b.*\1`: the client whose
/// update failed sent it again with the same `:delta`.
fn same_update_retried(err: &str) -> Result<(), String> {
    for id in ["0", "1"] {
        let failed = format!("client {id} got an error in command 3 (SQL) of script 0; ERROR:  could not serialize access due to concurrent update");
        let Some(at) = err.find(&failed) else {
            continue;
        };
        let sending = format!("client {id} sending UPDATE xy SET y = y + ");
        let delta = |s: &str| -> Option<String> {
            let i = s.find(&sending)? + sending.len();
            Some(s[i..].split_whitespace().next()?.to_string())
        };
        let before = err[..at].rfind(&sending).and_then(|i| delta(&err[i..]));
        let after = delta(&err[at..]);
        return match (before, after) {
            (Some(b), Some(a)) if a == b && b.trim_start_matches('-').parse::<u32>().is_ok() => {
                Ok(())
            }
            (b, a) => Err(format!(
                "the retried update's delta: before {b:?}, after {a:?}"
            )),
        };
    }
    Err("no serialization failure of command 3".into())
}

/// 001's `client (0|1) got an error in command (3|5) \(SQL\) of script 0;
/// ERROR:  deadlock detected\b`.
fn deadlock_error(err: &str) -> Result<(), String> {
    let hit = ["0", "1"].iter().any(|id| {
        ["3", "5"].iter().any(|cmd| {
            err.contains(&format!("client {id} got an error in command {cmd} (SQL) of script 0; ERROR:  deadlock detected"))
        })
    });
    if hit {
        Ok(())
    } else {
        Err("no deadlock error of command 3 or 5".into())
    }
}

/// Beyond the TAP files: pgbench 15's output that its own tests do not
/// pin, run the same way (pgbench must pass each case, then tare): the
/// per-script retry and failure lines, the statement latencies' retries
/// column, the server's caret under a failed statement and one abort
/// line (or two, for a meta command) per client. Judged on their own,
/// not counted among the TAP cases.
fn output_cases() -> Vec<Case> {
    const TWO: &[(&str, &str)] = &[("one.sql", "select 1;\n"), ("two.sql", "select 2;\n")];
    vec![
        script("per-script retries", "-n -t 5 -c 2 --max-tries 3 -r", 0,
            &["transaction type: multiple scripts\n", "maximum number of tries: 3\n",
              "number of transactions retried: 0 (0.000%)\ntotal number of retries: 0\n",
              " - number of failed transactions: 0 (0.000%)\n - number of transactions retried: 0 (0.000%)\n - total number of retries: 0\n - latency average = ",
              " - statement latencies in milliseconds, failures and retries:\n",
              "           0           0  select 1;\n", "           0           0  select 2;\n"], &[""], TWO),
        script("per-script failures by kind and skips", "-n -t 5 -c 2 --max-tries 2 --failures-detailed --rate=1000 --latency-limit=1000", 0,
            &[" - number of failed transactions: 0 (0.000%)\n - number of serialization failures: 0 (0.000%)\n - number of deadlock failures: 0 (0.000%)\n - number of transactions retried: 0 (0.000%)\n - total number of retries: 0\n - number of transactions skipped: 0 (0.000%)\n - latency average = "],
            &[""], TWO),
        script("one script, no retries column", "-n -t 2 -r", 0,
            &["statement latencies in milliseconds and failures:\n", "           0  select 1;\n", "!retried"], &[""],
            &[("one.sql", "select 1;\n")]),
        // 001's serialization script beside one that is never chosen: the
        // retry is the first script's, and the UPDATE's.
        Case { env: REPEATABLE_READ, setup: RETRY_TABLES,
            ..script("per-script retried serialization failure", "-n -c 2 -t 1 --max-tries 2 -r", 0,
                &["SQL script 1: ", " - number of transactions retried: 1 (50.000%)\n - total number of retries: 1\n",
                  "           0           1  UPDATE xy SET y = y + :delta",
                  "SQL script 2: ", " - 0 transactions (0.0% of total, tps = 0.000000)\n - number of failed transactions: 0 (NaN%)\n - number of transactions retried: 0 (NaN%)\n - total number of retries: 0\n - statement latencies"], &[],
                &[("serialization.sql", SERIALIZATION), ("never.sql@0", "select 1;\n")]) },
        Case { check: Some(|e| aborts(e, 3)),
            ..script("failed statement: caret, one abort per client", "-n -t 2 -c 3", 2, &["processed: 0/6"],
                &["client 0 script 0 aborted in command 1 query 0: ERROR:  relation \"nothere\" does not exist\nLINE 1: select   foo from  nothere;\n                           ^\n",
                  "client 1 script 0 aborted in command 1 query 0: ERROR:  relation \"nothere\"",
                  "client 2 script 0 aborted in command 1 query 0: ERROR:  relation \"nothere\"",
                  "Run was aborted"],
                &[("nothere.sql", "select 1;\nselect   foo from  nothere;\n")]) },
        script("caret on the second line, extended", "-n -t 1 -M extended -Dv=1", 2, &[],
            &["client 0 script 0 aborted in command 0 query 0: ERROR:  column \"nocol\" does not exist\nLINE 2:   $1::int, 'x b' +  nocol;\n                            ^\n"],
            &[("second.sql", "select 1 +\n  :v::int, 'x\tb' +  nocol;\n")]),
        script("caret in a long line, simple", "-n -t 1", 2, &[],
            &["LINE 1: ...aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' || nocol || '...\n                                                             ^\n"],
            &[("long.sql", "select 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' || nocol || 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb';\n")]),
        script("caret in PL/pgSQL's statement", "-n -t 1", 2, &[],
            &["ERROR:  column \"nocol\" does not exist\nLINE 1: SELECT nocol FROM pg_class\n               ^\nQUERY:  SELECT nocol FROM pg_class\nCONTEXT:  PL/pgSQL function inline_code_block line 1 at PERFORM\n"],
            &[("plpgsql.sql", "DO $$ BEGIN PERFORM nocol FROM pg_class; END $$;\n")]),
        script("no caret without a position", "-n -t 1", 2, &[],
            &["client 0 script 0 aborted in command 0 query 0: ERROR:  division by zero\n", "!LINE"],
            &[("zero.sql", "select 1/0;\n")]),
        Case { check: Some(|e| aborts(e, 2)),
            ..script("failed meta command: its detail, then the abort", "-n -t 2 -c 2", 2, &[],
                &["error: division by zero\n",
                  "error: client 0 aborted in command 0 (set) of script 0; evaluation of meta-command failed\n",
                  "error: client 1 aborted in command 0 (set) of script 0; evaluation of meta-command failed\n"],
                &[("set.sql", "\\set x 1/0\n")]) },
        script("failed sleep", "-n -t 1", 2, &[],
            &["error: sleep: undefined variable \"nope\"\n",
              "error: client 0 aborted in command 0 (sleep) of script 0; execution of meta-command failed\n"],
            &[("sleep.sql", "\\sleep :nope\n")]),
        script("failed shell command", "-n -t 1", 2, &[],
            &["error: false: could not launch shell command\n",
              "error: client 0 aborted in command 0 (shell) of script 0; execution of meta-command failed\n"],
            &[("shell.sql", "\\shell false\n")]),
        script("valued flags repeated: the last wins", "-n -t 1 -t 2 -c 1 -c 2 -M simple -M extended -r -r", 0,
            &["query mode: extended\n", "number of clients: 2\n", "processed: 4/4\n", "statement latencies"], &[""],
            &[("one.sql", "select 1;\n")]),
        Case { check: Some(unix_time_progress),
            ..script("progress with timestamps", "-n -T 2 -P 1 --progress-timestamp", 0, &["duration: 2 s\n"], &["progress: "],
                &[("one.sql", "select 1;\n")]) },
        script("progress with lag, skips and retries", "-n -T 2 -P 1 --max-tries 2 --rate=100 --latency-limit=1000", 0,
            &["duration: 2 s\n"], &[", 0 failed, lag ", " ms, 0 skipped, 0 retried, 0 retries\n"],
            &[("one.sql", "select 1;\n")]),
        script("gset without a row", "-n -t 1", 2, &[],
            &["error: client 0 script 0 command 0 query 0: expected one row, got 0\n", "!aborted in"],
            &[("gset.sql", "select 1 where false \\gset\n")]),
    ]
}

/// `--progress-timestamp`: every `-P` line's time is Unix time in ms.
fn unix_time_progress(err: &str) -> Result<(), String> {
    let times: Vec<&str> = err
        .lines()
        .filter_map(|l| l.strip_prefix("progress: ")?.split(' ').next())
        .collect();
    let unix = |t: &&str| {
        t.split_once('.')
            .is_some_and(|(s, ms)| s.len() >= 10 && ms.len() == 3 && s.parse::<u64>().is_ok())
    };
    if !times.is_empty() && times.iter().all(unix) {
        Ok(())
    } else {
        Err(format!("progress times {times:?}"))
    }
}

/// `n` clients aborted, each said once.
fn aborts(err: &str, n: usize) -> Result<(), String> {
    let lines = err
        .lines()
        .filter(|l| l.contains(" aborted in command "))
        .count();
    if lines == n {
        Ok(())
    } else {
        Err(format!("{lines} abort lines, want {n}"))
    }
}

/// 001's `^[CLIENTS] \d{1,2} \d+ \d \d+ \d+$`: a client among `clients`,
/// the transaction's number, its latency, the script, the time.
fn log_line(line: &str, clients: &str) -> bool {
    let f: Vec<&str> = line.split(' ').collect();
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    f.len() == 6
        && f[0].len() == 1
        && clients.contains(f[0])
        && digits(f[1])
        && f[1].len() <= 2
        && digits(f[2])
        && digits(f[3])
        && f[3].len() == 1
        && digits(f[4])
        && digits(f[5])
}

/// Generated scripts of the error table (too long to write out).
fn error_script(name: &str, text: &str) -> String {
    match name {
        "too many parameters" => format!("\\set i 0\nSELECT LEAST({})", vec![":i"; 256].join(", ")),
        "shell too many words" => format!("\\shell echo {}", vec!["arg"; 255].join(" ")),
        _ => text.to_string(),
    }
}

/// Which tool runs a case.
#[derive(Clone, Copy, PartialEq)]
enum Tool {
    Pgbench,
    Tare,
}

struct Env<'a> {
    server: Option<&'a PgServer>,
    dir: PathBuf,
}

impl Env<'_> {
    fn run(&self, tool: Tool, args: &[String], extra: &[(&str, &str)]) -> Output {
        let mut cmd = match tool {
            Tool::Pgbench => Command::new("pgbench"),
            Tool::Tare => {
                // TARE_BIN: another tare to measure (an older build's count).
                let bin = std::env::var("TARE_BIN").unwrap_or(env!("CARGO_BIN_EXE_tare").into());
                let mut c = Command::new(bin);
                c.arg("pg");
                c
            }
        };
        cmd.args(args).current_dir(&self.dir);
        for v in [
            "PGHOST",
            "PGPORT",
            "PGUSER",
            "PGDATABASE",
            "PGOPTIONS",
            "PGBENCH_RANDOM_SEED",
        ] {
            cmd.env_remove(v);
        }
        match self.server {
            Some(s) => cmd
                .env("PGHOST", &s.socket_dir)
                .env("PGPORT", s.port.to_string())
                .env("PGUSER", "postgres")
                .env("PGDATABASE", "postgres"),
            // No server: a port nothing listens on, so a case that would
            // connect fails instead of reaching a stray server.
            None => cmd.env("PGHOST", "/nonexistent").env("PGPORT", "1"),
        };
        cmd.envs(extra.iter().copied());
        run_bounded(cmd)
    }

    /// Writes the case's scripts; the `-f` flags for them.
    fn files(&self, files: &[(&str, String)]) -> Vec<String> {
        let mut args = Vec::new();
        for (spec, text) in files {
            let (name, weight) = match spec.split_once('@') {
                Some((n, w)) => (n, format!("@{w}")),
                None => (*spec, String::new()),
            };
            let path = self.dir.join(name);
            std::fs::write(&path, text).unwrap();
            args.push("-f".into());
            args.push(format!("{}{weight}", path.display()));
        }
        args
    }
}

/// Runs `cmd`, killed after 60 s (an older tare hung on COPY): a hung
/// run is a failed case, never a hung test.
fn run_bounded(mut cmd: Command) -> Output {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tool runs");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let err_reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        b
    });
    let out_reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.read_to_end(&mut b);
        b
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out_reader.join().unwrap_or_default(),
        stderr: err_reader.join().unwrap_or_default(),
    }
}

/// Whether `text` matches every pattern; the first that does not, if any.
fn mismatch(text: &str, patterns: &[&str]) -> Option<String> {
    for p in patterns {
        let ok = match *p {
            "" => text.is_empty(),
            p if p.starts_with('!') => !text.contains(&p[1..]),
            p => text.contains(p),
        };
        if !ok {
            return Some(format!("{p:?}"));
        }
    }
    None
}

/// The `debug(...)` lines, sorted. One thread per case that compares
/// them: pgbench writes a debug line in two parts, which two threads
/// interleave.
fn debug_lines(stderr: &str) -> Vec<String> {
    let mut v: Vec<String> = stderr
        .lines()
        .filter(|l| l.starts_with("debug("))
        .map(String::from)
        .collect();
    v.sort();
    v
}

struct Outcome {
    name: String,
    /// Why tare failed the case, if it did.
    tare: Option<String>,
}

/// Runs one case with both tools; pgbench must pass it.
fn run_case(env: &Env, c: &Case, files: &[(&str, String)]) -> Outcome {
    let (name, status, out, err) = (c.name, c.status, c.out, c.err);
    let mut argv: Vec<String> = c.args.split_whitespace().map(String::from).collect();
    argv.extend(env.files(files));
    let check = |o: &Output| -> Option<String> {
        let (so, se) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        if o.status.code() != Some(status) {
            return Some(format!(
                "exit {:?}, want {status}; stderr: {se}",
                o.status.code()
            ));
        }
        if let Some(p) = mismatch(&so, out) {
            return Some(format!("stdout lacks {p}: {so}"));
        }
        mismatch(&se, err).map(|p| format!("stderr lacks {p}: {se}"))
    };
    if let Some(l) = &c.log {
        argv.push(format!("--log-prefix={}", env.dir.join(l.prefix).display()));
    }
    let check = |o: &Output| -> Option<String> {
        check(o).or_else(|| {
            let se = String::from_utf8_lossy(&o.stderr);
            c.check.and_then(|f| f(&se).err())
        })
    };
    let run = |tool| -> (Output, Option<String>) {
        if !c.setup.is_empty() {
            let server = env.server.expect("a case with setup SQL needs the server");
            server.session().query(c.setup).unwrap();
        }
        let out = env.run(tool, &argv, c.env);
        let mut why = check(&out);
        if let Some(l) = &c.log {
            let logs = check_logs(&env.dir, l);
            why = why.or(logs.err());
        }
        (out, why)
    };
    let (pg, why) = run(Tool::Pgbench);
    if let Some(why) = why {
        panic!("pgbench fails case {name:?} (the case is wrong): {why}");
    }
    let (tare, mut why) = run(Tool::Tare);
    if why.is_none() && c.same_debug {
        let (a, b) = (
            debug_lines(&String::from_utf8_lossy(&pg.stderr)),
            debug_lines(&String::from_utf8_lossy(&tare.stderr)),
        );
        assert!(!a.is_empty(), "{name}: pgbench printed no debug lines");
        if a != b {
            let diff: Vec<String> = a
                .iter()
                .zip(&b)
                .filter(|(x, y)| x != y)
                .take(5)
                .map(|(x, y)| format!("pgbench {x} / tare {y}"))
                .collect();
            why = Some(format!(
                "debug lines differ ({} vs {}): {diff:?}",
                a.len(),
                b.len()
            ));
        }
    }
    Outcome {
        name: name.to_string(),
        tare: why,
    }
}

/// 001's `check_pgbench_logs`, then the files are removed.
fn check_logs(dir: &std::path::Path, l: &LogCheck) -> Result<(), String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("{}.", l.prefix)))
        })
        .collect();
    files.sort();
    let result = (|| {
        if files.len() != l.files {
            return Err(format!("{} log files, want {}", files.len(), l.files));
        }
        for f in &files {
            let name = f.file_name().unwrap().to_str().unwrap();
            let rest = &name[l.prefix.len() + 1..];
            if !rest
                .split('.')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                || rest.split('.').count() > 2
            {
                return Err(format!("log file name {name}"));
            }
            let text = std::fs::read_to_string(f).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            if lines.len() < l.min || lines.len() > l.max {
                return Err(format!(
                    "{name}: {} lines, want {}..={}",
                    lines.len(),
                    l.min,
                    l.max
                ));
            }
            if let Some(bad) = lines.iter().find(|x| !(l.line)(x)) {
                return Err(format!("{name}: log line {bad:?}"));
            }
        }
        Ok(())
    })();
    for f in &files {
        let _ = std::fs::remove_file(f);
    }
    result
}

fn judge(outcomes: &[Outcome]) {
    judge_as(outcomes, "pgbench TAP cases");
}

fn judge_as(outcomes: &[Outcome], what: &str) {
    let mut unexpected = Vec::new();
    let mut passed = 0;
    for o in outcomes {
        let allowed = ALLOWED.iter().find(|(n, _)| *n == o.name);
        match (&o.tare, allowed) {
            (None, None) => passed += 1,
            (None, Some(_)) => {
                passed += 1;
                eprintln!(
                    "note: {:?} is in ALLOWED but passes now: drop it from the list",
                    o.name
                );
            }
            (Some(why), None) => unexpected.push(format!("{}: {why}", o.name)),
            (Some(_), Some(_)) => {}
        }
    }
    eprintln!("tare pg passes {passed} of {} {what}", outcomes.len());
    if std::env::var_os("TARE_BIN").is_some() {
        return;
    }
    assert!(
        unexpected.is_empty(),
        "tare fails:\n{}",
        unexpected.join("\n\n")
    );
}

fn assert_pgbench_installed() {
    assert!(
        pgbench_installed(),
        "pgbench is missing: run scripts/setup.sh"
    );
}

/// The cases' scripts in `scripts` under `server`'s directory.
fn scripts_of(server: &PgServer) -> Env<'_> {
    let scripts = server.dir.join("scripts");
    std::fs::create_dir(&scripts).unwrap();
    Env {
        server: Some(server),
        dir: scripts,
    }
}

/// Runs case `c` with its files.
fn run_with_files(env: &Env, c: &Case) -> Outcome {
    let files: Vec<(&str, String)> = c.files.iter().map(|(n, t)| (*n, t.to_string())).collect();
    run_case(env, c, &files)
}

fn pgbench_installed() -> bool {
    Command::new("pgbench")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// 002_pgbench_no_server.pl: option and script mistakes, help, listings.
#[test]
fn pgbench_tap_cases_without_a_server() {
    assert_pgbench_installed();
    let dir = tempfile::tempdir().unwrap();
    let env = Env {
        server: None,
        dir: dir.path().to_path_buf(),
    };
    let mut outcomes = Vec::new();
    for c in OPTIONS {
        outcomes.push(run_case(&env, c, &[]));
    }
    for (name, text, err) in SCRIPT_MISTAKES {
        let files = [("mistake.sql", text.to_string())];
        outcomes.push(run_case(&env, &case(name, "", 1, &[""], err), &files));
    }
    judge(&outcomes);
}

/// 001_pgbench_with_server.pl, against a server this test starts.
#[test]
fn pgbench_tap_cases_with_a_server() {
    assert_pgbench_installed();
    let server = PgServer::start("");
    let space = server.dir.join("tap_ts");
    std::fs::create_dir(&space).unwrap();
    let owner = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(&server.dir).unwrap());
    std::os::unix::fs::chown(&space, Some(owner), None).unwrap();
    let mut s = server.session();
    s.query(&format!(
        "CREATE TABLESPACE tap_ts LOCATION '{}'",
        space.display()
    ))
    .unwrap();
    let env = scripts_of(&server);
    let mut outcomes = Vec::new();
    for c in server_cases() {
        outcomes.push(run_with_files(&env, &c));
    }
    for (name, status, text, err) in ERRORS {
        let files = [("error.sql", error_script(name, text))];
        let out: &[&str] = if *status == 1 {
            &[""]
        } else {
            &["processed: 0/1"]
        };
        outcomes.push(run_case(
            &env,
            &case(name, ERROR_FLAGS, *status, out, err),
            &files,
        ));
    }
    // Leave nothing in the tablespace, so that the server's removal is clean.
    for t in [
        "pgbench_accounts",
        "pgbench_branches",
        "pgbench_history",
        "pgbench_tellers",
    ] {
        let _ = s.query(&format!("DROP TABLE IF EXISTS {t} CASCADE"));
    }
    let _ = s.query("DROP TABLESPACE tap_ts");
    judge(&outcomes);
}

/// pgbench 15's output beyond what its TAP files check ([`output_cases`]).
#[test]
fn pgbench_output_beyond_the_tap_cases() {
    assert_pgbench_installed();
    let server = PgServer::start("");
    let env = scripts_of(&server);
    let outcomes: Vec<Outcome> = output_cases()
        .iter()
        .map(|c| run_with_files(&env, c))
        .collect();
    judge_as(&outcomes, "output cases beyond the TAP files");
}
