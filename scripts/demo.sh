#!/usr/bin/env bash
# Shows omq at work: tokio sockets over tcp and ipc, to each other and to a real libzmq; then
# the quick benchmark, omq beside libzmq, zmq.rs and a raw stream (skip it with --no-bench).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bench=1
if [ "${1:-}" = "--no-bench" ]; then
    bench=0
    shift
fi
cargo run --quiet --release -p conformance --example demo -- "$@"
if [ "$bench" = 1 ]; then
    echo
    echo "Quick benchmark (full table: scripts/bench.sh; how to read it: docs/PERFORMANCE.md)"
    bash scripts/bench.sh --quick
fi
