#!/usr/bin/env bash
# The whole test suite: installs what it needs, then format, lint and tests.
# README's second command; .ci/run calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
# Last, whatever happened before: nothing the tests made may outlive them
# (scripts/leftovers.sh lists what it finds and fails the suite).
trap 'rc=$?; bash scripts/leftovers.sh || rc=1; exit $rc' EXIT
# io_uring is tare's default wait: its tests must not skip quietly where
# the kernel allows it.
if [ "$(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo 0)" = 0 ]; then
  export TARE_REQUIRE_URING=1
fi
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --profile ci -- -D warnings
# The README's install line gives a working binary.
bash scripts/install-check.sh
# Every crate runs even after one fails, so one CI run shows every failure.
cargo test --workspace --profile ci --no-fail-fast -- --test-threads 2
