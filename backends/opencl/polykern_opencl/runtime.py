"""OpenCL runtime plugin — placeholder until polykern's OpenCL runtime lands (a later issue).

Importing this module is how ``polykern.backends`` probes the OpenCL runtime: it raises ImportError
when pyopencl is missing, and BackendUnavailableError otherwise, because ``module.create.opencl`` /
``module.load_from_bytes.opencl`` do not exist yet. (The payload is OpenCL C: the loader builds it
with ``pyopencl.Program(ctx, source).build()`` — the codegen tests already do so on PoCL.)
"""
from __future__ import annotations

from polykern.errors import BackendUnavailableError

import pyopencl  # noqa: F401,E402  (ImportError: the reason polykern backends shows)

raise BackendUnavailableError("pyopencl imports, but polykern's OpenCL runtime (module.create.opencl, "
                              "module.load_from_bytes.opencl) is not implemented yet")
