#!/usr/bin/env bash
# Messages per second of 2 KiB JSON telemetry over a link shaped to 100 Mbit/s, for tcp://,
# lz4+tcp:// and zstd+tcp://. Needs root: it makes two network namespaces joined by a veth pair,
# limits the sender's side with tc's token bucket, and removes them again at the end. The sender
# and receiver are the omq CLI (release build), one in each namespace.
#
#   scripts/bench-shaped-link.sh [COUNT] [RATE]      # defaults: 20000 messages, 100mbit
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-20000}
rate=${2:-100mbit}
target=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p omq-cli -p benches
omq="$target/release/omq"
work=$(mktemp -d)
"$target/release/omq-bench" json "$count" > "$work/records"

a=omqbench-a b=omqbench-b
cleanup() {
    ip netns del "$a" 2>/dev/null || true
    ip netns del "$b" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
cleanup_ns() { ip netns del "$a" 2>/dev/null || true; ip netns del "$b" 2>/dev/null || true; }
cleanup_ns
ip netns add "$a"
ip netns add "$b"
ip link add omqbench-va type veth peer name omqbench-vb
ip link set omqbench-va netns "$a"
ip link set omqbench-vb netns "$b"
ip -n "$a" addr add 10.231.7.1/24 dev omqbench-va
ip -n "$b" addr add 10.231.7.2/24 dev omqbench-vb
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set omqbench-va up
ip -n "$b" link set omqbench-vb up
tc -n "$a" qdisc add dev omqbench-va root tbf rate "$rate" burst 64kb latency 100ms

echo "$count JSON messages of 2048 bytes, $rate link (tc tbf), omq CLI, tokio"
echo "| transport | seconds | msg/s | MB/s of JSON delivered |"
echo "|---|---:|---:|---:|"
port=5600
for scheme in tcp lz4+tcp zstd+tcp; do
    port=$((port + 1))
    ep="$scheme://10.231.7.2:$port"
    ip netns exec "$b" "$omq" pull --bind "$ep" --recv -n "$count" --timeout 60 > /dev/null &
    pull=$!
    sleep 0.3
    start=$(date +%s.%N)
    ip netns exec "$a" "$omq" push --connect "$ep" --send --compression-auto-train < "$work/records"
    wait "$pull"
    end=$(date +%s.%N)
    awk -v s="$start" -v e="$end" -v n="$count" -v t="$scheme" \
        'BEGIN { d = e - s; printf "| %s | %.2f | %.0f | %.1f |\n", t, d, n / d, n * 2048 / d / 1e6 }'
done
