#!/usr/bin/env bash
# The profile's overhead on the quick experiment's load: tare serve (its own
# process, 1 thread) loaded by tare http (1 thread, 32 connections, 0.5 s
# warm-up + 2 s), monitored every 100 ms, with and without whole-machine
# stack sampling (docs/profiles.md), alternating, ROUNDS rounds. Prints the
# ratio of median req/s with/without, the rounds' paired ratios (geometric
# mean, 95% interval) and the load's CPU per request with/without; exits 1
# when the paired mean says the profile costs more than 2% (bench/README.md).
# With TARE_BENCH_PROFILES=FILE, appends each profiled trial's µs per request
# by component and subsystem to FILE (JSON lines). Needs root (or
# CAP_PERFMON): perf_event_open. bench/profile-cost.sh measures one sample's
# cost in CPU time, which a shared machine's load moves much less.
#
# Usage: bench/profile-overhead.sh [ROUNDS] [HZ]
# Run it on a quiet machine: other load moves req/s more than the profile does
# (at a load average of 11, a round's pair ratio ranged 0.25-3.4).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7}
hz=${2:-499}
cargo build -q --profile ci -p tare-monitor --example profile_overhead
exec target/ci/examples/profile_overhead "$rounds" "$hz"
