#!/usr/bin/env bash
# ON the GPU machine, from the repo root, .whl/ and .gl/ carried (tools/gpu/fetch_carry.sh): the whole
# correctness run of one GPU kind in one device call (docs/correctness.md, docs/gpu.md):
#   1. tools/gpu/run_gpu_suite.sh: pycuda setup; CUDA/NVPTX conformance (plain and bounds-checked),
#      cross-compile, backends/cuda, native;
#   2. OpenCL, Vulkan and WebGPU through NVIDIA's drivers: conformance and cross-compile; then the numeric
#      promises, negation and float-controls tests and the saved fuzz cases on every runtime there;
#   3. tools/fuzz.py on cuda, nvptx, opencl, vulkan and webgpu, one process each, in parallel,
#      FUZZ_COUNT programs each (default 1000) within FUZZ_BUDGET seconds (default 240).
# Results in $OUT (default ./gpu-out), 3 files (the device tool brings back at most 8): summary.txt,
# logs.tar.gz (every log: the CUDA suite's, OpenCL/Vulkan/WebGPU, one per fuzz target) and
# fuzz_cases.tar.gz (reduced disagreements, if any). Exit status 0 only when every step passed.
set -uo pipefail
REPO=$(pwd)
[ -f "$REPO/python/polykern/__init__.py" ] || { echo "run this from the polykern repository root" >&2; exit 2; }
FINAL=${OUT:-$REPO/gpu-out}; mkdir -p "$FINAL"
OUT=$(mktemp -d /tmp/polykern-correctness.XXXXXX)
export SITE=${SITE:-/tmp/site} PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
FUZZ_COUNT=${FUZZ_COUNT:-1000}
FUZZ_BUDGET=${FUZZ_BUDGET:-240}
FUZZ_SEED=${FUZZ_SEED:-1}
# The generator's matrix section makes blocks of 8 or 16 work-items (the CPU's subgroup): GPU subgroups are 32.
FUZZ_AVOID=${FUZZ_AVOID:-matrix}
RC=0

echo "== 1. CUDA suite"
OUT="$OUT/suite" GPU_SUITE_BUDGET=${GPU_SUITE_BUDGET:-300} bash tools/gpu/run_gpu_suite.sh > "$OUT/suite_stdout.log" 2>&1 || RC=1
cp "$OUT/suite/summary.txt" "$OUT/summary_cuda.txt" 2>/dev/null
tail -n 15 "$OUT/suite_stdout.log"
grep -hE "^(FAILED|ERROR) " "$OUT"/suite/pytest_*.log 2>/dev/null | head -n 20

BACKEND_DIRS=$(for d in "$REPO"/backends/*/; do printf ':%s' "${d%/}"; done)
export PYTHONPATH="$SITE:$REPO/python$BACKEND_DIRS"
# The backends are not pip-installed here: name them for discovery (docs/backends.md "Discovery").
POLYKERN_BACKEND_PATH=$(for d in "$REPO"/backends/*/polykern_*/; do d=${d%/}; printf '%s:' "${d##*/}"; done)
export POLYKERN_BACKEND_PATH=${POLYKERN_BACKEND_PATH%:}
# shellcheck disable=SC1091
[ -f "$SITE/polykern_env.sh" ] && . "$SITE/polykern_env.sh"

echo "== 2. OpenCL, Vulkan, WebGPU through NVIDIA"
# shellcheck disable=SC1091
. tools/gpu/other_env.sh > "$OUT/other_setup.log" 2>&1
"$PY" -m polykern backends > "$OUT/backends.txt" 2>&1; cat "$OUT/backends.txt"
timeout 300 "$PY" -m pytest -p no:cacheprovider -q -rfEs --tb=short tests/test_conformance.py \
    tests/test_cross_compile.py -k "opencl or vulkan or webgpu" > "$OUT/other.log" 2>&1 || RC=1
tail -n 12 "$OUT/other.log"
echo "== 2b. numeric promises, negation, Vulkan float controls, saved fuzz cases: every runtime here"
timeout 300 "$PY" -m pytest -p no:cacheprovider -q -rfEs --tb=short tests/test_numerics.py tests/test_negation_sign.py \
    backends/vulkan/tests/test_float_controls.py tests/fuzz_regressions tests/test_range_bounds.py \
    tests/test_signed_widening.py tests/test_float_zero_operands.py tests/test_interp.py > "$OUT/promises.log" 2>&1 || RC=1
