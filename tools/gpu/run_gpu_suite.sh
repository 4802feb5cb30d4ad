#!/usr/bin/env bash
# Run polykern's CUDA checks ON the GPU machine (no network there), from the repository root:
#
#     tools/gpu/run_gpu_suite.sh        # logs into $OUT (default ./gpu-out)
#
# Needs ./.whl/ (tools/gpu/fetch_carry.sh, carried into the working tree). Steps:
#   setup          tools/gpu/gpu_setup.sh: missing wheels + pycuda (built from its sdist) -> /tmp/site
#                  (GPU_SUITE_SKIP_SETUP=1 skips it on a machine where it already ran)
#   backends       python -m polykern backends (the cuda runtime must say yes, with the device)
#   conformance    pytest tests/test_conformance.py -k "cuda or nvptx"
#   cross_compile  pytest tests/test_cross_compile.py -k "cuda or nvptx"
#   cuda_backend   pytest backends/cuda/tests
#   native         pytest tests/test_native.py (the C runtime; CUDA through the driver API)
# Each step has a time limit inside an overall budget (GPU_SUITE_BUDGET seconds, default 570, so
# the whole run fits a 10-minute device call), writes its log to $OUT, and a failure prints the end
# of that log; later steps still run where they can. $OUT gets 8 files at most (the device tool's
# limit): setup.log backends.txt pytest_{conformance,cross_compile,cuda_backend,native}.log
# summary.txt junit.tar.gz. Exit status 0 only if every step passed.
set -uo pipefail

REPO=$(pwd)
[ -f "$REPO/python/polykern/__init__.py" ] || { echo "run this from the polykern repository root" >&2; exit 2; }
OUT=${OUT:-$REPO/gpu-out}
mkdir -p "$OUT"
export SITE=${SITE:-/tmp/site}
export PY=${PYTHON:-python3}
export JOBS=${JOBS:-$(nproc 2>/dev/null || echo 8)}
export WORK
WORK=$(mktemp -d /tmp/polykern-gpu.XXXXXX)
BUDGET=${GPU_SUITE_BUDGET:-570}
START=$(date +%s)
RESULTS=()
FAILED=0

say() { echo "== $*"; }

record() {  # record NAME STATUS SECONDS DETAIL
    RESULTS+=("$(printf '%-14s %-4s %4ss  %s' "$1" "$2" "$3" "$4")")
    [ "$2" = ok ] || FAILED=1
}

run_step() {  # run_step NAME LOG LIMIT command...: run with a time limit, log, record, show failures
    local name=$1 log=$2 limit=$3 left t0 rc dt detail
    shift 3
    left=$(( START + BUDGET - $(date +%s) - 10 ))
    if [ "$left" -lt 20 ]; then
        record "$name" SKIP 0 "no time left in the ${BUDGET}s budget"
        say "$name skipped: no time left"
        return 1
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    say "$name (limit ${limit}s) -> $(basename "$log")"
    t0=$(date +%s)
    timeout --kill-after=5 "$limit" "$@" > "$log" 2>&1
    rc=$?
    dt=$(( $(date +%s) - t0 ))
    detail=$(grep -E '[0-9]+ (passed|failed|error|skipped|deselected)' "$log" | tail -n 1 | tr -d '=' | sed 's/^ *//; s/ *$//')
    if [ $rc -eq 0 ]; then
        record "$name" ok "$dt" "${detail:-done}"
        say "$name ok (${dt}s) $detail"
    else
        if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then detail="TIMED OUT after ${limit}s; $detail"; fi
        record "$name" FAIL "$dt" "exit $rc; $detail"
        say "$name FAILED (exit $rc, ${dt}s); last 60 lines of $(basename "$log"):"
        tail -n 60 "$log"
        say "end of $(basename "$log")"
    fi
    return $rc
}

