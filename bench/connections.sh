#!/usr/bin/env bash
# Many connections: tare http vs wrk against nginx and against tare serve
# at 1k, 10k and the most the open-files limit allows.
#
# Each server (nginx: one worker; tare serve: one thread) on CPU 1, the
# generator (-t$THREADS) on CPU 0; for every level, ROUNDS interleaved runs
# (wrk, tare, wrk, tare, ...). Per run: completed requests, tare's time to
# establish every connection (its connect phase comes before its measured
# -d; wrk connects inside its -d), the generator's peak RSS, the server's
# RSS near the end of the run, and the loopback packets the kernel dropped
# (softnet backlog, /proc/net/softnet_stat). Prints the medians and the
# ratios tare/wrk. Goal: tare completes at least what wrk does at every
# level, both under 10 KB of RSS per connection.
#
# Usage: bench/connections.sh [ROUNDS] [DURATION] [LEVELS...]   (as root; nginx, wrk)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
DUR=${2:-5s}
shift $(( $# > 2 ? 2 : $# )) || true
THREADS=${THREADS:-1}
PORT=${PORT:-18580}
SPORT=$((PORT + 1))
HARD=$(ulimit -Hn)
# Each process holds its connections and a few more files; tare refuses
# more than the hard limit less 64 (docs/http.md, "Many connections").
MAX=$(( HARD - 100 ))
LEVELS=${*:-"1000 10000 $MAX"}

command -v nginx >/dev/null && command -v wrk >/dev/null || bash scripts/setup.sh
cargo build --release -q -p tare
TARE=$PWD/target/release/tare
ulimit -Sn "$HARD"

dir=$(mktemp -d /tmp/tare-conns-XXXXXX)
serve_pid=
cleanup() {
  kill "$(cat "$dir/nginx.pid" 2>/dev/null)" 2>/dev/null || true
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null || true
  sleep 0.3
  rm -rf "$dir"
}
trap cleanup EXIT
mkdir -p "$dir/html"
printf 'hello, world\n' > "$dir/html/index.html"
BACKLOG=$(cat /proc/sys/net/core/somaxconn)
cat > "$dir/nginx.conf" <<CONF
worker_processes 1;
worker_rlimit_nofile $HARD;
daemon off;
user root;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections $HARD; multi_accept on; }
http {
  access_log off;
  keepalive_requests 1000000;
  keepalive_timeout 300s;
  server { listen 127.0.0.1:$PORT backlog=$BACKLOG; root $dir/html; }
}
CONF
taskset -c 1 nginx -p "$dir" -c "$dir/nginx.conf" &
taskset -c 1 "$TARE" serve --listen "127.0.0.1:$SPORT" 2>/dev/null &
serve_pid=$!
for _ in $(seq 50); do
  curl -sf "http://127.0.0.1:$PORT/" >/dev/null && curl -sf "http://127.0.0.1:$SPORT/" >/dev/null && break
  sleep 0.1
done
nginx_worker=$(pgrep -P "$(cat "$dir/nginx.pid")" | head -1)

drops() { python3 -c "print(sum(int(l.split()[1], 16) for l in open('/proc/net/softnet_stat')))"; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
secs() { python3 -c "import re,sys; m=re.match(r'([\d.]+)(ms|s|m)?$','$1'); v=float(m.group(1)); print(v/1000 if m.group(2)=='ms' else v*60 if m.group(2)=='m' else v)"; }
D=$(secs "$DUR")

# run TOOL SERVER_PID URL CONNS: one line of key=value
run() {
  local tool=$1 spid=$2 url=$3 c=$4 d0 out rss_s pid
  d0=$(drops)
  if [ "$tool" = wrk ]; then
    taskset -c 0 /usr/bin/time -f '%M' -o "$dir/rss" timeout 120 \
      wrk -t"$THREADS" -c"$c" -d"$DUR" "$url" > "$dir/out" 2>&1 &
    pid=$!
    sleep "$(python3 -c "print(max($D - 1, 0.5))")"
  else
    taskset -c 0 /usr/bin/time -f '%M' -o "$dir/rss" timeout 120 \
      "$TARE" http -t"$THREADS" -c"$c" -d"$DUR" --json - "$url" > "$dir/out" 2>/dev/null &
    pid=$!
    # tare's measured period starts after its connect phase (1024 at
    # once, then 10000/s).
    sleep "$(python3 -c "print(max($D - 1, 0.5) + max($c - 1024, 0) / 10000)")"
  fi
  rss_s=$(rss_kb "$spid")
  wait "$pid" || true
  # Let the server drain what the last run left (unaccepted handshakes,
  # closing connections) before the next tool meets it.
  sleep 2
  python3 - "$tool" "$dir/out" "$(tail -1 "$dir/rss")" "$rss_s" "$(( $(drops) - d0 ))" <<'PY'
import json, re, sys
tool, path, rss_g, rss_s, drops = sys.argv[1:6]
text = open(path).read()
est = "-"
if tool == "wrk":
    m = re.search(r"(\d+) requests in", text)
    req = int(m.group(1)) if m else 0
else:
    try:
        r = json.loads(text)
        req = r["requests"]
        c = r.get("connect_phase") or {}
        est = "%.2f" % c["established_all_s"] if c.get("established_all_s") is not None else "never"
    except (ValueError, KeyError):
        req = 0
print(f"requests={req} established_s={est} rss_gen_kb={rss_g} rss_server_kb={rss_s} drops={drops}")
PY
}

summary=()
for level in $LEVELS; do
  for server in nginx serve; do
    if [ "$server" = nginx ]; then spid=$nginx_worker; url="http://127.0.0.1:$PORT/"; else spid=$serve_pid; url="http://127.0.0.1:$SPORT/"; fi
    declare -a wr=() tr=() wg=() tg=() ws=() ts=() te=()
    for i in $(seq "$ROUNDS"); do
      w=$(run wrk "$spid" "$url" "$level")
      t=$(run tare "$spid" "$url" "$level")
      echo "$server c=$level round $i: wrk $w | tare $t"
      for kv in $w; do eval "w_${kv%%=*}=${kv#*=}"; done
      for kv in $t; do eval "t_${kv%%=*}=${kv#*=}"; done
      wr+=("$w_requests"); tr+=("$t_requests"); wg+=("$w_rss_gen_kb"); tg+=("$t_rss_gen_kb")
      ws+=("$w_rss_server_kb"); ts+=("$t_rss_server_kb"); te+=("$t_established_s")
    done
    summary+=("$(python3 - "$server" "$level" "${wr[*]}" "${tr[*]}" "${wg[*]}" "${tg[*]}" "${ws[*]}" "${ts[*]}" "${te[*]}" <<'PY'
import statistics, sys
server, level = sys.argv[1], int(sys.argv[2])
wr, tr, wg, tg, ws, ts = ([float(x) for x in a.split()] for a in sys.argv[3:9])
te = sys.argv[9].split()
m = statistics.median
ratio = m(tr) / m(wr) if m(wr) > 0 else float("inf")
kb = lambda x: x / level
mb = lambda x: x / 1024
print(f"{server:6} c={level:<6} requests wrk {m(wr):9.0f} tare {m(tr):9.0f} ratio {ratio:6.2f} | "
      f"tare established in {','.join(te)} s | RSS MB (KB/conn): wrk {mb(m(wg)):.1f} ({kb(m(wg)):.2f}) "
      f"tare {mb(m(tg)):.1f} ({kb(m(tg)):.2f}) server under wrk {mb(m(ws)):.1f} ({kb(m(ws)):.2f}) "
      f"under tare {mb(m(ts)):.1f} ({kb(m(ts)):.2f})")
PY
)")
  done
done
echo
echo "medians over $ROUNDS rounds, -t$THREADS -d$DUR (RSS per connection: the whole process's RSS / connections)"
printf '%s\n' "${summary[@]}"
