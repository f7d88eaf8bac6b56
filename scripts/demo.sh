#!/usr/bin/env bash
# Shows omq at work: tokio sockets over tcp and ipc, to each other and to a real libzmq.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cargo run --quiet --release -p conformance --example demo -- "$@"
