#!/usr/bin/env bash
# Installs everything tare's test suite and benchmarks use, from Debian's
# packages and PyPI, as root. Safe to run again: it installs only what is missing.
set -euo pipefail

packages=(
  nginx-light        # the nginx target (native, and the image tare builds from it)
  postgresql         # the postgres target and pgbench, the reference generator
  wrk                # the reference HTTP generator in bench/
  nftables           # lab-nat placements (DNAT without Docker)
  iproute2           # ip netns, veth, bridge, tc netem
  strace             # syscall counts in bench/
  procps             # ps, sysctl
  python3-pip        # crossplane, the reference nginx parser
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" != 0 ]; then
    echo "setup: need root to install: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian starts the packaged services on install; tare starts its own servers,
# so stop the stock ones (they would hold port 80 and 5432).
for svc in nginx postgresql; do
  if command -v systemctl >/dev/null && systemctl is-active --quiet "$svc" 2>/dev/null; then
    systemctl stop "$svc" || true
  fi
done
pkill -x nginx 2>/dev/null || true

python3 -c 'import crossplane' 2>/dev/null || pip install -q crossplane==0.5.8 2>/dev/null || pip install -q crossplane
