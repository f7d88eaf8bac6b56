#!/usr/bin/env bash
# Installs what omq's tests and demo need on a fresh Debian machine with Rust: libzmq (Debian's
# build, with libsodium, so CURVE interop works), pkg-config and gcc for the libzmq peer
# process, iproute2 for the network fault tests, and cargo-nextest. Does nothing for what is
# already there.
set -euo pipefail

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

need_apt=()
pkg-config --exists libzmq 2>/dev/null || need_apt+=(libzmq3-dev)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
command -v gcc >/dev/null || need_apt+=(gcc)
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
