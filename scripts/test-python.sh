#!/usr/bin/env bash
# The Python binding (omq-python/): builds the abi3 wheel with maturin in a venv
# (~/.cache/omq/python-venv, created with maturin, pytest, pytest-asyncio and pyzmq from PyPI),
# installs it, and runs its pytest suite, which includes interop with pyzmq (libzmq) both ways.
# Fails, never skips, when something is missing. Extra arguments go to pytest.
# OMQ_PYZMQ_SUITE=1 also runs pyzmq's own test modules against omq (scripts/pyzmq-suite.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${OMQ_PYTHON_VENV:-${HOME}/.cache/omq/python-venv}"
PYZMQ_VERSION=27.1.0
if ! "$venv/bin/python" -c "import maturin, pytest, pytest_asyncio, zmq" 2>/dev/null; then
    echo "creating $venv (maturin, pytest, pytest-asyncio, pyzmq)"
    mkdir -p "$(dirname "$venv")"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "maturin>=1.5,<2" "pytest>=7" "pytest-asyncio>=0.23" "pyzmq==$PYZMQ_VERSION"
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
wheels="$CARGO_TARGET_DIR/wheels-py"
rm -rf "$wheels"
"$venv/bin/maturin" build --release --quiet -m omq-python/Cargo.toml -i "$venv/bin/python" -o "$wheels"
"$venv/bin/pip" install -q --force-reinstall --no-deps "$wheels"/omq-*.whl
# Run from the tests directory so `import omq` is the installed wheel, not the source tree.
cd omq-python/tests
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
