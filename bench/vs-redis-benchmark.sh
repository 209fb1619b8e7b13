#!/usr/bin/env bash
# tare redis vs redis-benchmark: GET, 50 connections, 50-byte values over
# 100,000 keys (seed 002's flags: -d 50 -r 100000), without and with
# pipelining (-P 16), against one redis-server.
#
# The server (Debian's redis-server, persistence off) runs pinned to CPU 1
# and the generator to CPU 0 (PIN=0 turns pinning off), as bench/vs-wrk.sh
# does for nginx. ROUNDS interleaved rounds: redis-benchmark, tare, for -P 1
# then -P 16, each running the same -n REQUESTS (x16 with -P 16).
# tare runs with --timeout 60s: redis-benchmark waits for a reply for ever,
# and on a loaded machine the server may stall for longer than tare's
# default 2 s, which in a count-bounded run closes the connection for good.
# Generator CPU is the kernel's rusage of the child process (getrusage
# RUSAGE_CHILDREN), the same measure for both tools. Prints per-run numbers
# and median ratios. Goals (issue 19): with the server the bottleneck,
# requests/s ratio tare/redis-benchmark >= 1.0 and CPU per request ratio
# <= 0.5; with -P 16 requests/s >= 1.0.
#
# VARIANTS="--io=epoll;--coalesce=100us" measures tare once more per
# variant in every round (its flags, `;` between variants, `=` joining a
# flag and its value), interleaved with the rest: the waits (io_uring,
# epoll, batched wake-ups) compared on the same server at the same time.
#
# Usage: [TARE=path] [VARIANTS=...] bench/vs-redis-benchmark.sh [ROUNDS] [REQUESTS]      (as root)
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

IFS=';' read -r -a variants <<< "${VARIANTS:-}"
out=$(mktemp /tmp/tare-redis-bench-runs-XXXXXX)
for i in $(seq "$ROUNDS"); do
  for p in 1 16; do
    n=$((REQUESTS * (p == 1 ? 1 : 16)))
    common=(-p "$PORT" -c 50 -n "$n" -d 50 -r 100000 -P "$p" -t get)
    b=$(measure redis-benchmark "$n" $gen_cpu redis-benchmark --csv "${common[@]}")
    echo "redis-benchmark $p $b" >> "$out"
    line="round $i -P $p: redis-benchmark $b"
    for v in "" "${variants[@]}"; do
      t=$(measure tare "$n" $gen_cpu "$TARE" redis --json - --timeout 60s "${common[@]}" ${v//=/ })
      label=tare; [ -n "$v" ] && label="tare[$v]"
      echo "$label $p $t" >> "$out"
      line+=" | $label $t"
    done
    echo "$line"
  done
done

python3 - "$out" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    words = line.split()
    # "redis-benchmark P k=v...", "tare P k=v..." or "tare[VARIANT] P k=v..."
    who, p = words[0], words[1]
    kv = dict(x.split("=", 1) for x in words[2:])
    r = runs.setdefault((who, p), {"rps": [], "cpu": []})
    r["rps"].append(float(kv["rps"]))
    r["cpu"].append(float(kv["cpu_s"]) / float(kv["n"]) * 1e6)
m = statistics.median
for p in ("1", "16"):
    base = runs[("redis-benchmark", p)]
    print(f"-P {p:<2}: redis-benchmark median {m(base['rps']):9.0f} req/s, {m(base['cpu']):7.3f} us CPU/req")
    for (who, q), r in sorted(runs.items()):
        if q != p or who == "redis-benchmark":
            continue
        print(f"-P {p:<2}: {who:<24} median {m(r['rps']):9.0f} req/s, {m(r['cpu']):7.3f} us CPU/req; "
              f"ratio to redis-benchmark: req/s {m(r['rps'])/m(base['rps']):.3f} (goal >= 1.0), "
              f"CPU/req {m(r['cpu'])/m(base['cpu']):.3f} (goal <= 0.5 at -P 1)")
PY
rm -f "$out"
