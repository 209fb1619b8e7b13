#!/usr/bin/env bash
# Runs examples/two-hosts.toml with its generator host `gen` in a network
# namespace of this machine: Debian's sshd on the namespace's own address,
# keys and known_hosts made for the run, everything removed on exit.
# Usage: examples/two-hosts.sh [tare run flags...]   (as root)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tare=${TARE:-tare}
ns=twohosts-gen
net=10.250.249
work=$(mktemp -d)
cleanup() {
  [ -n "${sshd_pid:-}" ] && kill "$sshd_pid" 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  ip link del th2root 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
if ip -4 -o addr | grep -q " $net\."; then
  echo "two-hosts.sh: $net.0/24 is in use here" >&2; exit 1
fi
ssh-keygen -q -t ed25519 -N '' -f "$work/id"
ssh-keygen -q -t ed25519 -N '' -f "$work/hostkey"
cp "$work/id.pub" "$work/authorized_keys"
mkdir -p /run/sshd
ip netns add "$ns"
ip link add th2root type veth peer name eth0 netns "$ns"
ip addr add "$net.1/24" dev th2root && ip link set th2root up
ip -n "$ns" addr add "$net.2/24" dev eth0
ip -n "$ns" link set eth0 up && ip -n "$ns" link set lo up
cat > "$work/sshd.conf" <<CONF
ListenAddress $net.2
HostKey $work/hostkey
AuthorizedKeysFile $work/authorized_keys
PidFile none
StrictModes no
PermitRootLogin prohibit-password
PasswordAuthentication no
UsePAM no
ClientAliveInterval 1
ClientAliveCountMax 3
CONF
ip netns exec "$ns" /usr/sbin/sshd -D -e -f "$work/sshd.conf" 2>"$work/sshd.log" &
sshd_pid=$!
echo "$net.2 $(cat "$work/hostkey.pub")" > "$work/known_hosts"
for _ in $(seq 50); do (exec 3<>"/dev/tcp/$net.2/22") 2>/dev/null && break; sleep 0.1; done
sed -e "s|^ssh = \"root@192.0.2.10\"|ssh = \"root@$net.2\"|" \
    -e "s|^# identity = .*|identity = \"$work/id\"|" \
    -e "s|^# known_hosts = .*|known_hosts = \"$work/known_hosts\"|" \
    "$here/two-hosts.toml" > "$work/two-hosts.toml"
"$tare" run "$work/two-hosts.toml" "$@"
