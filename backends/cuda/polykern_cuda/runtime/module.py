"""``CUDAModule``: the real, runnable cuda module (``module.create.cuda`` / ``module.load_from_bytes.cuda``).

It is a :class:`polykern.module.DeviceModule`, so ``save_to_bytes`` is the one shared serializer:
byte-identical to the fallback's and to the bytes it was loaded from, whatever happens on the
device. Payload formats: ``ptx`` (JIT-compiled by the driver for the device), ``cubin`` (must
suit the device's architecture: checked before loading, ``cubin.py``) and ``cuda`` (CUDA C: compiled here to PTX for the device's
architecture with NVRTC or nvcc, ``toolchain.finish_on_receiver``; at load time for an artifact,
so a host without a compiler degrades the module to "unavailable" with the reason, and lazily
for a module built in this process).

Creating/loading validates the payload and touches no device. The image is loaded into a
device's primary context on the first launch there (thread-safe, once per device: one CUmodule per
(module, device); a failure is retried on the next call), kernels are resolved once per (name,
device), and everything is unloaded, with its context current, when the module is garbage collected.
``mod["k"]`` is the kernel on the default device; a launch whose arrays live on another device runs
there (kernel.py).
"""
from __future__ import annotations

import threading
import weakref
from typing import Dict, List, Mapping, Optional, Tuple

import pycuda.driver as drv

from polykern.kbin import wire
from polykern.errors import ArtifactError, DeviceError
from polykern.runtime.device_array import DeviceArrayModule
from polykern.runtime.lazy import Lazy, LazyMap
from polykern.module import DeviceModule, FunctionInfo, payload_text
from polykern.kbin.payload_formats import check_payload

from .. import toolchain
from ..fallback import CUDAFallbackModule
from . import cubin
from . import device as _device
from .cuerrors import HINTS, NAMES, cuda_call
from .device_array import DeviceArray
from .kernel import CUDAKernel

__all__ = ["CUDAModule", "create", "load_from_bytes", "FORMATS"]

FORMATS = CUDAFallbackModule.payload_formats.fmts  # the one declaration (fallback.py)
_ELF = b"\x7fELF"
_FATBIN = b"\x50\xed\x55\xba"  # fatbinary magic 0xBA55ED50, little-endian


class _Loaded:
    """A module image loaded into ``dev``'s primary context, and its resolved functions."""

    def __init__(self, dev, handle):
        self.dev = dev
        self.handle = handle
        self._functions: Dict[str, object] = {}
        #: entry -> pycuda Function, read without the lock by launches (CUDAKernel._enqueue)
        self.functions = self._functions
        self._lock = threading.Lock()

    def function(self, entry: str):
        with self._lock:
            fn = self._functions.get(entry)
        if fn is None:
            with self.dev.scope(), cuda_call(f"finding kernel '{entry}'"):
                fn = self.handle.get_function(entry)
            with self._lock:
                fn = self._functions.setdefault(entry, fn)
        return fn

    def unload(self) -> None:
        """Drop the functions and the module with the context current (pycuda frees them then)."""
        with self._lock:
            handle, self.handle = self.handle, None
            functions = list(self._functions.values())
            self._functions.clear()
        if handle is None:
            return
        with self.dev.scope():
            del functions, handle


def _unload_all(loaded: List[_Loaded]) -> None:
    for item in loaded:
        try:
            item.unload()
        except Exception as e:  # finalizer: nothing can be raised; the memory stays with the context
            item.dev.count("unload_errors")
            item.dev.stats[f"last_unload_error: {type(e).__name__}: {e}"] += 1
    loaded.clear()


def _validate(fmt: str, payload: bytes, fmap: Mapping[str, FunctionInfo]) -> None:
    check_payload("cuda", CUDAFallbackModule.payload_formats, fmt, fmap, payload)  # layout and fmt first
    if fmt in ("ptx", "cuda") and payload_text(payload) is None:
        raise ArtifactError(f"cuda module: a {fmt!r} payload must be UTF-8 text without NUL bytes")
    if fmt == "ptx" and fmap and ".entry" not in payload.decode("utf-8"):
        raise ArtifactError("cuda module: the PTX payload declares no kernel (.entry)")
    if fmt == "cubin" and not (payload.startswith(_ELF) or payload.startswith(_FATBIN)):
        raise ArtifactError("cuda module: a 'cubin' payload must be an ELF cubin or a fatbinary "
                            f"(starts with {payload[:4]!r})")


