#!/usr/bin/env bash
# Mutation testing of omq-core with cargo-mutants: does omq-core's own test suite notice when
# one of its rules is broken? cargo-mutants changes one thing at a time (a condition turned
# around, a function that returns a constant, an operator swapped), rebuilds, and runs the
# tests; a mutant the tests do not catch marks a rule no test pins.
#
#   scripts/mutants.sh [FILE...]          # mutate these omq-core files (default: all of it)
#   scripts/mutants.sh --in-diff REV      # only the omq-core lines changed since REV
#
# Only omq-core's own tests judge (unit, property, simulated network): a rule of the core should
# be pinned where it lives, not only by the interop suites. Each mutant costs a rebuild and a
# run of that suite (about a minute here), so a whole-crate run takes hours: mutate the files a
# change touches, or use --in-diff. Results: mutants.out/ (caught.txt, missed.txt, timeout.txt,
# unviable.txt); exit status non-zero when a mutant was missed. Exclusions (Debug/Display-only
# code) are in .cargo/mutants.toml, each with its reason.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! cargo mutants --version >/dev/null 2>&1; then
    echo "installing cargo-mutants"
    cargo install --locked cargo-mutants
fi

args=(--package omq-core --test-tool nextest --timeout 300 --no-shuffle)
if [ "${1:-}" = "--in-diff" ]; then
    base="${2:?--in-diff needs a revision}"
    diff="$(mktemp)"
    trap 'rm -f "$diff"' EXIT
    git diff "$base" -- omq-core/src >"$diff"
    if [ ! -s "$diff" ]; then
        echo "no omq-core source changed since $base: nothing to mutate"
        exit 0
    fi
    args+=(--in-diff "$diff")
else
    for f in "$@"; do
        args+=(--file "$f")
    done
fi
cargo mutants "${args[@]}"
