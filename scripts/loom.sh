#!/usr/bin/env bash
# The outbox's protocol under loom (omq-driver/src/outbox.rs, `loom_model`): every interleaving
# of senders, a mover and a closer, checked for lost, reordered or unmoved messages and for
# SNDHWM. A build of its own (RUSTFLAGS="--cfg omq_loom" swaps the outbox's atomics and queue
# for loom's), in its own target directory so the main build's cache stays.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}/loom"
RUSTFLAGS="--cfg omq_loom" LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}" \
    cargo test -q --release -p omq-driver --lib outbox::loom_model "$@"