class CUDAModule(DeviceArrayModule, DeviceModule):
    """PTX / cubin / CUDA C runnable on the process' CUDA device."""
    device_array_class = DeviceArray

    is_runnable = True
    source_preference = ("cuda", "ptx")

    def __init__(self, payload: bytes, fmt: str, fmap: Mapping[str, FunctionInfo],
                 sources: Optional[Mapping[str, str]] = None):
        super().__init__("cuda", payload, fmt, fmap, sources)
        _validate(self.fmt, self.payload, self.functions)
        self._image: Lazy = Lazy(self._make_image)
        self._loaded_list: List[_Loaded] = []
        self._loaded: LazyMap = LazyMap(self._load)
        self._kernels: LazyMap = LazyMap(self._make_kernel)
        weakref.finalize(self, _unload_all, self._loaded_list)

    # ------------------------------------------------------------ realization
    @property
    def device(self) -> "_device.CUDADevice":
        return _device.get()

    @property
    def image(self) -> Tuple[str, bytes]:
        """(fmt, bytes) handed to the driver: the payload, or for fmt 'cuda' the PTX compiled here
        for the device's architecture (CompileError/BackendUnavailableError if that fails)."""
        return self._image.get()

    def _specific_arch(self, dev) -> Optional[str]:
        """The architecture-specific target (``sm_90a``) the kernels were built for, checked against the device:
        such code (wgmma, setmaxnreg) runs only on that exact compute capability; None for portable code."""
        archs = sorted({i.attrs.get("arch", "") for i in self.functions.values()} - {""})
        specific = [a for a in archs if (cubin.parse_arch(a) or (0, 0, ""))[2] == "a"]
        if not specific:
            return None
        want = cubin.parse_arch(specific[0])
        if (want[0], want[1]) != tuple(dev.compute_capability):
            raise DeviceError(f"CUDA: this module was built for {specific[0]} (architecture-specific code such as wgmma "
                              f"and setmaxnreg, which runs only on compute capability {want[0]}.{want[1]}); "
                              f"cuda:{dev.ordinal} {dev.name} is {dev.arch}: rebuild for its architecture",
                              code=209, name=NAMES[209])
        return specific[0]

    def _make_image(self) -> Tuple[str, bytes]:
        dev = self.device
        arch = self._specific_arch(dev) or dev.arch
        return toolchain.finish_on_receiver(self.fmt, self.payload, arch)

    def _load(self, ordinal: int) -> _Loaded:
        dev = _device.at(ordinal)
        fmt, data = self.image
        blob = data + b"\x00" if fmt == "ptx" else data  # the driver reads PTX as a C string
        archs = sorted({i.attrs.get("arch", "") for i in self.functions.values()} - {""})
        what = f"loading the {fmt} module into cuda:{dev.ordinal}"
        self._specific_arch(dev)  # sm_90a code on another device: refused by name before the driver sees it
        if fmt == "cubin" and blob.startswith(_ELF):  # a fatbinary is left to the driver: it picks
            arch = cubin.cubin_arch(blob, archs)
            why = cubin.incompatibility(arch, dev.compute_capability) if arch is not None else None
            if why is not None:
                built = f"built for {', '.join(archs) or cubin.fmt_arch(arch)}; this device is {dev.arch}"
                raise DeviceError(f"CUDA: {what} failed: {why} ({HINTS[209]}) ({built})", code=209,
                                  name=NAMES[209])
        try:
            with dev.scope(), cuda_call(what):
                handle = drv.module_from_buffer(blob)
        except DeviceError as e:
            built = f" (built for {', '.join(archs)}; this device is {dev.arch})" if archs else ""
            raise DeviceError(f"{e}{built}", code=e.code, name=e.name) from e
        loaded = _Loaded(dev, handle)
        self._loaded_list.append(loaded)
        dev.count("modules_loaded")
        return loaded

    def _make_kernel(self, key: Tuple[str, int]) -> CUDAKernel:
        name, ordinal = key
        info = self.functions[name]
        loaded = self._loaded.get(ordinal)
        return CUDAKernel(self, info, loaded, info.attrs.get("entry", name))

    def kernel_on(self, name: str, dev: "_device.CUDADevice") -> CUDAKernel:
        """Kernel ``name`` on device ``dev`` (the module is loaded there on first use)."""
        return self._kernels.get((name, dev.ordinal))

    def _get_function(self, info: FunctionInfo) -> CUDAKernel:
        """The launchable kernel (on the default device; it hands launches with arrays on another device to
        that device's kernel); loads the module into the device on first call (DeviceError if the
        device cannot run it, CompileError if CUDA C cannot be compiled here)."""
        return self.kernel_on(info.name, self.device)


def create(payload: bytes, fmt: str, fmap: Mapping[str, FunctionInfo], sources: Dict[str, str]) -> CUDAModule:
    """``module.create.cuda``: the module a build makes when the runtime is present (nothing compiled
    or loaded yet)."""
    return CUDAModule(payload, fmt, fmap, sources)


def load_from_bytes(data: bytes, sources: Dict[str, str]) -> CUDAModule:
    """``module.load_from_bytes.cuda``: decode, validate, and for fmt 'cuda' compile the CUDA C now
    (receiver-side completion; CompileError/BackendUnavailableError make the artifact loader keep
    the module as unavailable with that reason)."""
    fmt, fmap, payload = wire.decode_device_payload("cuda", data)
    m = CUDAModule(payload, fmt, fmap, sources)
    if m.fmt == "cuda":
        m.image  # noqa: B018  (compile now)
    return m
