#!/usr/bin/env bash
# Quick rebuild of the Python binding for development (no LTO) into the test venv.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${OMQ_PYTHON_VENV:-${HOME}/.cache/omq/python-venv}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    "$venv/bin/maturin" build --release --quiet -m omq-python/Cargo.toml -i "$venv/bin/python" -o "$CARGO_TARGET_DIR/wheels-dev"
"$venv/bin/pip" install -q --force-reinstall --no-deps "$CARGO_TARGET_DIR"/wheels-dev/omq-*.whl
rm -rf "$CARGO_TARGET_DIR/wheels-dev"
