#!/usr/bin/env bash
# Coverage-guided fuzzing of omq-core with cargo fuzz (libFuzzer), on the stable toolchain.
#
#   scripts/fuzz.sh [SECONDS]     # every target for SECONDS each (default 30)
#
# cargo-fuzz passes nightly-only flags (-Zsanitizer, -Cpasses=sancov...); RUSTC_BOOTSTRAP=1
# lets the stable compiler accept them, so no nightly toolchain is needed. cargo-fuzz itself is
# installed from crates.io when missing. Each target runs on a temporary copy of its committed
# seed corpus (fuzz/corpus/<target>), so the committed corpus does not grow; a crash is kept
# under fuzz/artifacts/<target>/ and makes the script exit non-zero after every target ran.
#
# Environment:
#   OMQ_FUZZ_SANITIZER   address (default) or none
#   OMQ_FUZZ_TARGETS     space-separated subset of targets (default: all)
#   OMQ_FUZZ_CHECK_KNOWN 0 to work around the once-known (now fixed) bugs, for an older omq-core
set -euo pipefail
cd "$(dirname "$0")/.."

secs="${1:-30}"
sanitizer="${OMQ_FUZZ_SANITIZER:-address}"
export RUSTC_BOOTSTRAP=1
cargo=(cargo)
if command -v rustup >/dev/null 2>&1 && rustup toolchain list | grep -q '^stable'; then
    cargo=(cargo +stable)
fi

if ! "${cargo[@]}" fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    "${cargo[@]}" install cargo-fuzz --locked
fi

flags=(--sanitizer "$sanitizer" --debug-assertions)
echo "== building the fuzz targets (sanitizer: $sanitizer)"
"${cargo[@]}" fuzz build "${flags[@]}"

targets="${OMQ_FUZZ_TARGETS:-$("${cargo[@]}" fuzz list)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=()
summary=()
for t in $targets; do
    mkdir -p "$work/corpus/$t"
    if [ -d "fuzz/corpus/$t" ]; then
        cp -R "fuzz/corpus/$t/." "$work/corpus/$t/"
    fi
    log="$work/$t.log"
    echo "== $t: ${secs}s"
    set +e
    "${cargo[@]}" fuzz run "${flags[@]}" "$t" "$work/corpus/$t" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=512 -malloc_limit_mb=512 \
        -print_final_stats=1 >"$log" 2>&1
    rc=$?
    set -e
    runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)"
    cov="$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1 || true)"
    if [ "$rc" -ne 0 ]; then
        failed+=("$t")
        echo "!! $t failed (exit $rc); the end of its log:"
        grep -v '^#' "$log" | tail -40
        summary+=("$(printf '%-22s FAILED  runs %-10s %s' "$t" "${runs:-?}" "${cov:-}")")
    else
        summary+=("$(printf '%-22s ok      runs %-10s %s' "$t" "${runs:-?}" "${cov:-}")")
    fi
done

echo
echo "== summary (${secs}s per target)"
printf '%s\n' "${summary[@]}"
if [ "${#failed[@]}" -ne 0 ]; then
    echo "== crashes in: ${failed[*]} (inputs under fuzz/artifacts/)"
fi
echo "fuzz: $(( ${#summary[@]} - ${#failed[@]} )) passed, ${#failed[@]} failed"
[ "${#failed[@]}" -eq 0 ]
