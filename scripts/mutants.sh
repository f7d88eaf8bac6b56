#!/usr/bin/env bash
# Mutation testing of omq-core with cargo-mutants: does omq-core's own test suite notice when
# one of its rules is broken? cargo-mutants changes one thing at a time (a condition turned
# around, a function that returns a constant, an operator swapped), rebuilds, and runs the
# tests; a mutant the tests do not catch marks a rule no test pins.
#
#   scripts/mutants.sh [FILE...]          # mutate these omq-core files (default: all of it)
#   scripts/mutants.sh --in-diff REV      # only the omq-core lines changed since REV
#   scripts/mutants.sh --change           # only the lines changed since .ci/mutants-base
#
# `--change` is what scripts/test.sh (and so CI) runs: .ci/mutants-base holds the commit the
# last submission landed on, so new or changed core code arrives with tests that catch its
# mutants. Whoever lands a submission moves .ci/mutants-base to it afterwards.
#
# Only omq-core's own tests judge (unit, property, simulated network): a rule of the core should
# be pinned where it lives, not only by the interop suites. Each mutant costs a rebuild and a
# run of that suite (about a minute here), so a whole-crate run takes hours: mutate the files a
# change touches, or use --in-diff. Results: mutants.out/ (caught.txt, missed.txt, timeout.txt,
# unviable.txt); exit status non-zero when a mutant was missed. Exclusions (Debug/Display-only
# code) are in .cargo/mutants.toml, each with its reason.
set -euo pipefail
cd "$(dirname "$0")/.."
extra=()

if [ "${1:-}" = "--change" ]; then
    # In CI (a throwaway clone whose suite has just passed), mutate in place: the workspace's
    # target dir is reused instead of building every dependency again in a copy, and the
    # unmutated baseline run is skipped.
    if [ -n "${CI:-}" ]; then
        extra=(--in-place --baseline skip)
    fi
    base="$(cat .ci/mutants-base)"
    if ! git cat-file -e "$base^{commit}" 2>/dev/null; then
        echo "mutants: .ci/mutants-base names $base, which this clone does not have" >&2
        exit 1
    fi
    set -- --in-diff "$base"
fi

if [ "${1:-}" = "--in-diff" ]; then
    base="${2:?--in-diff needs a revision}"
    if [ -z "$(git diff --name-only "$base" -- omq-core/src)" ]; then
        echo "mutants: no omq-core source changed since $base: nothing to mutate"
        exit 0
    fi
fi

if ! cargo mutants --version >/dev/null 2>&1; then
    echo "installing cargo-mutants"
    cargo install --locked cargo-mutants --version 27.1.0
fi

args=(--package omq-core --test-tool nextest --timeout 300 --no-shuffle "${extra[@]}")
if [ "${1:-}" = "--in-diff" ]; then
    diff="$(mktemp)"
    trap 'rm -f "$diff"' EXIT
    git diff "$base" -- omq-core/src >"$diff"
    args+=(--in-diff "$diff")
else
    for f in "$@"; do
        args+=(--file "$f")
    done
fi
cargo mutants "${args[@]}"
