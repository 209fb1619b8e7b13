#!/usr/bin/env bash
# tare net vs the reference network benchmarks on loopback (issue 18):
# round trips (100-byte request and response) against sockperf ping-pong
# and qperf tcp_lat, and one TCP stream against nuttcp and iperf3.
#
# Every server (tare net serve, sockperf server, qperf, iperf3 -s, nuttcp -S)
# pinned to CPU 1, every client to CPU 0; ROUNDS interleaved rounds, each
# running every tool once for DURATION seconds. Per run: the mean round
# trip (sockperf and qperf report half of it; doubled) and the client's CPU
# per transaction from the kernel's rusage; for streams Gbit/s and the
# client's CPU per GB. Prints per-run lines, the medians, and the ratios
# tare/reference. Goals (issue 18): round trip within 3% of each reference
# (ratio 0.97..1.03 or lower), CPU per transaction no higher (ratio <= 1),
# stream at least 0.97x. Round trips also by their median (p50: tare and
# sockperf keep histograms, qperf does not), which a machine shared with
# builds leaves far steadier than the means (bench/net_measure.py); each
# ratio also as the median of the ratios within each round. With
# TARE_BEFORE set to the same build, tare/tare-rr-before is an A/A
# comparison: how far apart two identical clients land on this machine.
#
# Round trips are measured twice by tare: with its default wait (io_uring
# where the kernel allows it) and with --io epoll (tare-rr-epoll).
# TARE_BEFORE=path adds another tare build's rr and stream client
# (tare-rr-before, tare-stream-before, against the same responder) to
# every round, so a change is measured interleaved.
#
# Usage: [TARE=path] [TARE_BEFORE=path] bench/vs-net.sh [ROUNDS] [DURATION]  (needs sockperf, qperf, iperf3, nuttcp)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
DUR=${2:-5}
PORT=${PORT:-18600}

for t in sockperf qperf iperf3 nuttcp; do command -v $t >/dev/null || bash scripts/setup.sh; done
# TARE=/path/to/tare measures that build instead of building a release one.
if [ -z "${TARE:-}" ]; then
  cargo build --release -q -p tare
  TARE=$PWD/target/release/tare
fi
M="python3 bench/net_measure.py"
C0="taskset -c 0"
C1="taskset -c 1"

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

$C1 "$TARE" net serve --listen 127.0.0.1:$PORT 2>/dev/null & pids+=($!)
$C1 sockperf server --tcp -i 127.0.0.1 -p $((PORT + 1)) >/dev/null 2>&1 & pids+=($!)
$C1 qperf --listen_port $((PORT + 2)) >/dev/null 2>&1 & pids+=($!)
$C1 iperf3 -s -p $((PORT + 3)) >/dev/null 2>&1 & pids+=($!)
# nuttcp's server forks per test without -1; in the foreground with --nofork.
$C1 nuttcp -S --nofork -P $((PORT + 4)) -p $((PORT + 5)) >/dev/null 2>&1 & pids+=($!)
sleep 1

# rotate N A B C...: the list started at its ((N-1) mod length)th word.
rotate() {
  local n=$1
  shift
  local k=$(((n - 1) % $#))
  echo "${@:k+1}" "${@:1:k}"
}

out=$(mktemp /tmp/tare-vs-net-XXXXXX)
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r" >&2
  tools="sockperf tare-rr qperf tare-rr-epoll"
  [ -n "${TARE_BEFORE:-}" ] && tools+=" tare-rr-before"
  streams="tare-stream nuttcp iperf3"
  [ -n "${TARE_BEFORE:-}" ] && streams+=" tare-stream-before"
  # Each round starts one tool later in each list, so no tool always runs
  # first or after the same neighbour (a fixed order put tare-rr second in
  # every round, and two identical tare clients came out 0.93-1.13x apart).
  for tool in $(rotate "$r" $tools) $(rotate "$r" $streams); do
    case $tool in
      tare-rr) line=$($M tare-rr -- $C0 "$TARE" net rr -p $PORT -r 100,100 -l "$DUR" --json -) ;;
      tare-rr-epoll) line=$($M tare-rr-epoll -- $C0 "$TARE" net rr -p $PORT -r 100,100 -l "$DUR" --io epoll --json -) ;;
      tare-rr-before) line=$($M tare-rr-before -- $C0 "$TARE_BEFORE" net rr -p $PORT -r 100,100 -l "$DUR" --json -) ;;
      sockperf) line=$($M sockperf -- $C0 sockperf ping-pong --tcp -i 127.0.0.1 -p $((PORT + 1)) -m 100 -t "$DUR") ;;
      qperf) line=$($M qperf -- $C0 qperf 127.0.0.1 --listen_port $((PORT + 2)) -m 100 -t "$DUR" -vv tcp_lat) ;;
      tare-stream) line=$($M tare-stream -- $C0 "$TARE" net stream -p $PORT -l "$DUR" --json -) ;;
      tare-stream-before) line=$($M tare-stream-before -- $C0 "$TARE_BEFORE" net stream -p $PORT -l "$DUR" --json -) ;;
      iperf3) line=$($M iperf3 -- $C0 iperf3 -c 127.0.0.1 -p $((PORT + 3)) -t "$DUR" -J) ;;
      nuttcp) line=$($M nuttcp -- $C0 nuttcp -P $((PORT + 4)) -p $((PORT + 5)) -T "$DUR" 127.0.0.1) ;;
    esac
    echo "$tool $line" | tee -a "$out" >&2
  done
