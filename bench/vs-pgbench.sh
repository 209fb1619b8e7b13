#!/usr/bin/env bash
# tare pg vs pgbench: `select 1;` with -M prepared, 16 clients, 2 threads,
# over TCP and over the Unix socket, against the same PostgreSQL server.
#
# The server (Debian's PostgreSQL, fsync off) runs pinned to CPU 1 and the
# generator to CPU 0 (PIN=0 turns pinning off), as bench/vs-wrk.sh does for
# nginx. ROUNDS interleaved runs: pgbench tcp, tare tcp, pgbench unix,
# tare unix, ... Generator CPU is the kernel's rusage of the child process
# (getrusage RUSAGE_CHILDREN), the same measure for both tools.
# Prints per-run numbers and median ratios. Goals (bench/README.md): tps ratio
# tare/pgbench >= 1.0, CPU per transaction ratio <= 0.8. tare runs with its
# default wait (io_uring where the kernel allows it); also over TCP with
# --io epoll (the fallback), and with batched wake-ups (--coalesce $COALESCE, opt-in: a little think time
# between transactions, none of it in latency; docs/pg.md).
#
# BASELINE=/path/to/another/tare adds that build's default run to every
# round and transport, to compare two builds in one run (printed last).
# TARE=/path/to/tare measures that build instead of building
# target/release/tare (e.g. target/ci/tare, where a release build is not
# wanted).
#
# Usage: bench/vs-pgbench.sh [ROUNDS] [SECONDS]      (as root)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
SECS=${2:-5}
PIN=${PIN:-1}
COALESCE=${COALESCE:-100us}
BASELINE=${BASELINE:-}

PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$PGBIN/pgbench" ] || { bash scripts/setup.sh; PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1); }
if [ -z "${TARE:-}" ]; then
  cargo build --release -q -p tare || { [ -x target/release/tare ] && echo "vs-pgbench: build failed, using the existing target/release/tare" >&2; }
  TARE=$PWD/target/release/tare
fi

