#!/usr/bin/env bash
# tare redis vs redis-benchmark: GET, 50 connections, 50-byte values over
# 100,000 keys (seed 002's flags: -d 50 -r 100000), without and with
# pipelining (-P 16), against one redis-server.
#
# The server (Debian's redis-server, persistence off) runs pinned to CPU 1
# and the generator to CPU 0 (PIN=0 turns pinning off), as bench/vs-wrk.sh
# does for nginx. ROUNDS interleaved rounds: redis-benchmark and tare, in turn first, for -P 1
# then -P 16, each running the same -n REQUESTS (x16 with -P 16).
# tare runs with --timeout 60s: redis-benchmark waits for a reply for ever,
# and on a loaded machine the server may stall for longer than tare's
# default 2 s, which in a count-bounded run closes the connection for good.
# Generator CPU is the kernel's rusage of the child process (getrusage
# RUSAGE_CHILDREN), the same measure for both tools. Prints per-run numbers
# and median ratios. Goals (bench/README.md): with the server the bottleneck,
# requests/s ratio tare/redis-benchmark >= 1.0 and CPU per request ratio
# <= 0.5; with -P 16 requests/s >= 1.0.
#
# VARIANTS="--io=epoll;--coalesce=100us" measures tare once more per
# variant in every round (its flags, `;` between variants, `=` joining a
# flag and its value), interleaved with the rest: the waits (io_uring,
# epoll, batched wake-ups) compared on the same server at the same time.
#
# BASELINE=/path/to/another/tare (an older build) measures that build's
# default run too in every round, interleaved, as `baseline`: before and
# after a change on the same server at the same time.
#
# RAW=path keeps the per-run lines (bench/redis_summary.py reads them
# again: `python3 bench/redis_summary.py path`).
#
# Usage: [TARE=path] [BASELINE=path] [VARIANTS=...] [RAW=path] bench/vs-redis-benchmark.sh [ROUNDS] [REQUESTS]      (as root)
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

# measure KIND REQUESTS COMMAND...: prints "rps=<n> cpu_s=<user+sys> n=<requests>"
# and, per run, the generator's user and system CPU, its voluntary and
# involuntary context switches (each voluntary one a sleep and a wake-up),
# and the server's CPU time meanwhile (all its threads, from
# /proc/PID/task/*/schedstat), which decides the requests/s when the
# server is the bottleneck.
measure() {
  local kind=$1 n=$2; shift 2
  python3 - "$kind" "$n" "$server" "$@" <<'PY'
import csv, io, json, os, resource, subprocess, sys
kind, n, server, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
def server_ns():
    d = f"/proc/{server}/task"
    return sum(int(open(f"{d}/{t}/schedstat").read().split()[0]) for t in os.listdir(d))
s0 = server_ns()
before = resource.getrusage(resource.RUSAGE_CHILDREN)
out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
after = resource.getrusage(resource.RUSAGE_CHILDREN)
s1 = server_ns()
user = after.ru_utime - before.ru_utime
sys_ = after.ru_stime - before.ru_stime
vcsw = after.ru_nvcsw - before.ru_nvcsw
ivcsw = after.ru_nivcsw - before.ru_nivcsw
if kind == "redis-benchmark":
    rows = list(csv.reader(io.StringIO(out)))
    rps = float(rows[1][1])
else:
    r = json.loads(out)
    rps, n = r["rps"], r["requests"]
print(f"rps={rps:.1f} cpu_s={user + sys_:.4f} n={n} user_s={user:.4f} sys_s={sys_:.4f} "
      f"vcsw={vcsw} ivcsw={ivcsw} server_cpu_s={(s1 - s0) / 1e9:.4f}")
PY
}

IFS=';' read -r -a variants <<< "${VARIANTS:-}"
out=$(mktemp /tmp/tare-redis-bench-runs-XXXXXX)
for i in $(seq "$ROUNDS"); do
  echo "round $i: load average $(cut -d' ' -f1-3 /proc/loadavg)"
  for p in 1 16; do
    n=$((REQUESTS * (p == 1 ? 1 : 16)))
    common=(-p "$PORT" -c 50 -n "$n" -d 50 -r 100000 -P "$p" -t get)
    # The order turns every round (redis-benchmark first, then last), so
    # neither tool always runs on the machine the other has just warmed.
    who=(redis-benchmark "" ${BASELINE:+baseline} "${variants[@]}")
    if [ $((i % 2)) = 0 ]; then who=(${BASELINE:+baseline} "" "${variants[@]}" redis-benchmark); fi
    line="round $i -P $p:"
    for v in "${who[@]}"; do
      if [ "$v" = redis-benchmark ]; then
        t=$(measure redis-benchmark "$n" $gen_cpu redis-benchmark --csv "${common[@]}")
        label=redis-benchmark
      elif [ "$v" = baseline ]; then
        t=$(measure tare "$n" $gen_cpu "$BASELINE" redis --json - --timeout 60s "${common[@]}")
        label=baseline
      else
        t=$(measure tare "$n" $gen_cpu "$TARE" redis --json - --timeout 60s "${common[@]}" ${v//=/ })
        label=tare; [ -n "$v" ] && label="tare[$v]"
      fi
      echo "$label $p round=$i $t" >> "$out"
      line+=" | $label $t"
    done
    echo "$line"
  done
done

if [ -n "${RAW:-}" ]; then cp "$out" "$RAW"; fi
python3 bench/redis_summary.py "$out"
rm -f "$out"
