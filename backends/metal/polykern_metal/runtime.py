"""Metal runtime plugin — placeholder until polykern's Metal runtime lands (a later issue).

Importing this module is how ``polykern.backends`` probes the Metal runtime. Metal exists only on
Apple platforms; on macOS the runtime will use PyObjC's Metal bindings (``pyobjc-framework-Metal``):
``device.newLibraryWithSource_options_error_`` per shader, one compute pipeline per kernel,
arguments bound at ``[[buffer(i)]]`` in parameter order (scalars with ``setBytes``).
"""
from __future__ import annotations

import sys

from polykern.errors import BackendUnavailableError

if sys.platform != "darwin":
    raise BackendUnavailableError(f"Metal needs macOS; this host is {sys.platform}")

import Metal  # noqa: F401,E402  (pyobjc-framework-Metal; ImportError is the reason shown)

raise BackendUnavailableError("PyObjC Metal imports, but polykern's Metal runtime (module.create.metal, "
                              "module.load_from_bytes.metal) is not implemented yet")
