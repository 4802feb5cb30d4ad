"""Placeholder for the Vulkan runtime (a later issue); importing it fails with the reason, so
``polykern backends`` reports the Vulkan runtime as unavailable and builds produce the fallback.

The launch ABI the real runtime implements is fixed by the codegen and recorded per kernel in
``FunctionInfo.attrs`` (see README.md and ``polykern_vulkan.lower``):

- ``entry``: entry point name (GLCompute); ``spirv``: SPIR-V version of the shader;
- ``descriptor_set`` ("0") and ``bindings`` ("x=0,y=1": buffer argument -> binding, storage buffers);
- ``push_constants`` ("n@0:i32,a@4:f32": scalar argument @ byte offset : slot type) and
  ``push_constant_size``; i8/i16 travel as i32, u8/u16/bool as u32, f16 as f32;
- ``spec_ids`` ("local_size_x=0,local_size_y=1,local_size_z=2"): u32 specialization constants
  giving the block shape; grid = vkCmdDispatch(gx, gy, gz);
- ``features``: the optional device features the shader needs (int8, int16, int64, float16,
  float64, int64_atomics); the runtime must enable them or refuse the module clearly.

``tests/vk_dispatch.py`` is a working reference: it runs our shaders on lavapipe with the
``vulkan`` binding following exactly this ABI.
"""
from __future__ import annotations

try:
    import vulkan  # noqa: F401  (the binding the runtime will use)
except Exception as e:  # recorded by polykern.backends as the runtime's reason
    raise ImportError(f"vulkan could not be imported: {e}", name="vulkan") from e

from polykern.errors import BackendUnavailableError

raise BackendUnavailableError(
    "the polykern Vulkan runtime is not implemented yet (compile-only: artifacts carry SPIR-V and the "
    "launch ABI; the runtime lands in a later issue)")
