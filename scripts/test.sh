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
# Each phase's wall time on stderr, for docs/testing.md's table.
phase() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "test.sh: $name took $((SECONDS - start)) s" >&2
}
phase fmt cargo fmt --all -- --check
# Clippy's lints come with the build instead of a check build of their own
# (docs/testing.md, "Where the build time goes"): `cargo clippy` is cargo
# with clippy-driver as the rustc of the workspace's crates and its
# arguments in CLIPPY_ARGS, so every cargo command on the workspace below
# compiles and lints the same units. Every one must see both: cargo puts
# the wrapper into the workspace crates' hashes, so a command without it
# would compile them all again. The fuzz builds take neither
# (tare_testbed::fuzz removes them too).
export RUSTC_WORKSPACE_WRAPPER=clippy-driver
export CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
# Every test binary, the library, binary and example targets with it
# (what `cargo clippy --all-targets` lints; the workspace has no benches):
# a lint fails this phase with the lint shown.
phase build cargo nextest run --workspace --cargo-profile ci --profile ci --no-run
# The README's install line gives a working binary (from the build's units).
phase install-check bash scripts/install-check.sh
# The fuzz targets the smoke tests run (tare_testbed::fuzz), built here into
# their shared target/fuzz with the same flags, so no test's timeout is
# spent compiling (a fuzz build takes minutes on a loaded machine).
fuzz_build() {
  local fuzz_target=${CARGO_TARGET_DIR:-$PWD/target}/fuzz dir
  for dir in crates/*/fuzz; do
    (cd "${dir%/fuzz}" && env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS RUSTC_BOOTSTRAP=1 \
      cargo fuzz build --dev -s none --target-dir "$fuzz_target")
  done
}
phase fuzz-build fuzz_build
# nextest runs no doc tests.
phase doc-tests cargo test --doc --workspace --profile ci
# Every test in a process of its own, in the groups of .config/nextest.toml
# (docs/testing.md); every crate runs even after one fails, so one CI run
# shows every failure. Two tests per core: the tests wait on daemons,
# guests and timers about half the time (docs/testing.md, "Tests per
# core"); the ones that measure rates still run alone. Last: its summary
# is the suite's closing line.
cores=$(nproc)
cargo nextest run --workspace --cargo-profile ci --profile ci --no-fail-fast \
  --test-threads $((2 * cores))
