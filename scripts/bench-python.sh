#!/usr/bin/env bash
# The Python binding beside pyzmq and pyomq: omq-python/bench/bench.py (PUSH/PULL 64 B, 1 KiB,
# 16 KiB over tcp and inproc; REQ/REP p50 over tcp; zmq.proxy() forwarding 128 B over tcp), each
# library RUNS times (default 3), medians printed as a table. Needs the wheel installed (scripts/test-python.sh) and pyomq's venv
# (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${OMQ_PYTHON_VENV:-${HOME}/.cache/omq/python-venv}"
pyomq="${HOME}/.cache/omq/pyomq-venv"
runs="${RUNS:-3}"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
for i in $(seq "$runs"); do
    "$venv/bin/python" omq-python/bench/bench.py omq >>"$out"
    "$venv/bin/python" omq-python/bench/bench.py zmq >>"$out"
    "$pyomq/bin/python" omq-python/bench/bench.py pyomq >>"$out"
done
"$venv/bin/python" - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cells = list(dict.fromkeys(r["cell"] for r in rows))
libs = ["omq", "zmq", "pyomq"]
def med(cell, lib):
    v = [r.get("msgs_per_s", r.get("us")) for r in rows if r["cell"] == cell and r["lib"] == lib]
    return statistics.median(v) if v else float("nan")
print("| cell | omq | pyzmq | pyomq | omq/pyzmq | omq/pyomq |")
print("|---|---|---|---|---|---|")
for c in cells:
    o, z, p = (med(c, l) for l in libs)
    unit = "us" if "p50" in c else "msg/s"
    if unit == "us":
        print(f"| {c} (us, lower is better) | {o:.1f} | {z:.1f} | {p:.1f} | {z/o:.2f}x | {p/o:.2f}x |")
    else:
        print(f"| {c} (msg/s) | {o:,.0f} | {z:,.0f} | {p:,.0f} | {o/z:.2f}x | {o/p:.2f}x |")
PY
