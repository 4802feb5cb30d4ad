"""The CPU runtime: ``module.create.llvm`` / ``module.load_from_bytes.llvm``.

Loading needs only llvmlite: the relocatable object is linked into the process by MCJIT
(``add_object_file``; no C compiler or linker at run time), its libm/libc references are
resolved from the process, and each kernel's ``K__range`` entry is called through ctypes
by a pool of worker threads (pool.py), workgroups split into chunks across all cores.

Before anything is linked the object is checked (elf.py): an object for another
architecture, byte order or word size, for CPU features this host lacks, or needing
symbols this process cannot provide makes the module not runnable, and launching it
raises a :class:`DeviceError` that says why and how to fix it; the module still
inspects and re-exports unchanged. A malformed object is an :class:`ArtifactError`.

The JIT link happens once per module, lazily and thread-safely (``polykern.lazy``).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import math
from typing import Dict, Mapping, Optional, Set

from polykern import registry, wire
from polykern.codegen.llvm_target import LLVM_LOCK, ensure_initialized, host_triple, missing_host_features
from polykern.errors import ArtifactError, DeviceError, LaunchError
from polykern.launch import BufferArg, check_args
from polykern.lazy import Lazy, LazyMap
from polykern.module import DeviceModule, FunctionInfo

from .elf import ET_REL, MACHINE_NAMES, host_machine, read_elf
from .fallback import SOURCE_PREFERENCE
from .pool import pool

__all__ = ["LLVMModule", "CPUKernel", "create", "load_from_bytes", "register", "devices"]

_RANGE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
_STACK_MARGIN = 1 << 20
_libs_loaded = False


def _load_system_libs() -> None:
    """Make libm and libc symbols visible to the JIT linker (sqrtf, expf, memset, ...)."""
    global _libs_loaded
    if _libs_loaded:
        return
    import llvmlite.binding as llvm

    with LLVM_LOCK:
        if _libs_loaded:
            return
        for short, soname in (("m", "libm.so.6"), ("c", "libc.so.6")):
            for candidate in (soname, ctypes.util.find_library(short)):
                if not candidate:
                    continue
                try:
                    llvm.load_library_permanently(candidate)
                    break
                except RuntimeError:
                    continue
        _libs_loaded = True


def _symbol_available(name: str) -> bool:
    import llvmlite.binding as llvm

    return bool(llvm.address_of_symbol(name))


def host_problem(payload: bytes, fmt: str, fmap: Mapping[str, FunctionInfo]) -> Optional[str]:
    """Why this object cannot run in this process, or None. Raises ArtifactError if it is not ELF."""
    if fmt != "o":
        return f"this runtime runs llvm payloads of format 'o' (ELF object), not {fmt!r}"
    obj = read_elf(payload)
    if obj.e_type != ET_REL:
        return f"the payload is ELF type {obj.e_type}, not a relocatable object"
    machine, bits, little = host_machine()
    triple = next((f.attrs.get("triple", "") for f in fmap.values()), "")
    built = f" (target triple {triple})" if triple else ""
    if (obj.machine, obj.bits, obj.little) != (machine, bits, little):
        host = MACHINE_NAMES.get(machine, "unknown")
        return (f"the object was compiled for {obj.describe()}{built} but this host is {host} "
                f"({bits}-bit, {'little' if little else 'big'}-endian); rebuild with target "
                f"'llvm -mtriple={host_triple()}' (or plain 'llvm' on this host), or run the artifact on a "
                f"{obj.machine_name} machine")
    features = next((f.attrs.get("features", "") for f in fmap.values()), "")
    missing = missing_host_features(features) if features else None
    if missing:
        return (f"the object needs CPU features this host lacks: {', '.join(missing)}; rebuild with a "
                "smaller -mattr/-mcpu (the default -mcpu=generic runs everywhere)")
    ensure_initialized()
    _load_system_libs()
    unresolved = [s for s in obj.undefined if not _symbol_available(s)]
    if unresolved:
        return (f"the object needs symbols this process cannot provide: {', '.join(unresolved)} "
                "(only libm/libc are linked at run time)")
    return None


class LLVMModule(DeviceModule):
    """A CPU module; runnable when its object is for this host (see :func:`host_problem`)."""

    source_preference = SOURCE_PREFERENCE

    def __init__(self, payload: bytes, fmt: str, fmap: Mapping[str, FunctionInfo],
                 sources: Optional[Mapping[str, str]] = None):
        super().__init__("llvm", payload, fmt, fmap, sources)
        self.problem = host_problem(self.payload, fmt, self.functions)
        self._engine = Lazy(self._link)
        self._kernels = LazyMap(self._make_kernel)

    @property
    def is_runnable(self) -> bool:  # type: ignore[override]
        return self.problem is None

    def not_runnable_reason(self, name: str) -> str:
        return f"cannot launch '{name}' on this CPU: {self.problem}" if self.problem else ""

    def _link(self):
        """JIT-link the object once; returns (engine, {entry symbol: address})."""
        import llvmlite.binding as llvm

        with LLVM_LOCK:
            # The (empty) owner module lives in the global context, which is never disposed: a
            # private context could be collected before the engine that owns its module.
            owner = llvm.parse_assembly("")
            owner.triple = llvm.get_process_triple()
            tm = llvm.Target.from_default_triple().create_target_machine()
            engine = llvm.create_mcjit_compiler(owner, tm)
            engine.add_object_file(llvm.ObjectFileRef.from_data(self.payload))
            engine.finalize_object()
            addresses = {}
            for name, info in self.functions.items():
                entry = info.attrs.get("entry", name + "__range")
                addr = engine.get_function_address(entry)
                if not addr:
                    raise ArtifactError(f"llvm module: the object does not define '{entry}' (kernel '{name}')")
                addresses[entry] = addr
            return engine, addresses

    def _make_kernel(self, name: str) -> "CPUKernel":
        info = self.functions[name]
        _, addresses = self._engine.get()
        return CPUKernel(self, info, addresses[info.attrs.get("entry", name + "__range")])

    def _get_function(self, info: FunctionInfo) -> "CPUKernel":
        if self.problem is not None:
            raise DeviceError(self.not_runnable_reason(info.name), name="unsupported object")
        return self._kernels.get(info.name)


class CPUKernel:
    """``kernel(*args, grid=..., block=...)``: runs on the worker pool and returns when done.
    NumPy arrays are used in place (the CPU shares host memory: no copies)."""

    def __init__(self, module: LLVMModule, info: FunctionInfo, address: int):
        self.module = module
        self.info = info
        self.address = address
        self._fn = _RANGE_FN(address)
        self.item_bytes = int(info.attrs.get("item_bytes", "0") or 0)
        #: Threads that ran the chunks of the latest launch (observability; tests use it).
        self.last_threads: Set[int] = set()

    @property
    def name(self) -> str:
        return self.info.name

    def _check_stack(self, block3) -> None:
        items = block3[0] * block3[1] * block3[2]
        need = self.item_bytes * items + self.info.shared_bytes + _STACK_MARGIN
        have = pool().stack_bytes
        if need > have:
            raise LaunchError(f"kernel '{self.name}': block {block3} needs about {need >> 20} MiB of stack per "
                              f"CPU worker for shared and per-work-item storage; the workers have {have >> 20} MiB "
                              "(raise POLYKERN_CPU_STACK_MB before the first launch, or use smaller blocks)")

    def __call__(self, *args, grid=None, block=None):
        grid3, block3, prepared = check_args(self.info, args, grid, block)
        self._check_stack(block3)
        n = len(prepared)
        argv = (ctypes.c_void_p * max(n, 1))()
        keep = []
        for i, a in enumerate(prepared):
            if isinstance(a, BufferArg):
                if a.device[0] != "cpu":
                    raise LaunchError(f"kernel '{self.name}', argument '{a.name}': the CPU runtime takes host "
                                      f"memory, got memory on device {a.device[0]!r}; copy it to the host first")
                cell = ctypes.c_void_p(a.ptr)
            else:
                cell = ctypes.create_string_buffer(a.tobytes(), max(1, a.info.dtype.nbytes))
            keep.append(cell)
            argv[i] = ctypes.addressof(cell)
        launch = (ctypes.c_int32 * 6)(*grid3, *block3)
        total = math.prod(grid3)
        fn, argp, launchp = self._fn, ctypes.addressof(argv), ctypes.addressof(launch)

        def chunk(begin: int, end: int) -> None:
            fn(argp, launchp, begin, end)

        self.last_threads = pool().run(chunk, total)
        del keep

    def __repr__(self) -> str:
        return f"<CPUKernel {self.info.signature()}>"


def create(payload: bytes, fmt: str, fmap: Mapping[str, FunctionInfo], sources: Dict[str, str]) -> LLVMModule:
    return LLVMModule(payload, fmt, fmap, sources)


def load_from_bytes(data: bytes, sources: Dict[str, str]) -> LLVMModule:
    fmt, fmap, payload = wire.decode_device_payload("llvm", data)
    return LLVMModule(payload, fmt, fmap, sources)


def devices():
    import llvmlite.binding as llvm

    ensure_initialized()
    return [f"cpu: {llvm.get_host_cpu_name()}, {pool().workers} worker threads, {host_triple()}"]


def register() -> None:
    registry.register("module.create.llvm", create)
    registry.register("module.load_from_bytes.llvm", load_from_bytes)
