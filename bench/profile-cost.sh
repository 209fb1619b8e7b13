#!/usr/bin/env bash
# What one profile sample costs, in CPU time (docs/profiles.md, "What it
# costs"): one thread round-trips 64 bytes over loopback TCP and times its
# own CPU per round trip, in 0.4 s windows alternating the monitor with and
# without the profile (ABBA), PAIRS pairs per rate. Other load on a shared
# machine moves req/s by more than the profile does; it moves CPU per round
# trip much less. Prints per rate the ratio with/without (95% interval), one
# sample's cost in µs, and the sampler thread's CPU. A high rate (4999 Hz)
# magnifies the per-sample cost out of the noise; the default rate's cost
# is that times its rate. Needs root (or CAP_PERFMON): perf_event_open.
#
# Usage: bench/profile-cost.sh [PAIRS] [HZ...]   (default: 20 pairs at 4999, 499, 199 Hz)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q --profile ci -p tare-monitor --example profile_cost
exec target/ci/examples/profile_cost "$@"
