#!/usr/bin/env bash
# tare http vs wrk against nginx: requests/s and generator CPU per request.
#
# nginx (Debian's, one worker, access_log off) pinned to CPU 1; the generator
# pinned to CPU 0; 1 thread, 50 connections; ROUNDS interleaved runs of each
# tool (wrk, tare, wrk, tare, ...). Prints per-run numbers and the median
# ratios tare/wrk. Goals (bench/README.md): rps ratio >= 1.0, CPU/request ratio <= 0.8.
# tare runs with its default wait (io_uring where the kernel allows it); also
# with --io epoll (the fallback), with batched wake-ups (--coalesce $COALESCE,
# opt-in: a little think time per request, none of it visible in latency;
# docs/http.md), and the same load on nginx's Unix socket (tare only; wrk
# cannot).
#
# BASELINE=/path/to/another/tare adds that build's default run to every
# round (wrk, tare, baseline, ...), to compare two builds in one run: its
# ratios to wrk and this build's ratio to it are printed last.
#
# PROFILE=ci builds and runs target/ci/tare instead of the release build
# (quicker to build; compare a baseline built the same way).
# TARE=/path/to/tare measures that build instead of building one.
#
# Usage: [TARE=path] [BASELINE=path] bench/vs-wrk.sh [ROUNDS] [DURATION]     (as root; needs nginx, wrk)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
DUR=${2:-5s}
PORT=${PORT:-18480}
COALESCE=${COALESCE:-100us}

command -v nginx >/dev/null && command -v wrk >/dev/null || bash scripts/setup.sh
PROFILE=${PROFILE:-release}
if [ -z "${TARE:-}" ]; then
  cargo build --profile "$PROFILE" -q -p tare
  TARE=$PWD/target/$PROFILE/tare
fi

dir=$(mktemp -d /tmp/tare-bench-XXXXXX)
trap 'kill $(cat "$dir/nginx.pid" 2>/dev/null) 2>/dev/null || true; sleep 0.2; rm -rf "$dir"' EXIT
mkdir -p "$dir/html"
printf 'hello, world\n' > "$dir/html/index.html"
cat > "$dir/nginx.conf" <<CONF
worker_processes 1;
daemon off;
user root;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$PORT;
    listen unix:$dir/nginx.sock;
    root $dir/html;
  }
}
CONF
taskset -c 1 nginx -p "$dir" -c "$dir/nginx.conf" &
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/" >/dev/null && break; sleep 0.1; done

URL="http://127.0.0.1:$PORT/"
BASELINE=${BASELINE:-}
declare -a wrk_rps wrk_cpu tare_rps tare_cpu ep_rps ep_cpu co_rps co_cpu unix_rps unix_cpu base_rps base_cpu
for i in $(seq "$ROUNDS"); do
  read -r w < <(taskset -c 0 python3 bench/measure.py wrk -- wrk -t1 -c50 -d"$DUR" "$URL")
  read -r t < <(taskset -c 0 python3 bench/measure.py tare -- "$TARE" http -t1 -c50 -d"$DUR" --json - "$URL")
  read -r e < <(taskset -c 0 python3 bench/measure.py tare -- "$TARE" http -t1 -c50 -d"$DUR" --io epoll --json - "$URL")
  read -r c < <(taskset -c 0 python3 bench/measure.py tare -- "$TARE" http -t1 -c50 -d"$DUR" --coalesce "$COALESCE" --json - "$URL")
  read -r u < <(taskset -c 0 python3 bench/measure.py tare -- "$TARE" http -t1 -c50 -d"$DUR" --json - --unix "$dir/nginx.sock" "$URL")
  echo "round $i: wrk $w | tare $t | tare --io epoll $e | tare --coalesce $c | tare-unix $u"
  if [ -n "$BASELINE" ]; then
    read -r b < <(taskset -c 0 python3 bench/measure.py tare -- "$BASELINE" http -t1 -c50 -d"$DUR" --json - "$URL")
    echo "round $i: baseline $b"
    for kv in $b; do eval "b_${kv%%=*}=${kv#*=}"; done
    base_rps+=("$b_rps"); base_cpu+=("$(python3 -c "print($b_cpu_s/$b_requests*1e6)")")
  fi
  for kv in $w; do eval "w_${kv%%=*}=${kv#*=}"; done
  for kv in $t; do eval "t_${kv%%=*}=${kv#*=}"; done
  for kv in $e; do eval "e_${kv%%=*}=${kv#*=}"; done
  for kv in $c; do eval "c_${kv%%=*}=${kv#*=}"; done
  for kv in $u; do eval "u_${kv%%=*}=${kv#*=}"; done
  wrk_rps+=("$w_rps"); wrk_cpu+=("$(python3 -c "print($w_cpu_s/$w_requests*1e6)")")
  tare_rps+=("$t_rps"); tare_cpu+=("$(python3 -c "print($t_cpu_s/$t_requests*1e6)")")
  ep_rps+=("$e_rps"); ep_cpu+=("$(python3 -c "print($e_cpu_s/$e_requests*1e6)")")
  co_rps+=("$c_rps"); co_cpu+=("$(python3 -c "print($c_cpu_s/$c_requests*1e6)")")
  unix_rps+=("$u_rps"); unix_cpu+=("$(python3 -c "print($u_cpu_s/$u_requests*1e6)")")
