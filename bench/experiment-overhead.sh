#!/usr/bin/env bash
# Orchestration overhead of `tare run`: the built-in quick experiment's wall
# time against the load it applied (warm-up + measured periods of the trials
# that ran, from plan.json and trials.jsonl). The difference is deploying,
# the fairness check, cool-downs and recording. Prints the ratio; exits 1
# when the overhead is 25% of the load or more (bench/README.md's goal).
#
#   bench/experiment-overhead.sh [EXPERIMENT.toml]    # default: the quick experiment
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release -p tare >&2
out=$(mktemp -d /tmp/tare-overhead.XXXXXX)
trap 'rm -rf "$out"' EXIT

start=$(date +%s.%N)
target/release/tare run --quiet --out "$out/run" "$@" >"$out/report.txt"
end=$(date +%s.%N)

python3 - "$out/run" "$start" "$end" <<'PY'
import json, sys

run, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
plan = json.load(open(f"{run}/plan.json"))
trials = [json.loads(l) for l in open(f"{run}/trials.jsonl") if l.strip()]
ok = [t for t in trials if t.get("result")]
warmup = plan["load"]["warmup"]
measured = sum(t["result"]["duration_s"] for t in ok)
load = measured + warmup * len(ok)
wall = end - start
cells = sum(1 for c in plan["cells"] if not c.get("skipped"))
skipped = [c["id"] for c in plan["cells"] if c.get("skipped")]
print(f"experiment:   {plan['experiment']} ({cells} cells run, {len(skipped)} skipped)")
print(f"trials:       {len(trials)} ({len(trials) - len(ok)} failed)")
print(f"wall time:    {wall:.1f} s")
print(f"load time:    {load:.1f} s ({measured:.1f} s measured + {warmup * len(ok):.1f} s warm-up)")
if load <= 0:
    print("no load ran: nothing to compare")
    sys.exit(1)
overhead = (wall - load) / load
print(f"overhead:     {wall - load:.1f} s = {overhead:.1%} of the load (wall/load = {wall / load:.3f})")
sys.exit(0 if overhead < 0.25 else 1)
PY
