#!/usr/bin/env bash
# Miri over the workspace's unsafe code: omq-xsalsa's SIMD, with AVX2 enabled for Miri (so the
# AVX2 paths are the ones interpreted), then AVX-512 (its paths). Needs the nightly toolchain
# with its miri and rust-src components (`rustup component add --toolchain nightly miri rust-src`).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}/miri-build"
RUSTFLAGS="-C target-feature=+avx2" cargo +nightly miri test -p omq-xsalsa --test miri
RUSTFLAGS="-C target-feature=+avx2" cargo +nightly miri test -p omq-xsalsa --lib two_blocks
# And the AVX-512 copies: the 256-bit code with `vprold`, and the sixteen-block Salsa20.
RUSTFLAGS="-C target-feature=+avx2,+avx512f,+avx512vl" cargo +nightly miri test -p omq-xsalsa --test miri
