#!/usr/bin/env bash
# Hopper's matrix path in one device call, run ON the GPU machine from the repository root with
# .whl/ carried:
#
#     OUT=<dir> bash tools/gpu/run_gpu_hopper.sh [benchmarks/gpu_hopper.py arguments]
#
#   1. tools/gpu/gpu_setup.sh: pycuda for polykern's CUDA runtime -> $SITE (GPU_HOPPER_SKIP_SETUP=1 skips it)
#   2. backends/cuda/tests/test_hopper_runtime.py (examples/gemm_hopper.py and attention_hopper.py on the device against
#      float64 and the IR interpreter, the launch checks) -> $OUT/hopper_tests.log (GPU_HOPPER_SKIP_TESTS=1 skips it)
#   3. benchmarks/gpu_hopper.py --out $OUT (f16/bf16 GEMM vs cuBLAS and Triton's tutorial, interleaved rounds,
#      cold compile) -> $OUT/gpu_hopper.json, $OUT/gpu_hopper.log (GPU_HOPPER_SKIP_GEMM=1 skips it)
#   4. benchmarks/gpu_attention_hopper.py --out $OUT $GPU_ATTENTION_ARGS (attention vs torch SDPA and Triton)
#      -> $OUT/gpu_attention_hopper.json, .log (GPU_HOPPER_SKIP_ATTENTION=1 skips it)
#   GPU_HOPPER_PROFILE=1: then tools/gpu/profile_hopper.sh (Nsight Compute, GEMM vs cuBLAS) -> $OUT/ncu_hopper_gemm.txt
#   GPU_EXTRA_CMD="<shell>": then any command in that environment -> $OUT/extra_cmd.log (GPU_EXTRA_CMD_S, 200 s)
set -uo pipefail
REPO=$(pwd)
[ -f "$REPO/benchmarks/gpu_hopper.py" ] || { echo "run this from the polykern repository root" >&2; exit 2; }
OUT=${OUT:-$REPO/gpu-out}
mkdir -p "$OUT"
export SITE=${SITE:-/tmp/site} PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
WORK=$(mktemp -d /tmp/polykern-hopper.XXXXXX)
export WORK
if [ "${GPU_HOPPER_SKIP_SETUP:-0}" != 1 ]; then
    timeout --kill-after=5 300 bash "$REPO/tools/gpu/gpu_setup.sh" > "$OUT/setup.log" 2>&1
    echo "setup exit $?"
    [ -f "$WORK/env.sh" ] && cp "$WORK/env.sh" "$SITE/polykern_env.sh"
fi
BACKEND_DIRS=$(for d in "$REPO"/backends/*/; do printf ':%s' "${d%/}"; done)
export PYTHONPATH="$SITE:$REPO/python$BACKEND_DIRS${PYTHONPATH:+:$PYTHONPATH}"
# The backends are not pip-installed there: name them for discovery (docs/backends.md "Discovery").
POLYKERN_BACKEND_PATH=$(for d in "$REPO"/backends/*/polykern_*/; do d=${d%/}; printf '%s:' "${d##*/}"; done)
export POLYKERN_BACKEND_PATH=${POLYKERN_BACKEND_PATH%:} PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
# shellcheck disable=SC1091
[ -f "$SITE/polykern_env.sh" ] && . "$SITE/polykern_env.sh"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if [ "${GPU_HOPPER_SKIP_TESTS:-0}" != 1 ]; then
    echo "== Hopper runtime tests"
    timeout --kill-after=5 240 "$PY" -m pytest -q -p no:cacheprovider -rs backends/cuda/tests/test_hopper_runtime.py \
        > "$OUT/hopper_tests.log" 2>&1
    echo "hopper tests exit $?"; tail -n 15 "$OUT/hopper_tests.log"
fi
if [ "${GPU_HOPPER_SKIP_GEMM:-0}" != 1 ]; then
    echo "== benchmarks/gpu_hopper.py"
    timeout --kill-after=5 "${GPU_HOPPER_BENCH_S:-300}" "$PY" benchmarks/gpu_hopper.py --out "$OUT" "$@" 2>&1 | tee "$OUT/gpu_hopper.log"
fi
if [ "${GPU_HOPPER_SKIP_ATTENTION:-0}" != 1 ]; then
    echo "== benchmarks/gpu_attention_hopper.py"
    # shellcheck disable=SC2086
    timeout --kill-after=5 "${GPU_ATTENTION_BENCH_S:-300}" "$PY" benchmarks/gpu_attention_hopper.py --out "$OUT" \
        ${GPU_ATTENTION_ARGS:-} 2>&1 | tee "$OUT/gpu_attention_hopper.log"
fi
if [ "${GPU_HOPPER_PROFILE:-0}" = 1 ]; then
    echo "== tools/gpu/profile_hopper.sh (Nsight Compute: polykern's persistent GEMM and cuBLAS)"
    bash tools/gpu/profile_hopper.sh
fi
if [ -n "${GPU_EXTRA_CMD:-}" ]; then
    echo "== extra command"
    timeout --kill-after=5 "${GPU_EXTRA_CMD_S:-200}" bash -c "$GPU_EXTRA_CMD" > "$OUT/extra_cmd.log" 2>&1
    echo "extra command exit $?"; tail -n 40 "$OUT/extra_cmd.log"
fi
