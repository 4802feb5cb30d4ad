#!/usr/bin/env bash
# On the GPU machine, from the repo root: run the OpenCL, Vulkan and WebGPU parts of the conformance suite
# through NVIDIA's own drivers. Needs carried: .whl/ (pyopencl, vulkan, cffi, pycparser, pytest...)
# and .gl/ (Debian's libvulkan1: the image has NVIDIA's ICD json but no Vulkan loader). Writes logs
# to $OUT (default ./gpu-out).
set -uo pipefail
PY=${PYTHON:-python3}

# shellcheck disable=SC1091
. tools/gpu/other_env.sh

"$PY" -m polykern backends 2>&1 | tee "$OUT/other_backends.txt"
timeout 240 "$PY" -m pytest -p no:cacheprovider -q -rfEs --tb=short tests/test_conformance.py \
    tests/test_cross_compile.py -k "opencl or vulkan or webgpu" 2>&1 | tee "$OUT/other_conformance.log" | tail -n 25
