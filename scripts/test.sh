#!/usr/bin/env bash
# Runs every omq test: unit, property, simulated-network, and interop against a real libzmq
# (installed first if missing). Each test runs under cargo-nextest with a per-test timeout.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cargo nextest run --workspace --profile ci --no-tests=fail "$@"
cargo test --workspace --doc --quiet
