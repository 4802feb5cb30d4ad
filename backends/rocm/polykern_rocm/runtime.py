"""ROCm runtime plugin — placeholder until polykern's HIP runtime lands (a later issue).

Importing this module is how ``polykern.backends`` probes the ROCm runtime. The runtime will use
the HIP module API through AMD's ``hip-python`` bindings: ``hipModuleLoadData`` on the hsaco
payload, ``hipModuleGetFunction`` with each FunctionInfo's ``entry``, ``hipModuleLaunchKernel``
with the arguments packed in parameter order (buffers as device pointers; grid in workgroups,
block in work-items, so the dispatch packet's grid size is grid * block as the kernels expect).
"""
from __future__ import annotations

from polykern.errors import BackendUnavailableError

# Not written yet: say so first (installing hip-python or ROCm would not make rocm modules run).
raise BackendUnavailableError("polykern's ROCm runtime is not written yet (module.create.rocm and "
                              "module.load_from_bytes.rocm do not exist): rocm modules are compile-only")
