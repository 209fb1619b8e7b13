#!/usr/bin/env bash
# tare net vs the reference network benchmarks on loopback:
# round trips (100-byte request and response) against sockperf ping-pong
# and qperf tcp_lat, and one TCP stream against nuttcp and iperf3.
#
# Every server (tare net serve, sockperf server, qperf, iperf3 -s, nuttcp -S)
# pinned to CPU 1, every client to CPU 0; ROUNDS interleaved rounds, each
# running every tool once for DURATION seconds, in an order that changes
# every round. Per run: the mean round trip (sockperf and qperf report half
# of it; doubled), its median where the tool keeps a histogram, and the
# client's CPU per transaction from the kernel's rusage; for streams Gbit/s
# and the client's CPU per GB (bench/net_measure.py).
#
# Every round also runs tare's own client a second time (tare-rr-again,
# tare-stream-again): an A/A comparison, how far apart two identical
# clients land on this machine in the same round, printed beside every
# ratio. Each ratio is the median of the ratios within each round with a
# distribution-free 95% interval, and each goal of bench/README.md (round trip
# within 3% of each reference or faster, CPU per transaction no higher,
# stream at least 0.97x) is said met, missed or not resolved at this noise
# (bench/net_summary.py).
#
# TESTS=rr or TESTS=stream runs only those (more rounds in a quiet window).
# EPOLL=1 adds tare's round trips with --io epoll (tare-rr-epoll), URING=1
# with --io io_uring (tare-rr-uring): the event loop, where tare-rr's one
# connection blocks in send and receive.
# TARE_BEFORE=path adds another tare build's rr and stream client
# (tare-rr-before, tare-stream-before, against the same responder) to
# every round, so a change is measured interleaved.
# KEEP=path keeps every run's line (with the load average before and after).
#
# Usage: [TARE=path] [TARE_BEFORE=path] [TESTS=rr|stream] [EPOLL=1] [URING=1] [KEEP=path]
#        bench/vs-net.sh [ROUNDS] [DURATION]  (needs sockperf, qperf, iperf3, nuttcp)
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
echo "# $(date -u +%FT%TZ) ROUNDS=$ROUNDS DURATION=$DUR TESTS=${TESTS:-both}; load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out"
rr_tools="sockperf tare-rr qperf tare-rr-again"
[ -n "${EPOLL:-}" ] && rr_tools+=" tare-rr-epoll"
[ -n "${URING:-}" ] && rr_tools+=" tare-rr-uring"
[ -n "${TARE_BEFORE:-}" ] && rr_tools+=" tare-rr-before"
streams="tare-stream nuttcp iperf3 tare-stream-again"
[ -n "${TARE_BEFORE:-}" ] && streams+=" tare-stream-before"
case ${TESTS:-both} in
  rr) streams="" ;;
  stream) rr_tools="" ;;
  both) ;;
  *) echo "TESTS must be rr, stream or both" >&2; exit 2 ;;
esac
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r" >&2
  # Each round starts one tool later in each list, and every other round
  # runs the list backwards, so no tool always runs first or after the
  # same neighbour (a fixed order put tare-rr second in every round, and
  # two identical tare clients came out 0.93-1.13x apart).
  order=""
  for list in "$rr_tools" "$streams"; do
    [ -z "$list" ] && continue
    # shellcheck disable=SC2086
    words=$(rotate "$r" $list)
    if [ $(((r - 1) / $(echo $list | wc -w) % 2)) = 1 ]; then
      words=$(echo $words | tr ' ' '\n' | tac | tr '\n' ' ')
    fi
    order+=" $words"
  done
  for tool in $order; do
    case $tool in
      tare-rr | tare-rr-again) line=$($M $tool -- $C0 "$TARE" net rr -p $PORT -r 100,100 -l "$DUR" --json -) ;;
      tare-rr-epoll) line=$($M tare-rr-epoll -- $C0 "$TARE" net rr -p $PORT -r 100,100 -l "$DUR" --io epoll --json -) ;;
      tare-rr-uring) line=$($M tare-rr-uring -- $C0 "$TARE" net rr -p $PORT -r 100,100 -l "$DUR" --io io_uring --json -) ;;
      tare-rr-before) line=$($M tare-rr-before -- $C0 "$TARE_BEFORE" net rr -p $PORT -r 100,100 -l "$DUR" --json -) ;;
      sockperf) line=$($M sockperf -- $C0 sockperf ping-pong --tcp -i 127.0.0.1 -p $((PORT + 1)) -m 100 -t "$DUR") ;;
      qperf) line=$($M qperf -- $C0 qperf 127.0.0.1 --listen_port $((PORT + 2)) -m 100 -t "$DUR" -vv tcp_lat) ;;
      tare-stream | tare-stream-again) line=$($M $tool -- $C0 "$TARE" net stream -p $PORT -l "$DUR" --json -) ;;
      tare-stream-before) line=$($M tare-stream-before -- $C0 "$TARE_BEFORE" net stream -p $PORT -l "$DUR" --json -) ;;
      iperf3) line=$($M iperf3 -- $C0 iperf3 -c 127.0.0.1 -p $((PORT + 3)) -t "$DUR" -J) ;;
      nuttcp) line=$($M nuttcp -- $C0 nuttcp -P $((PORT + 4)) -p $((PORT + 5)) -T "$DUR" 127.0.0.1) ;;
    esac
    echo "$tool $line" | tee -a "$out" >&2
  done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out"

python3 bench/net_summary.py "$out"
# Every run's line stays for the record (KEEP=path keeps the file).
[ -n "${KEEP:-}" ] && cp "$out" "$KEEP"
rm -f "$out"
