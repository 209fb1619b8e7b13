#!/usr/bin/env bash
# tare redis vs redis-benchmark: GET, 50 connections, 50-byte values over
# 100,000 keys (seed 002's flags: -d 50 -r 100000), without and with
# pipelining (-P 16), against one redis-server.
#
# The server (Debian's redis-server, persistence off) runs pinned to CPU 1
# and the generator to CPU 0 (PIN=0 turns pinning off), as bench/vs-wrk.sh
# does for nginx. ROUNDS interleaved rounds: redis-benchmark, tare, for -P 1
# then -P 16, each running the same -n REQUESTS (x16 with -P 16).
# Generator CPU is the kernel's rusage of the child process (getrusage
# RUSAGE_CHILDREN), the same measure for both tools. Prints per-run numbers
# and median ratios. Goals (issue 19): with the server the bottleneck,
# requests/s ratio tare/redis-benchmark >= 1.0 and CPU per request ratio
# <= 0.5; with -P 16 requests/s >= 1.0.
#
# Usage: [TARE=path] bench/vs-redis-benchmark.sh [ROUNDS] [REQUESTS]      (as root)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
REQUESTS=${2:-200000}
PIN=${PIN:-1}

command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null || bash scripts/setup.sh
# TARE=/path/to/tare skips the build (e.g. target/ci/tare, the suite's profile).
if [ -z "${TARE:-}" ]; then
  cargo build --release -q -p tare || { [ -x target/release/tare ] && echo "vs-redis-benchmark: build failed, using the existing target/release/tare" >&2; }
  TARE=$PWD/target/release/tare
fi

dir=$(mktemp -d /tmp/tare-redis-bench-XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
server_cpu=""; gen_cpu=""
if [ "$PIN" = 1 ]; then server_cpu="taskset -c 1"; gen_cpu="taskset -c 0"; fi
$server_cpu redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no \
  --dir "$dir" --logfile "$dir/redis.log" --daemonize no &
server=$!
stop() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$dir"; }
trap stop EXIT
for _ in $(seq 100); do redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
# Every GET finds its key.
redis-benchmark -p "$PORT" -q -t set -n 300000 -r 100000 -d 50 -c 50 >/dev/null

# measure KIND REQUESTS COMMAND...: prints "rps=<n> cpu_s=<user+sys> n=<requests>".
measure() {
  local kind=$1 n=$2; shift 2
  python3 - "$kind" "$n" "$@" <<'PY'
import csv, io, json, resource, subprocess, sys
kind, n, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
before = resource.getrusage(resource.RUSAGE_CHILDREN)
out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
after = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
if kind == "redis-benchmark":
    rows = list(csv.reader(io.StringIO(out)))
    rps = float(rows[1][1])
else:
    r = json.loads(out)
    rps, n = r["rps"], r["requests"]
print(f"rps={rps:.1f} cpu_s={cpu:.4f} n={n}")
PY
}

declare -A rps cpu
for i in $(seq "$ROUNDS"); do
  for p in 1 16; do
    n=$((REQUESTS * (p == 1 ? 1 : 16)))
    common=(-p "$PORT" -c 50 -n "$n" -d 50 -r 100000 -P "$p" -t get)
    b=$(measure redis-benchmark "$n" $gen_cpu redis-benchmark --csv "${common[@]}")
    t=$(measure tare "$n" $gen_cpu "$TARE" redis --json - "${common[@]}")
    echo "round $i -P $p: redis-benchmark $b | tare $t"
    for who in rb tare; do
      line=$b; [ $who = tare ] && line=$t
      eval "$(echo "$line" | tr ' ' '\n' | sed 's/^/local_/')"
      rps[$who-$p]+="$local_rps "
      cpu[$who-$p]+="$(python3 -c "print($local_cpu_s / $local_n * 1e6)") "
    done
  done
done

python3 - "${rps[rb-1]}" "${rps[tare-1]}" "${cpu[rb-1]}" "${cpu[tare-1]}" \
          "${rps[rb-16]}" "${rps[tare-16]}" "${cpu[rb-16]}" "${cpu[tare-16]}" <<'PY'
import statistics, sys
a = [[float(x) for x in s.split()] for s in sys.argv[1:9]]
m = statistics.median
for name, (br, tr, bc, tc) in (("-P 1 ", a[0:4]), ("-P 16", a[4:8])):
    print(f"{name}: median req/s      redis-benchmark {m(br):9.0f}  tare {m(tr):9.0f}  ratio tare/redis-benchmark {m(tr)/m(br):.3f} (goal >= 1.0)")
    print(f"{name}: median CPU us/req redis-benchmark {m(bc):7.3f}  tare {m(tc):7.3f}  ratio tare/redis-benchmark {m(tc)/m(bc):.3f} (goal <= 0.5 at -P 1)")
PY
