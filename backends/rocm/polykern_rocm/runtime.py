"""ROCm runtime plugin — placeholder until polykern's HIP runtime lands (a later issue).

Importing this module is how ``polykern.backends`` probes the ROCm runtime. The runtime will use
the HIP module API through AMD's ``hip-python`` bindings: ``hipModuleLoadData`` on the hsaco
payload, ``hipModuleGetFunction`` with each FunctionInfo's ``entry``, ``hipModuleLaunchKernel``
with the arguments packed in parameter order (buffers as device pointers; grid in workgroups,
block in work-items, so the dispatch packet's grid size is grid * block as the kernels expect).
"""
from __future__ import annotations

from polykern.errors import BackendUnavailableError

try:
    from hip import hip  # noqa: F401  (AMD's hip-python bindings)
except ImportError as e:
    raise BackendUnavailableError(f"the HIP runtime is not available: hip-python could not be imported ({e}); "
                                  "it needs ROCm on a host with an AMD GPU") from None

raise BackendUnavailableError("hip-python imports, but polykern's ROCm runtime (module.create.rocm, "
                              "module.load_from_bytes.rocm) is not implemented yet")