done

python3 - "${wrk_rps[*]}" "${tare_rps[*]}" "${wrk_cpu[*]}" "${tare_cpu[*]}" "${unix_rps[*]}" "${unix_cpu[*]}" "${co_rps[*]}" "${co_cpu[*]}" "${ep_rps[*]}" "${ep_cpu[*]}" "$COALESCE" <<'PY'
import statistics, sys
w_rps, t_rps, w_cpu, t_cpu, u_rps, u_cpu, c_rps, c_cpu, e_rps, e_cpu = ([float(x) for x in a.split()] for a in sys.argv[1:11])
co = sys.argv[11]
m = statistics.median
print(f"median req/s:          wrk {m(w_rps):10.0f}   tare {m(t_rps):10.0f}   ratio tare/wrk {m(t_rps)/m(w_rps):.3f} (goal >= 1.0)")
print(f"median CPU us/request: wrk {m(w_cpu):10.2f}   tare {m(t_cpu):10.2f}   ratio tare/wrk {m(t_cpu)/m(w_cpu):.3f} (goal <= 0.8)")
print(f"--io epoll:            req/s ratio {m(e_rps)/m(w_rps):.3f}, CPU us/request {m(e_cpu):.2f}, ratio tare/wrk {m(e_cpu)/m(w_cpu):.3f}")
print(f"--coalesce {co}:      req/s ratio {m(c_rps)/m(w_rps):.3f}, CPU us/request {m(c_cpu):.2f}, ratio tare/wrk {m(c_cpu)/m(w_cpu):.3f}")
print(f"unix socket (tare only): {m(u_rps):.0f} req/s, {m(u_cpu):.2f} us CPU/request")
PY
if [ -n "$BASELINE" ]; then
  python3 - "${wrk_rps[*]}" "${tare_rps[*]}" "${wrk_cpu[*]}" "${tare_cpu[*]}" "${base_rps[*]}" "${base_cpu[*]}" <<'PY'
import statistics, sys
w_rps, t_rps, w_cpu, t_cpu, b_rps, b_cpu = ([float(x) for x in a.split()] for a in sys.argv[1:7])
m = statistics.median
print(f"baseline:              req/s ratio {m(b_rps)/m(w_rps):.3f}, CPU us/request {m(b_cpu):.2f}, ratio baseline/wrk {m(b_cpu)/m(w_cpu):.3f}")
print(f"this build/baseline:   req/s {m(t_rps)/m(b_rps):.3f}, CPU us/request {m(t_cpu)/m(b_cpu):.3f}")
PY
fi
