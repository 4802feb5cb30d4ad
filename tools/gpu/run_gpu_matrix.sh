#!/usr/bin/env bash
# Matrix fragments in one device call, run ON the GPU machine from the repository root with
# .whl/ and .gl/ carried:
#
#     OUT=<dir> bash tools/gpu/run_gpu_matrix.sh
#
#   1. tools/gpu/gpu_setup.sh: pycuda for polykern's CUDA runtime -> $SITE (GPU_MATRIX_SKIP_SETUP=1 skips it
#      where it already ran in this machine's life)
#   2. tools/gpu/other_env.sh: Vulkan through NVIDIA's driver (VK_KHR_cooperative_matrix)
#   3. the fragment tests on every runtime found (cuda, nvptx, NVIDIA Vulkan; llvm): tests/test_matrix.py,
#      backends/cuda/tests/test_mma_sync.py, backends/vulkan/tests/test_vulkan_matrix.py -> $OUT/matrix_tests.log
#      (GPU_MATRIX_SKIP_TESTS=1 skips them); GPU_MATRIX_CONFORMANCE_K=EXPR: tests/test_conformance.py -k EXPR
#      -> $OUT/conformance_tests.log
#   4. benchmarks/gpu_matrix.py --out $OUT (f16 GEMM 4096^3: cuda/nvptx/vulkan, each as the baseline and
#      the pk.copy_async ring ("-async"), vs cuBLAS, Triton) -> $OUT/gpu_matrix.json, $OUT/gpu_matrix.log
#   5. where 30 s are left: tests/test_async_copy.py's shared-ring test on cuda and nvptx (cp.async on the
#      device, every copy size) -> $OUT/async_copy_tests.log (the script's arguments go to it)
#   6. benchmarks/gpu_attention.py --out $OUT (attention forward, (4 x 16, 4096, 64 | 128) f16: cuda/nvptx/
#      vulkan vs torch SDPA, Triton) -> $OUT/gpu_attention.json, $OUT/gpu_attention.log; GPU_ATTENTION_ARGS
#      (e.g. "--dims 128 --rounds 3") go to it
#   GPU_EXTRA_TESTS="<pytest args>": any other tests in the same environment -> $OUT/extra_tests.log
#      (within GPU_EXTRA_TESTS_S seconds, default 150); GPU_EXTRA_CMD="<shell>": then any command in that
#      environment -> $OUT/extra_cmd.log (within GPU_EXTRA_CMD_S seconds, default 200)
# Within GPU_MATRIX_BUDGET seconds (default 460): the tests get at most 150 s, the GEMM benchmark and then
# the copy tests what is left less GPU_ATTENTION_S (default 120, kept for the attention benchmark), the
# attention benchmark the rest.
set -uo pipefail
REPO=$(pwd)
[ -f "$REPO/benchmarks/gpu_matrix.py" ] || { echo "run this from the polykern repository root" >&2; exit 2; }
OUT=${OUT:-$REPO/gpu-out}
mkdir -p "$OUT"
START=$(date +%s)
BUDGET=${GPU_MATRIX_BUDGET:-460}
export SITE=${SITE:-/tmp/site} PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
WORK=$(mktemp -d /tmp/polykern-matrix.XXXXXX)
export WORK
if [ "${GPU_MATRIX_SKIP_SETUP:-0}" != 1 ]; then
    timeout --kill-after=5 300 bash "$REPO/tools/gpu/gpu_setup.sh" > "$OUT/setup.log" 2>&1
    echo "setup exit $?"
    [ -f "$WORK/env.sh" ] && cp "$WORK/env.sh" "$SITE/polykern_env.sh"
fi
# shellcheck disable=SC1091
OUT="$OUT" . "$REPO/tools/gpu/other_env.sh" > "$OUT/other_env.log" 2>&1 || echo "other_env.sh failed: no Vulkan"
export PYTHONPATH="$SITE:$PYTHONPATH"
# shellcheck disable=SC1091
[ -f "$SITE/polykern_env.sh" ] && . "$SITE/polykern_env.sh"
if [ "${GPU_MATRIX_SKIP_TESTS:-0}" != 1 ]; then
    echo "== fragment tests"
    timeout --kill-after=5 150 "$PY" -m pytest -q -p no:cacheprovider -rs tests/test_matrix.py \
        backends/cuda/tests/test_mma_sync.py backends/vulkan/tests/test_vulkan_matrix.py > "$OUT/matrix_tests.log" 2>&1
    echo "pytest exit $?"; tail -n 25 "$OUT/matrix_tests.log"