dir=$(mktemp -d /tmp/tare-pgbench-XXXXXX)
chown postgres "$dir"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
stop() {
  local pid
  pid=$(head -1 "$dir/data/postmaster.pid" 2>/dev/null || true)
  if [ -n "$pid" ]; then
    kill -INT "$pid" 2>/dev/null || true   # fast shutdown
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap stop EXIT
(cd "$dir" && runuser -u postgres -- "$PGBIN/initdb" -D "$dir/data" -U postgres --auth=trust --no-sync >/dev/null)
server_cpu=""; gen_cpu=""
if [ "$PIN" = 1 ]; then server_cpu="taskset -c 1"; gen_cpu="taskset -c 0"; fi
(cd "$dir" && $server_cpu runuser -u postgres -- "$PGBIN/postgres" -D "$dir/data" -p "$PORT" -k "$dir" \
  -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100 >"$dir/postgres.log" 2>&1 &)
for _ in $(seq 100); do "$PGBIN/pg_isready" -q -h "$dir" -p "$PORT" && break; sleep 0.1; done
echo 'select 1;' > "$dir/select1.sql"

# measure KIND COMMAND...: prints "tps=<n> cpu_s=<user+sys> tx=<n>".
measure() {
  local kind=$1; shift
  python3 - "$kind" "$@" <<'PY'
import json, re, resource, subprocess, sys
kind, cmd = sys.argv[1], sys.argv[2:]
before = resource.getrusage(resource.RUSAGE_CHILDREN)
out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
after = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
if kind == "pgbench":
    tps = float(re.search(r"^tps = ([\d.]+)", out, re.M).group(1))
    tx = int(re.search(r"actually processed: (\d+)", out).group(1))
else:
    r = json.loads(out)
    tps, tx = r["tps"], r["requests"]
print(f"tps={tps:.1f} cpu_s={cpu:.4f} tx={tx}")
PY
}

common=(-n -M prepared -f "$dir/select1.sql" -c 16 -j 2 -T "$SECS" -p "$PORT" -U postgres postgres)
declare -A tps cpu
for i in $(seq "$ROUNDS"); do
  for transport in tcp unix; do
    host=127.0.0.1; [ "$transport" = unix ] && host=$dir
    p=$(measure pgbench $gen_cpu "$PGBIN/pgbench" -h "$host" "${common[@]}")
    t=$(measure tare $gen_cpu "$TARE" pg --json - -h "$host" "${common[@]}")
    if [ "$transport" = tcp ]; then
      co=$(measure tare $gen_cpu "$TARE" pg --json - -h "$host" --coalesce "$COALESCE" "${common[@]}")
      ep=$(measure tare $gen_cpu "$TARE" pg --json - -h "$host" --io epoll "${common[@]}")
      echo "round $i tcp --coalesce $COALESCE: tare $co | --io epoll: tare $ep"
      eval "$(echo "$co" | tr ' ' '\n' | sed 's/^/local_/')"
      tps[co-tcp]+="$local_tps "
      cpu[co-tcp]+="$(python3 -c "print($local_cpu_s / $local_tx * 1e6)") "
      eval "$(echo "$ep" | tr ' ' '\n' | sed 's/^/local_/')"
      tps[ep-tcp]+="$local_tps "
      cpu[ep-tcp]+="$(python3 -c "print($local_cpu_s / $local_tx * 1e6)") "
    fi
    echo "round $i $transport: pgbench $p | tare $t"
    who_list="pgbench tare"
    if [ -n "$BASELINE" ]; then
      b=$(measure tare $gen_cpu "$BASELINE" pg --json - -h "$host" "${common[@]}")
      echo "round $i $transport: baseline $b"
      who_list="pgbench tare base"
    fi
    for who in $who_list; do
      line=$p; [ $who = tare ] && line=$t; [ $who = base ] && line=$b
      eval "$(echo "$line" | tr ' ' '\n' | sed 's/^/local_/')"
      tps[$who-$transport]+="$local_tps "
      cpu[$who-$transport]+="$(python3 -c "print($local_cpu_s / $local_tx * 1e6)") "
    done
  done
done

python3 - "${tps[pgbench-tcp]}" "${tps[tare-tcp]}" "${cpu[pgbench-tcp]}" "${cpu[tare-tcp]}" \
          "${tps[pgbench-unix]}" "${tps[tare-unix]}" "${cpu[pgbench-unix]}" "${cpu[tare-unix]}" \
          "${tps[co-tcp]}" "${cpu[co-tcp]}" "$COALESCE" "${tps[ep-tcp]}" "${cpu[ep-tcp]}" <<'PY'
import statistics, sys
a = [[float(x) for x in s.split()] for s in sys.argv[1:11]]
m = statistics.median
for name, (pt, tt, pc, tc) in (("tcp", a[0:4]), ("unix", a[4:8])):
    print(f"{name:4}: median tps     pgbench {m(pt):9.0f}  tare {m(tt):9.0f}  ratio tare/pgbench {m(tt)/m(pt):.3f} (goal >= 1.0)")
    print(f"{name:4}: median CPU us/tx pgbench {m(pc):7.2f}  tare {m(tc):7.2f}  ratio tare/pgbench {m(tc)/m(pc):.3f} (goal <= 0.8)")
ct, cc = a[8], a[9]
print(f"tcp --coalesce {sys.argv[11]}: tps ratio {m(ct)/m(a[0]):.3f}, CPU us/tx {m(cc):.2f}, ratio tare/pgbench {m(cc)/m(a[2]):.3f}")
et, ec = ([float(x) for x in s.split()] for s in sys.argv[12:14])
print(f"tcp --io epoll: tps ratio {m(et)/m(a[0]):.3f}, CPU us/tx {m(ec):.2f}, ratio tare/pgbench {m(ec)/m(a[2]):.3f}")
PY
if [ -n "$BASELINE" ]; then
  python3 - "${tps[tare-tcp]}" "${cpu[tare-tcp]}" "${tps[base-tcp]}" "${cpu[base-tcp]}" \
            "${tps[tare-unix]}" "${cpu[tare-unix]}" "${tps[base-unix]}" "${cpu[base-unix]}" <<'PY'
import statistics, sys
a = [[float(x) for x in s.split()] for s in sys.argv[1:9]]
m = statistics.median
for name, (tt, tc, bt, bc) in (("tcp", a[0:4]), ("unix", a[4:8])):
    print(f"{name:4}: this build/baseline: tps {m(tt)/m(bt):.3f}, CPU us/tx {m(tc):.2f} vs {m(bc):.2f}, ratio {m(tc)/m(bc):.3f}")
PY
fi
