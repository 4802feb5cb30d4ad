#!/usr/bin/env bash
# One device call for everything CUDA (run ON the GPU machine, from the repository root, .whl/ carried):
#
#     GPU_ALL_BUDGET=290 tools/gpu/run_gpu_all.sh      # results in $OUT (default ./gpu-out)
#
#   1. tools/gpu/run_gpu_suite.sh (setup + tests) within GPU_SUITE_BUDGET seconds (default 150)
#   2. tools/gpu/launch_profile.py: where the time of one launch goes (stages, cProfile)
#   3. benchmarks/gpu.py $GPU_BENCH_ARGS (default "--quick") with what time is left
# Everything fits GPU_ALL_BUDGET seconds (default 290, for a 300 s device command). $OUT receives at
# most 8 files (the device tool's limit): summary.txt suite_stdout.log profile.log bench.log gpu.json
# gpu.png suite_logs.tar.gz (the suite's own 8 files). Exit status: the suite's.
set -uo pipefail
REPO=$(pwd)
[ -f "$REPO/python/polykern/__init__.py" ] || { echo "run this from the polykern repository root" >&2; exit 2; }
OUT=${OUT:-$REPO/gpu-out}
mkdir -p "$OUT"
START=$(date +%s)
BUDGET=${GPU_ALL_BUDGET:-290}
TMP=$(mktemp -d /tmp/polykern-all.XXXXXX)
export SITE=${SITE:-/tmp/site} PYTHONUNBUFFERED=1
export GPU_SUITE_BUDGET=${GPU_SUITE_BUDGET:-150}
left() { echo $(( START + BUDGET - $(date +%s) )); }

echo "== suite (budget ${GPU_SUITE_BUDGET}s)"
OUT="$TMP/suite" bash "$REPO/tools/gpu/run_gpu_suite.sh" > "$OUT/suite_stdout.log" 2>&1
SUITE_RC=$?
cp "$TMP/suite/summary.txt" "$OUT/summary.txt" 2>/dev/null || echo "no summary (setup failed?)" > "$OUT/summary.txt"
cat "$OUT/summary.txt"
tar czf "$OUT/suite_logs.tar.gz" -C "$TMP" suite 2>/dev/null || true

BACKEND_DIRS=$(for d in "$REPO"/backends/*/; do printf ':%s' "${d%/}"; done)
export PYTHONPATH="$SITE:$REPO/python$BACKEND_DIRS${PYTHONPATH:+:$PYTHONPATH}"
# The backends are not pip-installed here: name them for discovery (docs/backends.md "Discovery").
POLYKERN_BACKEND_PATH=$(for d in "$REPO"/backends/*/polykern_*/; do d=${d%/}; printf '%s:' "${d##*/}"; done)
export POLYKERN_BACKEND_PATH=${POLYKERN_BACKEND_PATH%:}
# shellcheck disable=SC1091
[ -f "$SITE/polykern_env.sh" ] && . "$SITE/polykern_env.sh"
PY=${PYTHON:-python3}

T=$(( $(left) - 10 )); [ "$T" -gt 60 ] && T=60
if [ "$T" -gt 10 ]; then
    echo "== launch profile (limit ${T}s)"
    timeout --kill-after=5 "$T" "$PY" "$REPO/tools/gpu/launch_profile.py" > "$OUT/profile.log" 2>&1
    echo "profile exit $?"; tail -n 40 "$OUT/profile.log"
fi
T=$(( $(left) - 8 ))
if [ "$T" -gt 20 ]; then
    echo "== benchmarks/gpu.py ${GPU_BENCH_ARGS:---quick} (limit ${T}s)"
    # shellcheck disable=SC2086
    timeout --kill-after=5 "$T" "$PY" "$REPO/benchmarks/gpu.py" --out "$TMP/bench" ${GPU_BENCH_ARGS:---quick} \
        > "$OUT/bench.log" 2>&1
    echo "bench exit $?"
    cp "$TMP/bench/gpu.json" "$TMP/bench/gpu.png" "$OUT/" 2>/dev/null || true
    grep -E "launch overhead|^target|^saxpy|^reduction|^matmul|^stencil|FAILED|copy reference|^device" "$OUT/bench.log"
else
    echo "no time left for the benchmarks" > "$OUT/bench.log"
fi
rm -rf "$TMP"
echo "== done in $(( $(date +%s) - START ))s; suite exit $SUITE_RC"
exit $SUITE_RC
