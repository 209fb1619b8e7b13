#!/usr/bin/env bash
# Installs everything tare's test suite and benchmarks use, from Debian's
# packages and PyPI, as root. Safe to run again: it installs only what is missing.
set -euo pipefail

packages=(
  nginx-light        # the nginx target (native, and the image tare builds from it)
  postgresql         # the postgres target and pgbench, the reference generator
  redis-server       # the redis target (native, and the image tare builds from it)
  redis-tools        # redis-benchmark, the reference generator in bench/, and redis-cli
  mariadb-server     # the mariadb target: mariadbd and mariadb-install-db (native, and the image tare builds from it)
  mariadb-client     # the mariadb command-line client (docs, debugging; bench/vs-sysbench.sh checks with it)
  sysbench           # bench/vs-sysbench.sh: sysbench 1.0's OLTP workloads, the reference for tare mysql; the external engine's sysbench
  wrk                # the reference HTTP generator in bench/, and the external engine's wrk
  apache2-utils      # ab: the external engine's ApacheBench (docs/external.md)
  nghttp2-client     # h2load: the external engine's HTTP/2 load (docs/external.md)
  python3-locust     # locust: the external engine's Locust files (docs/external.md)
  jmeter             # JMeter 2.13: the external engine's JMeter plans (docs/external.md)
  jmeter-http        # JMeter's HTTP sampler (a Recommends of jmeter's, which --no-install-recommends leaves out)
  default-jdk-headless # javac: compiles tare's launcher for Debian's JMeter 2.13 (docs/external.md, "JMeter")
  nftables           # lab-nat placements (DNAT without Docker)
  iproute2           # ip netns, veth, bridge, tc netem
  podman             # the podman-* placements (rootful; conmon and runc/crun come with it)
  netavark           # Podman's network backend: the bridge and the published port's DNAT
  aardvark-dns       # netavark's DNS (Podman expects it beside netavark)
  iptables           # netavark 1.4 writes its port-forwarding rules with iptables
  slirp4netns        # rootless Podman's user-space network
  passt              # pasta, the newer rootless user-space network
  uidmap             # newuidmap/newgidmap for rootless Podman's subuid/subgid ranges
  strace             # syscall counts in bench/
  procps             # ps, sysctl
  python3-pip        # crossplane, the reference nginx parser
  chromium           # headless check of the HTML report (tare-report tests)
  fonts-dejavu-core  # a font for chromium's report screenshots
  qemu-system-x86    # vm-* placements: the guest's machine (KVM or TCG)
  linux-image-amd64  # vm-* placements: the guest kernel and its virtio modules
  busybox-static     # vm-* placements: the guest's /init shell and tools; kind = "image" tests: httpd in an image FROM scratch
  e2fsprogs          # vm-* placements: mkfs.ext4 formats a guest's data disk (storage = "volume")
  sockperf           # bench/vs-net.sh: ping-pong latency, the reference for tare net rr
  qperf              # bench/vs-net.sh: tcp_lat
  iperf3             # bench/vs-net.sh: stream throughput
  nuttcp             # bench/vs-net.sh: the IBM study's stream tool
  fio                # the tool engine: block I/O (the IBM study's disk rows)
  hpcc               # the tool engine: HPL, STREAM and RandomAccess (the IBM study's CPU and memory rows)
  sysbench           # the tool engine: sysbench cpu and memory
  openssh-client     # remote hosts ([hosts.NAME] ssh): tare drives ssh and scp
  openssh-server     # remote-host tests: sshd in namespaces stands for other machines
  caddy              # kind = "command": a Go server as your own service (docs/your-service.md, crates/deploy/tests/it/service.rs)
  python3-uvicorn    # kind = "command": a Python ASGI app under uvicorn, its interpreter and packages carried into images and guests
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

# Debian starts the packaged services when it installs them; tare starts its
# own servers on free ports, so stop the stock ones this script just installed
# (and nothing that was running before).
if ((${#missing[@]})); then
  for svc in nginx postgresql redis-server mariadb caddy; do
    if [[ " ${missing[*]} " == *" ${svc}"* ]]; then
      (command -v systemctl >/dev/null && systemctl stop "$svc") 2>/dev/null \
        || service "$svc" stop 2>/dev/null || true
    fi
  done
  # openssh-server's service is `ssh`: tests start their own sshd in namespaces.
  if [[ " ${missing[*]} " == *" openssh-server "* ]]; then
    (command -v systemctl >/dev/null && systemctl stop ssh) 2>/dev/null \
      || service ssh stop 2>/dev/null || true
  fi
fi

# cargo-fuzz: the test suite runs the response-parser fuzz target briefly.
command -v cargo-fuzz >/dev/null || cargo install -q --locked cargo-fuzz
# cargo-nextest: scripts/test.sh runs the tests with it (docs/testing.md).
command -v cargo-nextest >/dev/null || cargo install -q --locked cargo-nextest

# crossplane 0.5.8: the reference the nginx parser's tests compare against
# (crates/nginx/tests/it/crossplane.rs). Debian 12's system pip refuses to install
# into the system Python (PEP 668) unless told to.
python3 -c 'import crossplane' 2>/dev/null \
  || python3 -m pip install -q crossplane==0.5.8 2>/dev/null \
  || python3 -m pip install -q --break-system-packages crossplane==0.5.8
