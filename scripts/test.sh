#!/usr/bin/env bash
# The whole test suite: installs what it needs, then format, lint and tests.
# README's second command; .ci/run calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --profile ci -- -D warnings
cargo test --workspace --profile ci -- --test-threads 2
