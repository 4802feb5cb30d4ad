#!/usr/bin/env bash
# Step 1 of tools/gpu/run_gpu_suite.sh (run ON the GPU machine, from the repository root):
#   carried wheels the machine lacks -> $SITE; pycuda built from its sdist against the local CUDA
#   toolkit -> $SITE; import smoke test; writes $WORK/env.sh (CUDA_ROOT, PATH, compiler choice).
# Environment: SITE (default /tmp/site), WORK (scratch dir, required), PY (default python3), JOBS.
set -euo pipefail
REPO=$(pwd)
SITE=${SITE:-/tmp/site}
WORK=${WORK:?WORK must name a scratch directory}
PY=${PY:-python3}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 8)}

echo "host: $(uname -srm), $(nproc) cores"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
echo "python: $($PY -c 'import sys; print(sys.executable, sys.version.split()[0])')"
[ -d "$REPO/.whl" ] || { echo "FAIL: no .whl/ here: run tools/gpu/fetch_carry.sh on a networked host, carry .whl"; exit 1; }
ls -la "$REPO/.whl"

# Python headers: pycuda is a C++ extension
INC=$($PY -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
[ -f "$INC/Python.h" ] || { echo "FAIL: Python.h is missing in $INC: this Python cannot build extensions"; exit 1; }

# CUDA toolkit: the first candidate with include/cuda.h
NVCC=$(command -v nvcc || true)
CUDA_ROOT_FOUND=""
for cand in "${CUDA_ROOT:-}" "${CUDA_HOME:-}" "${CUDA_PATH:-}" \
            "${NVCC:+$(dirname "$(dirname "$(readlink -f "$NVCC")")")}" /usr/local/cuda /usr/local/cuda-13.0; do
    if [ -n "$cand" ] && [ -f "$cand/include/cuda.h" ]; then CUDA_ROOT_FOUND=$cand; break; fi
done
[ -n "$CUDA_ROOT_FOUND" ] || { echo "FAIL: no CUDA toolkit with include/cuda.h found (set CUDA_ROOT)"; exit 1; }
export CUDA_ROOT=$CUDA_ROOT_FOUND
export PATH="$CUDA_ROOT/bin:$PATH"
echo "CUDA_ROOT=$CUDA_ROOT  nvcc=$(command -v nvcc || echo none)"
nvcc --version | tail -n 2 || true

# Carried wheels, only those whose distribution is not installed (the image's pytest, setuptools...
# stay in charge).
mkdir -p "$SITE"
WHEELS=$($PY - "$REPO/.whl" <<'EOF'
import importlib.metadata as md, os, re, sys
d = sys.argv[1]
for f in sorted(os.listdir(d)):
    if not f.endswith(".whl"):
        continue
    name = re.sub(r"[-_.]+", "-", f.split("-")[0]).lower()
    try:
        print(f"  have {name} {md.version(name)}: skip {f}", file=sys.stderr)
    except md.PackageNotFoundError:
        print(f"  install {f}", file=sys.stderr)
        print(os.path.join(d, f))
EOF
)
if [ -n "$WHEELS" ]; then
    # shellcheck disable=SC2086
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" $WHEELS
fi
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"

# pycuda: sdist -> wheel (C++ in parallel, curand off) -> $SITE
SDIST=$(ls "$REPO"/.whl/pycuda-*.tar.gz 2>/dev/null | head -n 1 || true)
[ -n "$SDIST" ] || { echo "FAIL: no pycuda-*.tar.gz in .whl/"; exit 1; }
mkdir -p "$WORK/src"
tar xzf "$SDIST" -C "$WORK/src"
SRC=$(ls -d "$WORK"/src/pycuda-*/ | head -n 1)
T0=$(date +%s)
$PY "$REPO/tools/gpu/build_pycuda.py" "$SRC" "$WORK/dist" --cuda-root "$CUDA_ROOT" --jobs "$JOBS"
echo "pycuda build: $(( $(date +%s) - T0 ))s with $JOBS jobs"
$PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$WORK"/dist/pycuda-*.whl
$PY -c 'import pycuda, pycuda.driver as d; d.init(); print("pycuda", pycuda.VERSION_TEXT, "| driver", d.get_driver_version(), "| devices", d.Device.count(), "|", d.Device(0).name(), d.Device(0).compute_capability())'

# NVRTC must not be newer than the driver (the driver rejects a newer PTX ISA): else use nvcc.
{
    echo "export CUDA_ROOT='$CUDA_ROOT'"
    echo "export PATH='$CUDA_ROOT/bin':\"\$PATH\""
    PYTHONPATH="$SITE:$REPO/python:$REPO/backends/cuda" $PY - <<'EOF'
import sys
import pycuda.driver as d
from polykern_cuda import toolchain
d.init()
v = d.get_driver_version()
drv = (v // 1000, v % 1000 // 10)
print(f"# driver supports CUDA {drv[0]}.{drv[1]}", file=sys.stderr)
try:
    nv = toolchain.nvrtc_version()
    print(f"# NVRTC {nv[0]}.{nv[1]} at {toolchain.nvrtc_library()[1]}", file=sys.stderr)
    if nv > drv:
        print("# NVRTC is newer than the driver: forcing nvcc", file=sys.stderr)
        print("export POLYKERN_CUDA_COMPILER=nvcc")
except Exception as e:
    print(f"# no NVRTC ({e}); nvcc: {toolchain.find_nvcc()}", file=sys.stderr)
EOF
} > "$WORK/env.sh"
cat "$WORK/env.sh"
echo "setup done"
