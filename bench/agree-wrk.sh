#!/usr/bin/env bash
# Agreement: the same workload through wrk (engine = "external") and tare
# http (engine = "http"), each a one-cell `tare run` against the nginx
# target natively (docs/external.md), in interleaved rounds (the order
# flips every round). Prints each round's req/s and p50 and the median
# ratios wrk / tare: a bias check users can read. wrk's p50 comes from its
# `--latency` text (rounded to its printed digits), tare's from its HDR
# histogram.
#
# Usage: [TARE=path] bench/agree-wrk.sh [ROUNDS] [DURATION]   (as root; needs nginx, wrk)
# PROFILE=ci runs target/ci/tare (quicker to build).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
DUR=${2:-3s}
PROFILE=${PROFILE:-release}
command -v nginx >/dev/null && command -v wrk >/dev/null || bash scripts/setup.sh
if [ -z "${TARE:-}" ]; then
  cargo build --profile "$PROFILE" -q -p tare
  TARE=$PWD/target/$PROFILE/tare
fi

dir=$(mktemp -d /tmp/tare-bench-XXXXXX)
trap 'rm -rf "$dir"' EXIT
common="[target]
kind = \"nginx\"
[load]
threads = 1
connections = 50
duration = \"$DUR\"
warmup = \"1s\"
[trials]
count = 1
cooldown = \"0s\""
printf '%s\n[load.http]\n' "$common" | sed 's/^\[load\]$/[load]\nengine = "http"/' > "$dir/http.toml"
printf '%s\n[load.external]\ntool = "wrk"\n' "$common" | sed 's/^\[load\]$/[load]\nengine = "external"/' > "$dir/wrk.toml"

one() { # one run of $1 (wrk|http): prints "rps p50_us"
  rm -rf "$dir/out-$1"
  "$TARE" run -q "$dir/$1.toml" --out "$dir/out-$1" >/dev/null 2>&1
  python3 - "$dir/out-$1/trials.jsonl" <<'PY'
import json, sys
t = json.loads(open(sys.argv[1]).readline())
r = t.get("result") or sys.exit(f"trial failed: {t.get('error')}")
print(f'{r["rps"]:.0f} {r["latency_us"]["p50"]:.0f}')
PY
}

: > "$dir/rounds"
for i in $(seq "$ROUNDS"); do
  if (( i % 2 )); then order="wrk http"; else order="http wrk"; fi
  for e in $order; do read -r rps p50 < <(one "$e"); eval "${e}_rps=$rps ${e}_p50=$p50"; done
  echo "round $i: wrk ${wrk_rps} req/s p50 ${wrk_p50} us | tare http ${http_rps} req/s p50 ${http_p50} us"
  echo "$wrk_rps $wrk_p50 $http_rps $http_p50" >> "$dir/rounds"
done
python3 - "$dir/rounds" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
rps = [w / t for w, _, t, _ in rows if t > 0]
p50 = [w / t for _, w, _, t in rows if t > 0]
print(f"wrk / tare http, median of {len(rows)} rounds: req/s {statistics.median(rps):.3f}x "
      f"(rounds {min(rps):.3f}-{max(rps):.3f}), p50 {statistics.median(p50):.3f}x "
      f"(rounds {min(p50):.3f}-{max(p50):.3f})")
PY