fi
if [ -n "${GPU_MATRIX_CONFORMANCE_K:-}" ]; then  # e.g. "bf16 or matrix": those conformance cases on every runtime
    echo "== conformance -k '$GPU_MATRIX_CONFORMANCE_K'"
    timeout --kill-after=5 90 "$PY" -m pytest -q -p no:cacheprovider -rs tests/test_conformance.py \
        -k "$GPU_MATRIX_CONFORMANCE_K" > "$OUT/conformance_tests.log" 2>&1
    echo "pytest exit $?"; tail -n 12 "$OUT/conformance_tests.log"
fi
if [ -n "${GPU_EXTRA_TESTS:-}" ]; then  # e.g. "tests/test_int_to_f16.py tests/test_native.py -k cuda": any pytest args
    echo "== extra tests: $GPU_EXTRA_TESTS"
    # shellcheck disable=SC2086
    timeout --kill-after=5 "${GPU_EXTRA_TESTS_S:-150}" "$PY" -m pytest -q -p no:cacheprovider -rfEs --tb=short \
        $GPU_EXTRA_TESTS > "$OUT/extra_tests.log" 2>&1
    echo "pytest exit $?"; grep -E "^(FAILED|ERROR) " "$OUT/extra_tests.log" | head -n 20; tail -n 1 "$OUT/extra_tests.log"
fi
if [ -n "${GPU_EXTRA_CMD:-}" ]; then  # e.g. "python3 tools/gpu/mma_isa_probe.py; bash tools/gpu/profile_gemm.sh"
    echo "== extra command: $GPU_EXTRA_CMD"
    timeout --kill-after=5 "${GPU_EXTRA_CMD_S:-200}" bash -c "$GPU_EXTRA_CMD" > "$OUT/extra_cmd.log" 2>&1
    echo "exit $?"; tail -n 30 "$OUT/extra_cmd.log"
fi
ATT_S=${GPU_ATTENTION_S:-120}
LEFT=$(( START + BUDGET - ATT_S - $(date +%s) ))
RC=3
if [ "$LEFT" -gt 60 ]; then
    echo "== benchmarks/gpu_matrix.py (${LEFT}s left)"
    timeout --kill-after=5 "$LEFT" "$PY" "$REPO/benchmarks/gpu_matrix.py" --out "$OUT" "$@" > "$OUT/gpu_matrix.log" 2>&1
    RC=$?
    tail -n 20 "$OUT/gpu_matrix.log"
else
    echo "only ${LEFT}s left before the attention benchmark's ${ATT_S}s: no GEMM benchmark"
fi
LEFT=$(( START + BUDGET - ATT_S - $(date +%s) ))  # the attention benchmark's share kept
if [ "$LEFT" -gt 30 ]; then  # cp.async on the device: the shared-ring test of every copy size, cuda and nvptx
    echo "== asynchronous copies (${LEFT}s left)"
    timeout --kill-after=5 $(( LEFT - 5 )) "$PY" -m pytest -q -p no:cacheprovider -rs tests/test_async_copy.py \
        -k "ring and (cuda or nvptx)" > "$OUT/async_copy_tests.log" 2>&1
    echo "pytest exit $?"; tail -n 8 "$OUT/async_copy_tests.log"
fi
LEFT=$(( START + BUDGET - $(date +%s) ))
RC2=3
if [ "$LEFT" -gt 30 ]; then
    echo "== benchmarks/gpu_attention.py (${LEFT}s left)"
    # shellcheck disable=SC2086
    timeout --kill-after=5 "$LEFT" "$PY" "$REPO/benchmarks/gpu_attention.py" --out "$OUT" ${GPU_ATTENTION_ARGS:-} \
        > "$OUT/gpu_attention.log" 2>&1
    RC2=$?
    tail -n 16 "$OUT/gpu_attention.log"
else
    echo "only ${LEFT}s left: no attention benchmark"
fi
rm -rf "$WORK"
echo "== done in $(( $(date +%s) - START ))s; gpu_matrix.py exit $RC, gpu_attention.py exit $RC2"
[ "$RC" -eq 0 ] && [ "$RC2" -eq 0 ]
