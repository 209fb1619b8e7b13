#!/usr/bin/env bash
# Monitoring overhead on the quick experiment's load: tare serve (its own
# process, 1 thread) loaded by tare http (1 thread, 32 connections, 0.5 s
# warm-up + 2 s), with and without the monitor sampling every 100 ms,
# alternating, ROUNDS rounds. Prints the ratio of median req/s
# with/without; exits 1 when monitoring costs more than 2% (bench/README.md).
#
# Usage: bench/monitor-overhead.sh [ROUNDS] [INTERVAL_MS]
# Run it on a quiet machine: other load moves req/s more than the monitor does.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
interval=${2:-100}
cargo build -q --profile ci -p tare-monitor --example overhead
exec target/ci/examples/overhead "$rounds" "$interval"
