"""CUDA runtime plugin — placeholder until polykern's CUDA runtime lands (a later issue).

Importing this module is how ``polykern.backends`` probes the CUDA runtime. It raises ImportError
with the reason (pycuda missing, or no ``libcuda.so.1``), which ``polykern backends`` shows; when
pycuda does import it still raises, because no ``module.create.cuda`` / ``module.load_from_bytes.cuda``
exist yet. The receiver-side compile the real loader needs (fmt "cuda" -> PTX) is ready:
``polykern_cuda.toolchain.finish_on_receiver``.
"""
from __future__ import annotations

from polykern.errors import BackendUnavailableError

try:
    import pycuda.driver  # noqa: F401
except ImportError:
    raise
except Exception as e:  # e.g. OSError: libcuda.so.1 missing (no NVIDIA driver)
    raise ImportError(f"pycuda could not be imported: {type(e).__name__}: {e}", name="pycuda") from e

raise BackendUnavailableError("pycuda imports, but polykern's CUDA runtime (module.create.cuda, "
                              "module.load_from_bytes.cuda) is not implemented yet")
