#!/usr/bin/env bash
# tare mysql vs sysbench 1.0 (Debian's): oltp_read_only, THREADS
# connections, against one MariaDB with a small table in memory (the
# server, not the disk, is the bottleneck, as in seed 002's read-only runs).
#
# The server (Debian's mariadbd, a throw-away data directory on tmpfs)
# runs pinned to CPU 1 and the generator to CPU 0 (PIN=0 turns pinning
# off). ROUNDS interleaved rounds of sysbench then tare, each for TIME
# seconds of the same test against the same tables. Generator CPU is the
# kernel's rusage of the child process (getrusage RUSAGE_CHILDREN), the
# same measure for both tools. Prints per-run numbers and median ratios.
# Goals (bench/README.md): transactions/s ratio tare/sysbench >= 1.0 and CPU per
# transaction ratio <= 0.6.
#
# WORKERS=N sets tare's worker threads (default: one per CPU and at least
# two; sysbench has one thread per connection: WORKERS=$THREADS compares at
# equal thread counts). IO=epoll|io_uring picks tare's wait (default auto:
# io_uring where the kernel allows it). The load average is printed before
# and after: on a shared machine it says how much to trust the ratios.
#
# BASELINE=/path/to/another/tare (an older build) measures that build too
# in every round, interleaved (sysbench, tare, baseline; the order turning
# each round): before and after a change at the same time.
#
# Usage: [TARE=path] [BASELINE=path] [THREADS=8] [WORKERS=N] [IO=MODE] bench/vs-sysbench.sh [ROUNDS] [TIME]      (as root)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
TIME=${2:-10}
THREADS=${THREADS:-8}
PIN=${PIN:-1}

command -v mariadbd >/dev/null && command -v sysbench >/dev/null || bash scripts/setup.sh
# TARE=/path/to/tare skips the build (e.g. target/ci/tare, the suite's profile).
if [ -z "${TARE:-}" ]; then
  cargo build --release -q -p tare || { [ -x target/release/tare ] && echo "vs-sysbench: build failed, using the existing target/release/tare" >&2; }
  TARE=$PWD/target/release/tare
fi

base=/tmp; [ -d /dev/shm ] && base=/dev/shm
dir=$(mktemp -d "$base/tare-mysql-bench-XXXXXX")
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
server_cpu=""; gen_cpu=""
if [ "$PIN" = 1 ]; then server_cpu="taskset -c 1"; gen_cpu="taskset -c 0"; fi
mariadb-install-db --no-defaults --datadir="$dir/data" --auth-root-authentication-method=normal \
  --skip-test-db --skip-name-resolve --user=root >/dev/null
cat > "$dir/init.sql" <<'SQL'
CREATE DATABASE IF NOT EXISTS sbtest;
CREATE USER IF NOT EXISTS 'sbtest'@'%';
CREATE USER IF NOT EXISTS 'sbtest'@'localhost';
GRANT ALL ON sbtest.* TO 'sbtest'@'%';
GRANT ALL ON sbtest.* TO 'sbtest'@'localhost';
SQL
$server_cpu mariadbd --no-defaults --datadir="$dir/data" --port="$PORT" --bind-address=127.0.0.1 \
  --socket="$dir/mysqld.sock" --skip-name-resolve --user=root --init-file="$dir/init.sql" \
  --log-error="$dir/error.log" --pid-file="$dir/mysqld.pid" --query-cache-type=0 --max-connections=600 &
server=$!
stop() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$dir"; }
trap stop EXIT
for _ in $(seq 300); do
  mariadb -h127.0.0.1 -P"$PORT" -usbtest sbtest -e 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.1
done
conn=(--mysql-host=127.0.0.1 --mysql-port="$PORT" --mysql-user=sbtest --mysql-db=sbtest)
sysbench oltp_read_only "${conn[@]}" --tables=1 --table-size=10000 prepare >/dev/null

# measure KIND COMMAND...: prints "tps=<n> cpu_s=<user+sys> n=<transactions>".
measure() {
  local kind=$1; shift
  python3 - "$kind" "$@" <<'PY'
import json, re, resource, subprocess, sys
kind, cmd = sys.argv[1], sys.argv[2:]
before = resource.getrusage(resource.RUSAGE_CHILDREN)
out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
after = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
if kind == "sysbench":
    m = re.search(r"transactions:\s+(\d+)\s+\(([\d.]+) per sec", out)
    n, tps = int(m.group(1)), float(m.group(2))
else:
    r = json.loads(out)
    n, tps = r["requests"], r["tps"]
    print(f"({r['threads']} workers, {r['wakeups']['io']})", end=" ", file=sys.stderr)
print(f"tps={tps:.1f} cpu_s={cpu:.4f} n={n}")
PY
}

echo "before: $(uptime)"
tps_sb=(); tps_tare=(); cpu_sb=(); cpu_tare=(); tps_base=(); cpu_base=()
BASELINE=${BASELINE:-}
for i in $(seq "$ROUNDS"); do
  common=(--threads="$THREADS" --time="$TIME" --tables=1 --table-size=10000)
  run_sb() { s=$(measure sysbench $gen_cpu sysbench oltp_read_only "${conn[@]}" "${common[@]}" run); }
  run_tare() { t=$(measure tare $gen_cpu "$TARE" mysql oltp_read_only "${conn[@]}" "${common[@]}" ${WORKERS:+--workers $WORKERS} ${IO:+--io $IO} --json - run); }
  run_base() { b=$(measure tare $gen_cpu "$BASELINE" mysql oltp_read_only "${conn[@]}" "${common[@]}" --json - run); }
  # The order turns every round, so no tool always runs on a machine
  # another has just warmed.
  if [ $((i % 2)) = 1 ]; then
    run_sb; run_tare; [ -n "$BASELINE" ] && run_base
  else
    [ -n "$BASELINE" ] && run_base; run_tare; run_sb
  fi
  echo "round $i: sysbench $s | tare $t${BASELINE:+ | baseline $b}"
  whos="sb tare"; [ -n "$BASELINE" ] && whos="sb tare base"
  for who in $whos; do
    line=$s; [ $who = tare ] && line=$t; [ $who = base ] && line=$b
    eval "$(echo "$line" | tr ' ' '\n' | sed 's/^/local_/')"
    eval "tps_$who+=($local_tps)"
    eval "cpu_$who+=($(python3 -c "print($local_cpu_s / $local_n * 1e6)"))"
  done
done
echo "after: $(uptime)"

python3 - "${tps_sb[*]}" "${tps_tare[*]}" "${cpu_sb[*]}" "${cpu_tare[*]}" "${tps_base[*]:-}" "${cpu_base[*]:-}" <<'PY'
import statistics, sys
sb, tare, csb, ctare, base, cbase = ([float(x) for x in a.split()] for a in sys.argv[1:])
med = statistics.median
print(f"transactions/s: sysbench {med(sb):.0f}, tare {med(tare):.0f}, ratio {med(tare)/med(sb):.2f} (goal >= 1.0)")
print(f"CPU per transaction: sysbench {med(csb):.1f} us, tare {med(ctare):.1f} us, ratio {med(ctare)/med(csb):.2f} (goal <= 0.6)")
if base:
    print(f"baseline: {med(base):.0f} transactions/s (ratio {med(base)/med(sb):.2f}), {med(cbase):.1f} us CPU per transaction (ratio {med(cbase)/med(csb):.2f})")
    within = [t / s for t, s in zip(tare, sb)]
    print(f"tare/sysbench within rounds: median {med(within):.2f}, range {min(within):.2f}-{max(within):.2f}")
PY
