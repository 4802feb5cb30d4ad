#!/usr/bin/env bash
# The peers benchmark (benchmarks/gpu_peers.py) in one device call (run ON the GPU machine, from the repository root, with .whl/ and
# .gl/ carried):
#
#     OUT=<dir> bash tools/gpu/run_gpu_peers.sh [extra gpu_peers.py arguments]
#
#   1. tools/gpu/gpu_setup.sh: pycuda built against the local CUDA toolkit -> $SITE (skipped with
#      GPU_PEERS_SKIP_SETUP=1 where it already ran)
#   2. tools/gpu/other_env.sh: Vulkan (and OpenCL) through NVIDIA's drivers
#   3. benchmarks/gpu_peers.py --out $OUT (polykern cuda/nvptx/vulkan against CuPy/CUB, Triton, torch, cuBLAS)
# Everything stays within GPU_PEERS_BUDGET seconds (default 460, for an 8-minute call): the benchmark gets
# what setup left, minus 20 s, as its --budget-s (it starts no new problem after that and still writes
# its results). $OUT receives 6 files: setup.log other_env.txt gpu_peers.log gpu_peers.json gpu_peers.txt
# gpu_peers.png. Exit status: the benchmark's (0: every polykern kernel built and checked correct).
set -uo pipefail
REPO=$(pwd)
[ -f "$REPO/benchmarks/gpu_peers.py" ] || { echo "run this from the polykern repository root" >&2; exit 2; }
OUT=${OUT:-$REPO/gpu-out}
mkdir -p "$OUT"
START=$(date +%s)
BUDGET=${GPU_PEERS_BUDGET:-460}
export SITE=${SITE:-/tmp/site} PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
WORK=$(mktemp -d /tmp/polykern-peers.XXXXXX)
export WORK

if [ "${GPU_PEERS_SKIP_SETUP:-0}" = 1 ]; then
    echo "setup skipped (GPU_PEERS_SKIP_SETUP=1)" > "$OUT/setup.log"
else
    timeout --kill-after=5 330 bash "$REPO/tools/gpu/gpu_setup.sh" > "$OUT/setup.log" 2>&1
    echo "setup exit $?"; grep -E '^(pycuda|# |FAIL)' "$OUT/setup.log" || true
fi
[ -f "$WORK/env.sh" ] && cp "$WORK/env.sh" "$SITE/polykern_env.sh"

# Vulkan/OpenCL through NVIDIA's drivers (sets PYTHONPATH with the carried bindings and POLYKERN_BACKEND_PATH).
# shellcheck disable=SC1091
OUT="$OUT" . "$REPO/tools/gpu/other_env.sh" > "$WORK/other_env.log" 2>&1 || echo "other_env.sh failed: no Vulkan"
cat "$WORK/other_env.log" >> "$OUT/other_env.txt"
BACKEND_DIRS=$(for d in "$REPO"/backends/*/; do printf ':%s' "${d%/}"; done)
export PYTHONPATH="$SITE:${SITE_OTHER:-/tmp/site-other}:$REPO/python$BACKEND_DIRS${PYTHONPATH:+:$PYTHONPATH}"
POLYKERN_BACKEND_PATH=$(for d in "$REPO"/backends/*/polykern_*/; do d=${d%/}; printf '%s:' "${d##*/}"; done)
export POLYKERN_BACKEND_PATH=${POLYKERN_BACKEND_PATH%:}
# shellcheck disable=SC1091
[ -f "$SITE/polykern_env.sh" ] && . "$SITE/polykern_env.sh"

LEFT=$(( START + BUDGET - $(date +%s) ))
[ "$LEFT" -gt 90 ] || { echo "only ${LEFT}s left after setup: no benchmark" | tee "$OUT/gpu_peers.log"; exit 3; }
echo "== benchmarks/gpu_peers.py (${LEFT}s left)"
timeout --kill-after=5 "$LEFT" "$PY" "$REPO/benchmarks/gpu_peers.py" --out "$OUT" --budget-s $(( LEFT - 60 )) "$@" \
    > "$OUT/gpu_peers.log" 2>&1
RC=$?
tail -n 45 "$OUT/gpu_peers.log"
rm -rf "$WORK"
echo "== done in $(( $(date +%s) - START ))s; gpu_peers.py exit $RC"
exit $RC