done

python3 - "$out" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    tool, *kv = line.split()
    runs.setdefault(tool, []).append({k: float(v) for k, v in (x.split("=") for x in kv)})
med = lambda tool, key: statistics.median(r[key] for r in runs[tool])
# Each tool runs once per round, so the i-th runs of two tools share a
# round: the median of the within-round ratios leaves out what a round's
# neighbours did to both (a build starting, a stall), as a paired test does.
def paired(tool, ref, key):
    return statistics.median(a[key] / b[key] for a, b in zip(runs[tool], runs[ref]))
has = lambda tool, key: all(key in r for r in runs[tool])
p50 = lambda tool: f"{med(tool, 'p50_us'):.2f}" if has(tool, "p50_us") else "-"
print(f"{'tool':<14} {'mean round trip us':>18} {'p50 us':>8} {'CPU us/tx':>10}")
rr = [t for t in ("tare-rr", "tare-rr-epoll", "tare-rr-before", "sockperf", "qperf") if t in runs]
for t in rr:
    print(f"{t:<14} {med(t, 'rtt_us'):>18.2f} {p50(t):>8} {med(t, 'cpu_us_per_tx'):>10.3f}")
for ref in [t for t in rr if t != "tare-rr"]:
    median = (f", p50 {med('tare-rr', 'p50_us') / med(ref, 'p50_us'):.3f}x"
              f" (within rounds {paired('tare-rr', ref, 'p50_us'):.3f}x)"
              if has(ref, "p50_us") else "")
    print(f"tare/{ref}: round trip {med('tare-rr', 'rtt_us') / med(ref, 'rtt_us'):.3f}x"
          f" (within rounds {paired('tare-rr', ref, 'rtt_us'):.3f}x){median}, "
          f"CPU per transaction {med('tare-rr', 'cpu_us_per_tx') / med(ref, 'cpu_us_per_tx'):.3f}x"
          f" (within rounds {paired('tare-rr', ref, 'cpu_us_per_tx'):.3f}x)")
print(f"{'tool':<18} {'Gbit/s':>8} {'CPU s/GB':>9}")
st = [t for t in ("tare-stream", "tare-stream-before", "nuttcp", "iperf3") if t in runs]
for t in st:
    print(f"{t:<18} {med(t, 'gbit'):>8.2f} {med(t, 'cpu_s_per_gb'):>9.4f}")
for ref in [t for t in st if t != "tare-stream"]:
    print(f"tare/{ref}: stream {med('tare-stream', 'gbit') / med(ref, 'gbit'):.3f}x"
          f" (within rounds {paired('tare-stream', ref, 'gbit'):.3f}x), "
          f"CPU per GB {med('tare-stream', 'cpu_s_per_gb') / med(ref, 'cpu_s_per_gb'):.3f}x"
          f" (within rounds {paired('tare-stream', ref, 'cpu_s_per_gb'):.3f}x)")
PY
# Every run's line stays for the record (KEEP=path keeps the file).
[ -n "${KEEP:-}" ] && cp "$out" "$KEEP"
rm -f "$out"
