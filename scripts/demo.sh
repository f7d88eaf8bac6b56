#!/usr/bin/env bash
# Shows omq at work: an omq DEALER talking to a real libzmq ROUTER over TCP.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cargo run --quiet --release -p conformance --example interop_demo -- "$@"