tail -n 3 "$OUT/promises.log"
grep -hE "^(FAILED|ERROR) " "$OUT/promises.log" | head -n 30
grep -hE "^(FAILED|ERROR) " "$OUT/other.log" | head -n 20

echo "== 2c. language features (matrix fragments, subgroups, wide access, plugins) on every runtime here, and their GPU probes"
timeout 240 "$PY" -m pytest -p no:cacheprovider -q -rfEs --tb=short tests/test_subgroups.py tests/test_issue15_redteam.py \
    tests/test_wide_access.py tests/test_dynamic_shared.py tests/test_autotune.py tests/test_lang_func.py \
    tests/test_specialize.py tests/test_hooks.py tests/test_kbin_v2.py tests/test_bf16.py tests/test_async_copy.py \
    backends/vulkan/tests/test_vulkan_bf16.py > "$OUT/features.log" 2>&1 || RC=1
timeout 120 "$PY" -m pytest -p no:cacheprovider -q -rfEs --tb=short tests/test_conformance.py -k subgroup \
    >> "$OUT/features.log" 2>&1 || RC=1
tail -n 3 "$OUT/features.log"
grep -hE "^(FAILED|ERROR) " "$OUT/features.log" | head -n 30
ARCH=sm_${GPU_ARCH:-90}
timeout 120 "$PY" tools/gpu/subgroups_probe.py "cuda -arch=$ARCH" "nvptx -arch=$ARCH" vulkan webgpu "opencl -subgroups" \
    > "$OUT/probe_subgroups.log" 2>&1 || RC=1
timeout 120 "$PY" tools/gpu/wide_probe.py --arch "$ARCH" > "$OUT/probe_wide.log" 2>&1 || RC=1
tail -n 12 "$OUT/probe_subgroups.log" "$OUT/probe_wide.log"

echo "== 3. fuzz: $FUZZ_COUNT programs per target, ${FUZZ_BUDGET}s"
mkdir -p "$OUT/fuzz_cases"
pids=()
for t in "cuda" "nvptx" "opencl" "vulkan" "webgpu"; do
    timeout --kill-after=10 $(( FUZZ_BUDGET + 60 )) "$PY" tools/fuzz.py --seed "$FUZZ_SEED" --count "$FUZZ_COUNT" \
        --targets "$t" --time-budget "$FUZZ_BUDGET" ${FUZZ_AVOID:+--avoid "$FUZZ_AVOID"} \
        --save-dir "$OUT/fuzz_cases/$t" > "$OUT/fuzz_$t.log" 2>&1 &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || RC=1; done
for t in cuda nvptx opencl vulkan webgpu; do echo "$t: $(tail -n 1 "$OUT/fuzz_$t.log")"; done
grep -h "DISAGREE" "$OUT"/fuzz_*.log | cut -c1-200 | head -n 40
tar czf "$FINAL/fuzz_cases.tar.gz" -C "$OUT" fuzz_cases 2>/dev/null

{
    echo "polykern correctness run, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
    cat "$OUT/summary_cuda.txt" 2>/dev/null
    echo "other runtimes: $(grep -E '[0-9]+ (passed|failed)' "$OUT/other.log" | tail -n 1)"
    echo "promises/negation/float controls/fuzz cases: $(grep -E '[0-9]+ (passed|failed)' "$OUT/promises.log" | tail -n 1)"
    echo "language features: $(grep -E '[0-9]+ (passed|failed)' "$OUT/features.log" | tail -n 1)"
    for f in "$OUT"/probe_*.log; do echo "$(basename "$f" .log): $(tail -n 1 "$f")"; done
    for t in cuda nvptx opencl vulkan webgpu; do echo "fuzz $t: $(tail -n 1 "$OUT/fuzz_$t.log")"; done
    [ $RC -eq 0 ] && echo "RESULT: ALL PASSED" || echo "RESULT: FAILURES"
} > "$FINAL/summary.txt"
tar czf "$FINAL/logs.tar.gz" -C "$OUT" --exclude fuzz_cases . 2>/dev/null
cat "$FINAL/summary.txt"
exit $RC
