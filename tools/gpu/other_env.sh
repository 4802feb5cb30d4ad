# Sourced ON the GPU machine, from the repo root: makes OpenCL, Vulkan and WebGPU reach NVIDIA's drivers.
# Needs carried: .whl/ (pyopencl, vulkan, wgpu, cffi, pycparser, pytools...) and .gl/ (Debian's libvulkan1
# and the GLVND loaders NVIDIA's Vulkan driver needs). Sets SITE_OTHER, PYTHONPATH, VK_DRIVER_FILES,
# __EGL_VENDOR_LIBRARY_FILENAMES, POLYKERN_OPENCL_DEVICE; writes $OUT/other_env.txt.
OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
SITE_OTHER=${SITE_OTHER:-/tmp/site-other}
PY=${PYTHON:-python3}
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig

# Vulkan: point the loader at NVIDIA's ICD if it does not find one by itself.
icd=$(ls /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
      /etc/vulkan/icd.d/nvidia_icd.json 2>/dev/null | head -n 1)
[ -n "$icd" ] && export VK_DRIVER_FILES="$icd"
# NVIDIA's Vulkan driver needs the GLVND EGL vendor file to load (the .gl/ packages supply the loaders).
egl=$(ls /usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json /usr/share/glvnd/egl_vendor.d/10_nvidia.json \
      2>/dev/null | head -n 1)
[ -n "$egl" ] && export __EGL_VENDOR_LIBRARY_FILENAMES="$egl"
# OpenCL: register NVIDIA's OpenCL library (it ships in the driver folder) with the ICD loader.
lib=$(ls /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/local/nvidia/lib/libnvidia-opencl.so.1 \
      /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 2>/dev/null | head -n 1)
if [ -n "$lib" ]; then mkdir -p /etc/OpenCL/vendors; echo "$lib" > /etc/OpenCL/vendors/nvidia.icd; fi
echo "vulkan icd: ${icd:-none}; opencl lib: ${lib:-none}" | tee "$OUT/other_env.txt"

"$PY" -m pip install -q --no-index --no-deps --no-compile --target "$SITE_OTHER" \
    .whl/pyopencl-*.whl .whl/vulkan-*.whl .whl/pytools-*.whl .whl/platformdirs-*.whl .whl/siphash24-*.whl \
    .whl/typing_extensions-*.whl .whl/cffi-*.whl .whl/pycparser-*.whl .whl/wgpu-*.whl .whl/rendercanvas-*.whl 2>&1 | tail -n 3
BACKEND_DIRS=$(for d in "$PWD"/backends/*/; do printf ':%s' "${d%/}"; done)
export PYTHONPATH="$SITE_OTHER:$PWD/python$BACKEND_DIRS${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 POLYKERN_OPENCL_DEVICE=${POLYKERN_OPENCL_DEVICE:-gpu}
# The backends are not pip-installed here: name them for discovery (docs/backends.md "Discovery").
POLYKERN_BACKEND_PATH=$(for d in "$PWD"/backends/*/polykern_*/; do d=${d%/}; printf '%s:' "${d##*/}"; done)
export POLYKERN_BACKEND_PATH=${POLYKERN_BACKEND_PATH%:}

