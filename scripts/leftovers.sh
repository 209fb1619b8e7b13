#!/usr/bin/env bash
# What the test suite left behind, if anything: scripts/test.sh runs this
# last and fails when it prints a line. Everything tare makes carries a
# `tare` name or label and its owner (ARCHITECTURE.md, "Leaves no trace"),
# and every test removes what it made, failed or not; this is the proof.
#
# Looked for: Docker and rootful Podman containers, volumes and networks;
# Docker images built from a user's Dockerfile; Podman images imported
# from a user's image (rootful and rootless);
# rootless Podman containers and their forwarders in the store of every
# user tare ran rootless Podman as (`podman ps` as root does not list
# them: they live under tare-rootless and the test users); network
# namespaces, links and taps (`tr<lab id>...`), nftables tables; QEMU
# guests; mounts under a deployment directory; deployment directories
# (`$TMPDIR/tare-*` holding `.tare-owner`); processes of a tare binary or
# started from a deployment directory; test users (`tare-*` but
# tare-rootless, which tare keeps).
#
# Usage: scripts/leftovers.sh   (exit 0: nothing left; 1: each thing on a line)
set -uo pipefail

found=()
left() { found+=("$1"); }
have() { command -v "$1" >/dev/null 2>&1; }
tmp=${TMPDIR:-/tmp}

# Docker: tare's containers are named tare-... and labelled tare.owner.
if have docker && docker info >/dev/null 2>&1; then
  while IFS=$'\t' read -r name labels; do
    [[ -z $name ]] && continue
    if [[ $name == tare-* || $labels == *tare.owner=* ]]; then
      left "docker container $name"
    fi
  done < <(docker ps -a --format '{{.Names}}\t{{.Labels}}' 2>/dev/null)
  while read -r v; do
    [[ -n $v ]] && left "docker volume $v"
  done < <(docker volume ls -q --filter label=tare.owner 2>/dev/null)
  # Images built from a user's Dockerfile (kind = "image") carry their
  # owner; tare's own image cache carries none and stays.
  while read -r i; do
    [[ -n $i ]] && left "docker image $i"
  done < <(docker images --filter label=tare.owner --format '{{.Repository}}:{{.Tag}}' 2>/dev/null)
fi

# Rootful Podman.
if have podman; then
  while IFS=$'\t' read -r name labels; do
    [[ -z $name ]] && continue
    if [[ $name == tare-* || $labels == *tare.owner* ]]; then
      left "podman container $name"
    fi
  done < <(podman ps -a --format '{{.Names}}\t{{.Labels}}' 2>/dev/null)
  while read -r v; do
    [[ $v == tare-* ]] && left "podman volume $v"
  done < <(podman volume ls -q 2>/dev/null)
  # A user's image (kind = "image") imported for a deployment carries its
  # owner; tare's own images carry none and stay.
  while read -r i; do
    [[ -n $i ]] && left "podman image $i"
  done < <(podman images --filter label=tare.owner --format '{{.Repository}}:{{.Tag}}' 2>/dev/null)
fi

# Rootless Podman: each user's own store, and the forwarders and conmons
# running as that user (a container's processes outlive any `podman ps`
# that cannot reach the store).
rootless_users=()
while IFS=: read -r user _ uid _; do
  [[ $user == tare-* ]] && rootless_users+=("$user:$uid")
done </etc/passwd
for entry in "${rootless_users[@]}"; do
  user=${entry%%:*} uid=${entry##*:}
  if have podman && have runuser; then
    home=$(getent passwd "$user" | cut -d: -f6)
    while read -r name; do
      [[ -n $name ]] && left "rootless podman container $name (user $user)"
    done < <(cd / && runuser -u "$user" -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
      HOME="$home" XDG_RUNTIME_DIR="/run/user/$uid" \
      podman ps -a --format '{{.Names}}' 2>/dev/null)
    while read -r name; do
      [[ -n $name ]] && left "rootless podman image $name (user $user)"
    done < <(cd / && runuser -u "$user" -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
      HOME="$home" XDG_RUNTIME_DIR="/run/user/$uid" \
      podman images --filter label=tare.owner --format '{{.Repository}}:{{.Tag}}' 2>/dev/null)
  fi
  while read -r pid comm; do
    case $comm in
    pasta | pasta.avx2 | passt | passt.avx2 | slirp4netns | rootlessport | exe)
      left "process $pid $comm of $user: $(tr '\0' ' ' </proc/"$pid"/cmdline 2>/dev/null | cut -c1-120)"
      ;;
    esac
  done < <(ps -u "$uid" -o pid=,comm= 2>/dev/null)
  # tare-rootless is tare's own and stays; a test's user is removed.
  [[ $user != tare-rootless ]] && left "user $user"
done

# Podman's run state of a user that is gone (a removed test user's, which
# the next user given its uid would inherit).
for dir in "$tmp"/containers-user-* "$tmp"/podman-run-*; do
  [[ -d $dir ]] || continue
  uid=${dir##*-}
  getent passwd "$uid" >/dev/null || left "podman run state $dir (uid $uid has no user)"
done

# The namespace lab: namespaces tare-<run>-<id>-srv|cli, links and taps
# tr<8 hex><role>, nftables tables tare_<run>_<id>.
if have ip; then
  while read -r ns _; do
    [[ $ns == tare-* ]] && left "netns $ns"
  done < <(ip netns list 2>/dev/null)
  while read -r link; do
    link=${link%%@*}
    [[ $link =~ ^tr[0-9a-f]{8} ]] && left "link $link"
  done < <(ip -o link show 2>/dev/null | awk -F': ' '{print $2}')
fi
if have nft; then
  while read -r _ family table; do
    [[ $table == tare* ]] && left "nft table $family $table"
  done < <(nft list tables 2>/dev/null)
fi

# Mounts inside a deployment directory (a guest's disk image, an image's
# root filesystem a native cell runs from).
while read -r _ point _; do
  [[ $point == "$tmp"/tare-* ]] && left "mount $point"
done </proc/mounts

# Deployment directories: $TMPDIR/tare-<run>-<pid>-<n> with an owner file.
for dir in "$tmp"/tare-*; do
  [[ -e $dir/.tare-owner ]] && left "deployment directory $dir"
done

# Processes: a tare binary, QEMU booted by tare, any server started from a
# deployment directory (its config is there).
for proc in /proc/[0-9]*; do
  pid=${proc#/proc/}
  [[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
  exe=$(readlink "$proc/exe" 2>/dev/null) || continue
  args=$(tr '\0' ' ' <"$proc/cmdline" 2>/dev/null) || continue
  name=${exe##*/}
  # A conmon of a container tare named, listed in a store or not (a
  # container whose record is gone runs on under its conmon).
  if [[ $name == conmon && $args =~ (-n|--name)\ (tare-[^ ]*) ]]; then
    left "process $pid conmon of container ${BASH_REMATCH[2]}"
    continue
  fi
  if [[ $name == tare || ($name == qemu-system-* && $args == *tare*) || $args == *"$tmp"/tare-*/* ]]; then
    left "process $pid ${args:0:160}"
  fi
done

if ((${#found[@]} == 0)); then
  exit 0
fi
echo "scripts/leftovers.sh: the tests left ${#found[@]} thing(s) behind:" >&2
printf '  %s\n' "${found[@]}" >&2
exit 1
