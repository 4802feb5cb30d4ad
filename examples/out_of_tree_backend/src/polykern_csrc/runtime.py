"""The csrc runtime: ``module.create.csrc`` and ``module.load_from_bytes.csrc``.

Importing this module is how ``polykern.backends`` probes the runtime: it needs a C compiler
(``$CC``, else ``cc`` or ``gcc`` on PATH). A module compiles its C source to a shared object on its
first launch (once, under a lock; a failed compile is raised as ``CompileError`` with the
compiler's log and is retried on the next launch) and calls the launchers through ctypes. Buffers are
host memory (NumPy arrays, used in place).
"""
from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import tempfile
import threading
import weakref
from typing import Mapping, Optional

from polykern import registry
from polykern.kbin import wire
from polykern.errors import ArtifactError, BackendUnavailableError, CompileError, LaunchError
from polykern.runtime.launch import BufferArg, check_args
from polykern.module import DeviceModule, FunctionInfo
from polykern.kbin.payload_formats import check_payload

from .fallback import CSourceFallbackModule

CFLAGS = ("-std=c99", "-O2", "-fPIC", "-shared", "-ffp-contract=off", "-fno-fast-math")


def compiler() -> str:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise BackendUnavailableError("no C compiler was found ($CC, cc or gcc on PATH)")
    return cc


_CC = compiler()  # the probe: no compiler, no runtime (the reason shows in `polykern backends`)


class CSourceKernel:
    """``kernel(*args, grid=..., block=...)``: checks the arguments, then runs every work-item."""

    def __init__(self, module: "CSourceModule", info: FunctionInfo, fn):
        self.module, self.info, self.fn = module, info, fn  # the module keeps the library loaded

    def __call__(self, *args, grid=None, block=None):
        grid3, block3, prepared = check_args(self.info, args, grid, block)
        slots = (ctypes.c_void_p * max(1, len(prepared)))()
        keep = []
        for i, a in enumerate(prepared):
            if isinstance(a, BufferArg):
                if not a.is_host:
                    raise LaunchError(f"kernel '{self.info.name}', argument '{a.name}': the csrc backend runs on "
                                      f"the host and needs host memory (got memory of device {a.device[0]})")
                slots[i] = a.ptr
            else:
                cell = ctypes.create_string_buffer(a.tobytes(), max(8, len(a.tobytes())))
                keep.append(cell)
                slots[i] = ctypes.addressof(cell)
        dims = (ctypes.c_int64 * 6)(*grid3, *block3)
        self.fn(slots, dims)


class CSourceModule(DeviceModule):
    is_runnable = True
    source_preference = ("c",)

    def __init__(self, payload, fmt, fmap, sources=None):
        super().__init__("csrc", payload, fmt, fmap, sources)
        self._lock = threading.Lock()
        self._lib = None

    def _library(self):
        with self._lock:
            if self._lib is None:
                tmp = tempfile.mkdtemp(prefix="polykern-csrc-")
                weakref.finalize(self, shutil.rmtree, tmp, True)
                src, so = os.path.join(tmp, "kernels.c"), os.path.join(tmp, "kernels.so")
                with open(src, "wb") as f:
                    f.write(self.payload)
                proc = subprocess.run([_CC, *CFLAGS, "-o", so, src, "-lm"], capture_output=True, text=True)
                if proc.returncode != 0:
                    raise CompileError(f"{_CC} could not compile the csrc module (exit {proc.returncode})",
                                       proc.stdout + proc.stderr)
                self._lib = ctypes.CDLL(so)
            return self._lib

    def _get_function(self, info: FunctionInfo):
        fn = getattr(self._library(), info.attrs["entry"])
        fn.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int64)]
        fn.restype = None
        return CSourceKernel(self, info, fn)


def create(payload, fmt: str, fmap, sources: Optional[Mapping[str, str]] = None) -> CSourceModule:
    return CSourceModule(payload, fmt, fmap, sources)


def load_from_bytes(data: bytes, sources: Optional[Mapping[str, str]] = None) -> CSourceModule:
    fmt, fmap, payload = wire.decode_device_payload("csrc", data)
    check_payload("csrc", CSourceFallbackModule.payload_formats, fmt, fmap, payload)  # layout, fmt, 'entry'
    problem = _problem(fmap, payload)
    if problem is not None:
        raise ArtifactError(f"csrc module: {problem}")
    return CSourceModule(payload, fmt, fmap, sources)


def _problem(fmap: Mapping[str, FunctionInfo], payload: bytes) -> Optional[str]:
    """What a launch would trip over in a loaded module (the codegen never writes it), found at load
    (after ``check_payload``: one C source, and every kernel has its 'entry')."""
    text = payload.decode("utf-8", "replace")
    for name, info in fmap.items():
        entry = info.attrs["entry"]
        if not (entry.isascii() and entry.isidentifier()) or not re.search(rf"\b{entry}\s*\(", text):
            return f"function {name!r}: entry {entry!r} is not a C identifier defined in the source"
    return None


def devices():
    return [f"host CPU (C compiler: {_CC})"]


def register() -> None:
    registry.register("module.create.csrc", create)
    registry.register("module.load_from_bytes.csrc", load_from_bytes)
