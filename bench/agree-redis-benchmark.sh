#!/usr/bin/env bash
# Agreement: the same workload through redis-benchmark (engine =
# "external") and tare redis (engine = "redis"), each a one-cell `tare run`
# against the redis target natively (docs/external.md): SET of 50-byte
# values over 100,000 keys (SET needs no keys stored first, so both send
# the same commands to the same empty server), 50 connections, in
# interleaved rounds (the order flips every round). redis-benchmark runs a
# count, tare a duration: REQUESTS is redis-benchmark's. Prints each
# round's req/s and p50 and the median ratios redis-benchmark / tare: a
# bias check users can read. redis-benchmark's p50 is its `latency
# summary`'s (3 decimals of a millisecond), tare's from its histogram.
#
# Usage: [TARE=path] bench/agree-redis-benchmark.sh [ROUNDS] [DURATION] [REQUESTS]
# (as root; needs redis-server, redis-tools). PROFILE=ci runs target/ci/tare.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
DUR=${2:-3s}
REQUESTS=${3:-200000}
PROFILE=${PROFILE:-release}
command -v redis-benchmark >/dev/null && command -v redis-server >/dev/null || bash scripts/setup.sh
if [ -z "${TARE:-}" ]; then
  cargo build --profile "$PROFILE" -q -p tare
  TARE=$PWD/target/$PROFILE/tare
fi

dir=$(mktemp -d /tmp/tare-bench-XXXXXX)
trap 'rm -rf "$dir"' EXIT
common="[target]
kind = \"redis\"
[load]
threads = 1
connections = 50
duration = \"$DUR\"
warmup = \"0s\"
[trials]
count = 1
cooldown = \"0s\""
printf '%s\n[load.redis]\ntests = ["set"]\ndata_size = 50\nkeyspace = 100000\n' "$common" |
  sed 's/^\[load\]$/[load]\nengine = "redis"/' > "$dir/redis.toml"
printf '%s\n[load.external]\ntool = "redis-benchmark"\nargs = ["-h", "{host}", "-p", "{port}", "-c", "{connections}", "-n", "%s", "-t", "set", "-d", "50", "-r", "100000"]\ngrace = "60s"\n' "$common" "$REQUESTS" |
  sed 's/^\[load\]$/[load]\nengine = "external"/' > "$dir/rb.toml"

one() { # one run of $1 (rb|redis): prints "rps p50_us"
  rm -rf "$dir/out-$1"
  "$TARE" run -q "$dir/$1.toml" --out "$dir/out-$1" >/dev/null 2>&1
  python3 - "$dir/out-$1/trials.jsonl" <<'PY'
import json, sys
t = json.loads(open(sys.argv[1]).readline())
r = t.get("result") or sys.exit(f"trial failed: {t.get('error')}")
print(f'{r["rps"]:.0f} {r["latency_us"]["p50"]:.1f}')
PY
}

: > "$dir/rounds"
for i in $(seq "$ROUNDS"); do
  if (( i % 2 )); then order="rb redis"; else order="redis rb"; fi
  for e in $order; do read -r rps p50 < <(one "$e"); eval "${e}_rps=$rps ${e}_p50=$p50"; done
  echo "round $i: redis-benchmark ${rb_rps} req/s p50 ${rb_p50} us | tare redis ${redis_rps} req/s p50 ${redis_p50} us"
  echo "$rb_rps $rb_p50 $redis_rps $redis_p50" >> "$dir/rounds"
done
python3 - "$dir/rounds" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
rps = [a / b for a, _, b, _ in rows if b > 0]
p50 = [a / b for _, a, _, b in rows if b > 0]
print(f"redis-benchmark / tare redis, median of {len(rows)} rounds: req/s {statistics.median(rps):.3f}x "
      f"(rounds {min(rps):.3f}-{max(rps):.3f}), p50 {statistics.median(p50):.3f}x "
      f"(rounds {min(p50):.3f}-{max(p50):.3f})")
PY
