#!/usr/bin/env bash
# Runs every omq test: unit, property, simulated-network, loom (scripts/loom.sh), interop against a real libzmq
# (installed first if missing), the Python binding's own tests and pyzmq's test modules against
# it (scripts/test-python.sh, scripts/pyzmq-suite.sh), network faults between namespaces (as
# root), a 2.5-minute soak (scripts/soak.sh), then a short smoke of every fuzz target (scripts/fuzz.sh, 8 s
# each; OMQ_FUZZ_SMOKE_SECS changes it, 0 skips it). Before the Python part, cargo-mutants runs on
# the omq-core lines changed since .ci/mutants-base (scripts/mutants.sh --change; OMQ_MUTANTS=0
# skips it). Each test runs under cargo-nextest with a
# per-test timeout.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cargo nextest run --workspace --profile ci --no-tests=fail "$@"
# The `tracing` feature's own test (a separate build: the feature is off everywhere else).
cargo nextest run -p omq-tokio --features tracing --test tracing --profile ci --no-tests=fail
cargo nextest run -p omq-core --features tracing --lib --profile ci --no-tests=fail -E 'test(/^trace::/)'
cargo test --workspace --doc --quiet
# The outbox's protocol under loom (a build of its own with RUSTFLAGS="--cfg omq_loom").
bash scripts/loom.sh
# Mutation testing of the omq-core lines changed since the last landed submission
# (.ci/mutants-base): every mutant there must be caught by omq-core's own tests.
if [ "${OMQ_MUTANTS:-1}" != 0 ]; then
    bash scripts/mutants.sh --change
fi
# The Python binding (omq-python/, outside the workspace): its pytest suite, interop with pyzmq
# included, then pyzmq's own test modules against it.
bash scripts/test-python.sh
bash scripts/pyzmq-suite.sh
# A short soak (docs/FAULTS.md): every backend, mixed patterns, restarts and changing network
# conditions for OMQ_SOAK_MINUTES (default 2.5; 0 skips it).
soak="${OMQ_SOAK_MINUTES:-2.5}"
if [ "$soak" != 0 ]; then
    bash scripts/soak.sh "$soak"
fi
secs="${OMQ_FUZZ_SMOKE_SECS:-8}"
if [ "$secs" != 0 ]; then
    bash scripts/fuzz.sh "$secs"
fi
