#!/usr/bin/env bash
# Nsight Compute on one polykern f16 GEMM variant, ON the GPU machine, in the environment
# tools/gpu/run_gpu_matrix.sh set up (pycuda in $SITE, PYTHONPATH), from the repository root:
#
#     OUT=<dir> bash tools/gpu/profile_gemm.sh [target] [variant]     # default: nvptx dyn3bk64
#
# One launch of the kernel at 4096^3 (benchmarks/gpu_matrix.py --no-peers, one round), the sections that
# say what bounds it: speed of light, compute workload (issue slots), launch statistics and occupancy,
# scheduler statistics (eligible warps), warp state statistics (stall reasons) -> $OUT/ncu_<target>_<variant>.txt.
# Needs ncu (CUDA toolkit's bin, or /usr/local/cuda/bin) and GPU performance counters this user may read.
set -uo pipefail
TARGET=${1:-nvptx}
VARIANT=${2:-dyn3bk64}
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
PY=${PYTHON:-python3}
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /usr/local/cuda-*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
[ -n "$NCU" ] || { echo "no ncu here"; exit 3; }
LOG="$OUT/ncu_${TARGET}_${VARIANT}.txt"
timeout --kill-after=5 "${PROFILE_S:-150}" "$NCU" --kernel-name regex:gemm_f16 --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section LaunchStats --section Occupancy \
    --section SchedulerStats --section WarpStateStats \
    "$PY" benchmarks/gpu_matrix.py --no-peers --only "$TARGET" --variants "$VARIANT" --rounds 1 --out "$(mktemp -d)" \
    > "$LOG" 2>&1
RC=$?
grep -E "Duration|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Block Limit|Issue Slots Busy|Eligible Warps|Active Warps Per|No Eligible|Warp Cycles Per Issued|Dynamic Shared|Executed Ipc A" "$LOG" | head -n 30
echo "ncu exit $RC -> $LOG"
exit $RC
