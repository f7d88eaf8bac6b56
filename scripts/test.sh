#!/usr/bin/env bash
# Runs every omq test: unit, property, simulated-network, interop against a real libzmq
# (installed first if missing), then a short smoke of every fuzz target (scripts/fuzz.sh, 15 s
# each; OMQ_FUZZ_SMOKE_SECS changes it, 0 skips it). Each test runs under cargo-nextest with a
# per-test timeout.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cargo nextest run --workspace --profile ci --no-tests=fail "$@"
# The `tracing` feature's own test (a separate build: the feature is off everywhere else).
cargo nextest run -p omq-tokio --features tracing --test tracing --profile ci --no-tests=fail
cargo test --workspace --doc --quiet
secs="${OMQ_FUZZ_SMOKE_SECS:-15}"
if [ "$secs" != 0 ]; then
    bash scripts/fuzz.sh "$secs"
fi
