#!/usr/bin/env bash
# The README's install line works: `cargo install --path crates/cli` gives a
# `tare` that runs `tare doctor` and checks an experiment. Built with the
# suite's `ci` profile into the suite's own target directory, so it reuses
# what the tests compiled instead of a second optimised build.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
cargo install --quiet --locked --path crates/cli --profile ci --target-dir "${CARGO_TARGET_DIR:-target}" --root "$root"
"$root/bin/tare" --version
"$root/bin/tare" doctor > /dev/null
"$root/bin/tare" run --check examples/quick.toml > /dev/null
(cd "$root" && "$root/bin/tare" init nginx > /dev/null 2>&1 && "$root/bin/tare" run --check nginx.toml > /dev/null)
echo "install-check: cargo install gives a working tare"
