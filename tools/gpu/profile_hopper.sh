#!/usr/bin/env bash
# Nsight Compute on the Hopper GEMM (examples/gemm_hopper.py, persistent, f16 4096^3) and on cuBLAS's kernel for
# the same product, ON the GPU machine, in the environment tools/gpu/run_gpu_hopper.sh sets up (run it with
# GPU_HOPPER_PROFILE=1, or source that environment first), from the repository root:
#
#     OUT=<dir> bash tools/gpu/profile_hopper.sh
#
# One launch each (benchmarks/gpu_hopper.py, one round, no Triton), the sections that say what bounds them: speed
# of light, compute workload (tensor pipe, issue slots), occupancy, scheduler statistics, warp stall reasons
# -> $OUT/ncu_hopper_gemm.txt (summary lines printed).
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
PY=${PYTHON:-python3}
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /usr/local/cuda-*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
[ -n "$NCU" ] || { echo "no ncu here"; exit 3; }
LOG="$OUT/ncu_hopper_gemm.txt"
# the polykern kernel's launches and cuBLAS's (its sm90 kernel names contain gemm / xmma / cutlass)
timeout --kill-after=5 "${PROFILE_S:-200}" "$NCU" --kernel-name "regex:gemm_hopper_persistent|sm90_xmma|cutlass|nvjet" \
    --launch-skip 4 --launch-count 2 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section Occupancy --section SchedulerStats \
    --section WarpStateStats \
    "$PY" benchmarks/gpu_hopper.py --sizes 4096,4096,4096 --dtypes f16 --kernels persistent --rounds 1 --no-triton \
    > "$LOG" 2>&1
RC=$?
grep -E "^  [a-zA-Z_].*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per Thread|Achieved Occupancy|Issue Slots Busy|Eligible Warps|No Eligible|Warp Cycles Per Issued|Executed Ipc A|Stall" "$LOG" | head -n 60
echo "ncu exit $RC -> $LOG"
exit $RC