if [ "${GPU_SUITE_SKIP_SETUP:-0}" = 1 ]; then  # re-run on a machine where setup already ran
    SETUP_OK=1
    echo "setup skipped (GPU_SUITE_SKIP_SETUP=1); using what $SITE holds" > "$OUT/setup.log"
    record setup ok 0 "skipped (GPU_SUITE_SKIP_SETUP=1)"
elif run_step setup "$OUT/setup.log" 330 bash "$REPO/tools/gpu/gpu_setup.sh"; then
    SETUP_OK=1
    grep -E '^(pycuda|# )' "$OUT/setup.log" || true
else
    SETUP_OK=0
fi

# The environment for everything after setup.
BACKEND_DIRS=$(for d in "$REPO"/backends/*/; do printf ':%s' "${d%/}"; done)
export PYTHONPATH="$SITE:$REPO/python$BACKEND_DIRS${PYTHONPATH:+:$PYTHONPATH}"
# The backends are not pip-installed here: name them for discovery (docs/backends.md "Discovery").
POLYKERN_BACKEND_PATH=$(for d in "$REPO"/backends/*/polykern_*/; do d=${d%/}; printf '%s:' "${d##*/}"; done)
export POLYKERN_BACKEND_PATH=${POLYKERN_BACKEND_PATH%:}
# shellcheck disable=SC1091
[ -f "$WORK/env.sh" ] && . "$WORK/env.sh" && cp "$WORK/env.sh" "$SITE/polykern_env.sh"  # for later runs
# shellcheck disable=SC1091
[ ! -f "$WORK/env.sh" ] && [ -f "$SITE/polykern_env.sh" ] && . "$SITE/polykern_env.sh"
export PYTHONUNBUFFERED=1 PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
echo "PYTHONPATH=$PYTHONPATH"
echo "POLYKERN_CUDA_COMPILER=${POLYKERN_CUDA_COMPILER:-<auto: NVRTC, else nvcc>}"

if [ "$SETUP_OK" = 1 ]; then
    run_step backends "$OUT/backends.txt" 90 "$PY" -m polykern backends
    cat "$OUT/backends.txt"
    if ! grep -Eq '^cuda +cuda +ok +yes' "$OUT/backends.txt"; then
        record cuda-runtime FAIL 0 "polykern backends does not list the cuda runtime as available (backends.txt)"
        say "the CUDA runtime is NOT available here; see backends.txt"
    fi
    PYTEST=("$PY" -m pytest -p no:cacheprovider -q -rfEs --tb=short --durations=5)
    mkdir -p "$WORK/junit"
    run_step conformance "$OUT/pytest_conformance.log" 240 "${PYTEST[@]}" tests/test_conformance.py \
        -k "cuda or nvptx" --junitxml="$WORK/junit/conformance.xml"
    run_step cross_compile "$OUT/pytest_cross_compile.log" 120 "${PYTEST[@]}" tests/test_cross_compile.py \
        -k "cuda or nvptx" --junitxml="$WORK/junit/cross_compile.xml"
    run_step cuda_backend "$OUT/pytest_cuda_backend.log" 240 "${PYTEST[@]}" backends/cuda/tests \
        --junitxml="$WORK/junit/cuda_backend.xml"
    run_step native "$OUT/pytest_native.log" 180 "${PYTEST[@]}" tests/test_native.py \
        --junitxml="$WORK/junit/native.xml"
    tar czf "$OUT/junit.tar.gz" -C "$WORK" junit 2>/dev/null || true
fi

{
    echo "polykern GPU suite, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(( $(date +%s) - START ))s"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
    grep -E '^cuda ' "$OUT/backends.txt" 2>/dev/null || true
    printf '%s\n' "${RESULTS[@]}"
    if [ $FAILED -eq 0 ]; then echo "RESULT: ALL PASSED"; else echo "RESULT: FAILURES (logs named above, in \$OUT)"; fi
} > "$OUT/summary.txt"
echo
cat "$OUT/summary.txt"
rm -rf "$WORK"
exit $FAILED
