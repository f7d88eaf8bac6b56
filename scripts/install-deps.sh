#!/usr/bin/env bash
# Installs what omq's tests and demo need on a fresh Debian machine with Rust: libzmq (Debian's
# build, with libsodium, so CURVE interop works), pkg-config and gcc for the libzmq peer
# process, iproute2 for the network fault tests, cargo-nextest, and pyomq (omq.rs's Python
# binding, the peer of the lz4+tcp:// and zstd+tcp:// interop tests) in a venv at
# ~/.cache/omq/pyomq-venv. Does nothing for what is already there.
set -euo pipefail

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

need_apt=()
pkg-config --exists libzmq 2>/dev/null || need_apt+=(libzmq3-dev)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
command -v gcc >/dev/null || need_apt+=(gcc)
command -v python3 >/dev/null || need_apt+=(python3)
python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
# `ip` (network namespaces and links) for the network fault tests and the soak.
command -v ip >/dev/null || need_apt+=(iproute2)
# The draft-API libzmq of the draft interop tests is built from source (conformance/build.rs).
command -v g++ >/dev/null || need_apt+=(g++)
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "installing ${need_apt[*]} (apt)"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
pkg-config --exists libzmq || { echo "libzmq is still missing after apt-get" >&2; exit 1; }

if ! cargo nextest --version >/dev/null 2>&1; then
    echo "installing cargo-nextest"
    cargo install --locked cargo-nextest
fi

# pyomq, pinned: the compressed transports' wire format is a draft and moves with it.
PYOMQ_VERSION=0.21.0
venv="${HOME}/.cache/omq/pyomq-venv"
if ! "$venv/bin/python" -c "import pyomq, sys; sys.exit(pyomq.__version__ != '$PYOMQ_VERSION')" 2>/dev/null; then
    echo "installing pyomq $PYOMQ_VERSION into $venv"
    mkdir -p "$(dirname "$venv")"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "pyomq==$PYOMQ_VERSION"
fi
"$venv/bin/python" -c 'import pyomq; assert pyomq.has("lz4") and pyomq.has("zstd")' \
    || { echo "pyomq in $venv lacks lz4/zstd" >&2; exit 1; }
