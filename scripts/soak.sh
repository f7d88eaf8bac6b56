#!/usr/bin/env bash
# The soak (docs/FAULTS.md): every backend at once, mixed patterns (PUSH/PULL, REQ/REP with lazy
# pirate against an omq REP and a libzmq REP that is SIGKILLed and restarted, PUB/SUB with
# churning subscribers, ROUTER with DEALERs coming and going, CURVE on some) between two network
# namespaces joined by an impaired link whose conditions change every 8-20 s (loss, jitter,
# reordering, duplication, 2 Mbit/s, MTU 576, partitions of 2-6 s). RSS and open descriptors are
# sampled every second. Fails on any lost, duplicated, reordered or corrupted message where the
# pattern promises none, and on RSS/descriptors growing past their bound.
#
#   scripts/soak.sh MINUTES [SEED]      (as root; MINUTES may be fractional, e.g. 2.5)
set -euo pipefail
cd "$(dirname "$0")/.."
mins="${1:?usage: scripts/soak.sh MINUTES [SEED]}"
secs=$(awk -v m="$mins" 'BEGIN { printf "%d", m * 60 }')
if [ "$(id -u)" != 0 ]; then
    echo "soak.sh needs root (network namespaces and TUN devices); CI runs it as root" >&2
    exit 1
fi
cargo build -p omq-cli --quiet
cargo build -p conformance --example soak --quiet
bin="${CARGO_TARGET_DIR:-target}/debug/examples/soak"
"$bin" "$secs" ${2:+"$2"} &
pid=$!
cleanup() {
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    # The soak removes its namespaces itself; these are left only if it was killed.
    for ns in $(ip netns list | awk '{print $1}' | grep "^omq-$pid-" || true); do
        ip netns del "$ns" || true
    done
}
trap 'cleanup; exit 130' INT TERM
rc=0
wait "$pid" || rc=$?
cleanup
exit "$rc"
