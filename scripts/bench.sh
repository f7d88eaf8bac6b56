#!/usr/bin/env bash
# Runs omq's side-by-side benchmark: omq on every backend (tokio, its multi-threaded variant,
# compio, monoio, glommio) beside libzmq
# (Debian's, through the zmq crate), zmq.rs and a raw byte stream, in one run, with one method.
# Installs what it needs on a fresh Debian machine with Rust (libzmq, pkg-config, gcc for the
# malloc counter, valgrind for instruction counts), builds the harness with --release and runs
# it. Arguments pass through to the harness:
#
#   scripts/bench.sh --quick          # well under two minutes: 3 sizes, fewer messages, 3 repeats
#   scripts/bench.sh                  # the full table (about 20 minutes on a 2-vCPU VM)
#   scripts/bench.sh --only pushpull --transports tcp --sizes 64,1024
#
# Results: printed, and written to target/bench/{results.md,results.tsv,samples.tsv}.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

need_apt=()
pkg-config --exists libzmq 2>/dev/null || need_apt+=(libzmq3-dev)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
command -v gcc >/dev/null || need_apt+=(gcc)
command -v valgrind >/dev/null || need_apt+=(valgrind)
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "installing ${need_apt[*]} (apt)"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
pkg-config --exists libzmq || { echo "libzmq is still missing after apt-get" >&2; exit 1; }

cargo build --release -p benches
exec target/release/omq-bench "$@"
