#!/usr/bin/env bash
# Agreement: the same workload through pgbench (engine = "external") and
# tare pg (engine = "pg"), each a one-cell `tare run` against the postgres
# target natively (docs/external.md): `SELECT 1;` as a prepared statement,
# 2 threads, 8 connections, in interleaved rounds (the order flips every
# round). Prints each round's tps and mean latency and the median ratios
# pgbench / tare: a bias check users can read. pgbench prints no
# percentiles, so the latency compared is the mean (pgbench's `latency
# average`, tare's from its histogram); tare's p50 is printed beside it.
#
# Usage: [TARE=path] bench/agree-pgbench.sh [ROUNDS] [DURATION]   (as root; needs postgresql)
# PROFILE=ci runs target/ci/tare (quicker to build).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
DUR=${2:-3s}
PROFILE=${PROFILE:-release}
command -v pgbench >/dev/null || bash scripts/setup.sh
if [ -z "${TARE:-}" ]; then
  cargo build --profile "$PROFILE" -q -p tare
  TARE=$PWD/target/$PROFILE/tare
fi

dir=$(mktemp -d /tmp/tare-bench-XXXXXX)
trap 'rm -rf "$dir"' EXIT
common="[target]
kind = \"postgres\"
[load]
threads = 2
connections = 8
duration = \"$DUR\"
warmup = \"1s\"
[trials]
count = 1
cooldown = \"0s\""
printf 'SELECT 1;\n' > "$dir/select1.sql"
printf '%s\n[load.pg]\nmode = "prepared"\nscript = "SELECT 1;"\n' "$common" |
  sed 's/^\[load\]$/[load]\nengine = "pg"/' > "$dir/pg.toml"
printf '%s\n[load.external]\ntool = "pgbench"\nargs = ["-n", "-M", "prepared", "-f", "select1.sql", "-c{connections}", "-j{threads}", "-T{duration}", "{url}"]\nscripts = ["select1.sql"]\n' "$common" |
  sed 's/^\[load\]$/[load]\nengine = "external"/' > "$dir/pgbench.toml"

one() { # one run of $1 (pgbench|pg): prints "tps mean_us p50_us"
  rm -rf "$dir/out-$1"
  "$TARE" run -q "$dir/$1.toml" --out "$dir/out-$1" >/dev/null 2>&1
  python3 - "$dir/out-$1/trials.jsonl" <<'PY'
import json, sys
t = json.loads(open(sys.argv[1]).readline())
r = t.get("result") or sys.exit(f"trial failed: {t.get('error')}")
rate = r.get("tps") or r.get("rps")
print(f'{rate:.0f} {r["latency_us"]["mean"]:.1f} {r["latency_us"]["p50"]:.1f}')
PY
}

: > "$dir/rounds"
for i in $(seq "$ROUNDS"); do
  if (( i % 2 )); then order="pgbench pg"; else order="pg pgbench"; fi
  for e in $order; do read -r tps mean p50 < <(one "$e"); eval "${e}_tps=$tps ${e}_mean=$mean ${e}_p50=$p50"; done
  echo "round $i: pgbench ${pgbench_tps} tps mean ${pgbench_mean} us | tare pg ${pg_tps} tps mean ${pg_mean} us p50 ${pg_p50} us"
  echo "$pgbench_tps $pgbench_mean $pg_tps $pg_mean" >> "$dir/rounds"
done
python3 - "$dir/rounds" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
tps = [a / b for a, _, b, _ in rows if b > 0]
mean = [a / b for _, a, _, b in rows if b > 0]
print(f"pgbench / tare pg, median of {len(rows)} rounds: tps {statistics.median(tps):.3f}x "
      f"(rounds {min(tps):.3f}-{max(tps):.3f}), mean latency {statistics.median(mean):.3f}x "
      f"(rounds {min(mean):.3f}-{max(mean):.3f})")
PY
