#!/usr/bin/env bash
# pyzmq's own tests against omq: the modules of pyzmq's common path, from pyzmq's source
# distribution, with `import zmq` made to be omq (omq-python/tests/pyzmq_shim). The tests omq
# cannot pass are deselected below, each with its reason (also in docs/PYTHON.md); any other
# failure fails this script. Run after scripts/test-python.sh (which installs the wheel).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${OMQ_PYTHON_VENV:-${HOME}/.cache/omq/python-venv}"
PYZMQ_VERSION=27.1.0
cache="${HOME}/.cache/omq/pyzmq-sdist"
sdist="$cache/pyzmq-$PYZMQ_VERSION.tar.gz"
if [ ! -f "$sdist" ]; then
    echo "downloading pyzmq $PYZMQ_VERSION's source distribution (for its tests)"
    mkdir -p "$cache"
    "$venv/bin/pip" download -q "pyzmq==$PYZMQ_VERSION" --no-binary pyzmq --no-deps -d "$cache"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tar xzf "$sdist" -C "$work" "pyzmq-$PYZMQ_VERSION/tests" "pyzmq-$PYZMQ_VERSION/pytest.ini"
suite="$work/pyzmq-$PYZMQ_VERSION"
shim="$PWD/omq-python/tests/pyzmq_shim"
# OMQ_MODULES="test_auth ..." runs only those modules.
modules=(${OMQ_MODULES:-test_socket test_multipart test_reqrep test_pubsub test_pair test_poll test_asyncio
    test_monitor test_security test_auth test_device test_proxy_steerable test_monqueue test_context
    test_error test_z85 test_constants})
deselect=(
    # No shadowing or copies of a libzmq socket/context (needs libzmq's void* handle).
    tests/test_socket.py::TestSocket::test_shadow
    tests/test_socket.py::TestSocket::test_copy
    tests/test_context.py::TestContext::test_shadow
    tests/test_context.py::TestContext::test_copy
    tests/test_asyncio.py::test_shadow
    # pyzmq internals: the asyncio socket's private _recv_futures list.
    tests/test_asyncio.py::test_poll_leak
    # omq never lends a mutable buffer (it copies, or holds an immutable bytes), so a
    # MessageTracker is done at once (no zero-copy tracking).
    tests/test_socket.py::TestSocket::test_tracker
    # libzmq's exact ipc error text (path length limit quoted in the message).
    tests/test_socket.py::TestSocket::test_ipc_path_max_length_msg
    # A 2 GiB message: more memory than the test machines have to spare.
    tests/test_socket.py::TestSocket::test_large_send
)
args=()
for m in "${modules[@]}"; do args+=("tests/$m.py"); done
for d in "${deselect[@]}"; do args+=(--deselect "$d"); done
cd "$suite"
echo "pyzmq $PYZMQ_VERSION's tests against omq: ${#modules[@]} modules, ${#deselect[@]} tests deselected"
PYTHONPATH="$shim:tests" "$venv/bin/python" -m pytest -p no:cacheprovider -q --import-mode=importlib \
    -o addopts= -o pythonpath= -o faulthandler_timeout=60 -c pytest.ini "${args[@]}" "$@"
