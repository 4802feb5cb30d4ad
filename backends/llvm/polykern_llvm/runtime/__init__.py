"""The CPU runtime: ``module.create.llvm`` / ``module.load_from_bytes.llvm``.

Loading needs no JIT linker and no C compiler: the relocatable object is checked and laid out
(objfile.py) and then mapped into the process by polykern's own loader (loader.py), which
resolves its libm/libc references with ``dlsym`` through trampolines and GOT slots inside the
image, so no relocation can be out of range wherever the process's libraries are mapped. Each
kernel's ``K__range`` entry is called through ctypes by a pool of worker threads (pool.py),
workgroups split into chunks across all cores.

When a module is created the object is checked: a malformed object is an
:class:`ArtifactError` right away. An object for another architecture, byte order or word
size, for CPU features this host lacks, or needing symbols this process cannot provide makes
the module not runnable, and launching it raises a :class:`DeviceError` that says why and how
to fix it; the module still inspects and re-exports unchanged.

The image is mapped once per module, lazily and thread-safely (``polykern.runtime.lazy``).
"""
from __future__ import annotations

import ctypes
import math
import struct
import threading
from typing import Dict, Mapping, Optional, Set, Tuple

import numpy as np

from polykern import registry
from polykern.runtime import kernel_output
from polykern.kbin import wire
from polykern.codegen.llvm_target import ensure_initialized, host_triple, missing_host_features
from polykern.codegen.cpu.lazy_asm import LazyAsmSources
from polykern.errors import ArtifactError, DeviceError, LaunchError
from polykern.runtime.launch import (PORTABLE_MAX_GRID, BufferArg, check_global_size, check_grid_limits,
                                     normalize_dims)
from polykern.runtime.launch_rules import CPU_STACK_MARGIN as _STACK_MARGIN
from polykern.runtime.launch_rules import grid_limit_name
from polykern.runtime.lazy import Lazy, LazyMap
from polykern.runtime.staged_launch import Launch, StagedLaunch
from polykern.module import DeviceModule, FunctionInfo
from polykern.kbin.payload_formats import check_payload

from .addresses import data_address
from .elf import ET_REL, MACHINE_NAMES, check_matches_triple, host_machine, read_elf
from ..fallback import SOURCE_PREFERENCE, LLVMFallbackModule
from .loader import check_relocations, load_image, unresolved
from .objfile import ObjectPlan, parse_object
from .pool import pool as worker_pool
from .relocs import RELOCATORS

__all__ = ["LLVMModule", "CPUKernel", "create", "load_from_bytes", "register", "devices"]

_RANGE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


def host_problem(payload: bytes, fmt: str, fmap: Mapping[str, FunctionInfo]
                 ) -> Tuple[Optional[str], Optional[ObjectPlan]]:
    """(why this object cannot run in this process or None, its checked layout). Raises
    ArtifactError when the object is malformed: every x86_64 or aarch64 object is checked in full,
    whichever host loads it."""
    if fmt != "o":
        return f"this runtime runs llvm payloads of format 'o' (ELF object), not {fmt!r}", None
    obj = read_elf(payload)
    if obj.e_type != ET_REL:
        raise ArtifactError(f"llvm payload: ELF type {obj.e_type} is not a relocatable object (ET_REL)", 16)
    machine, bits, little = host_machine()
    triple = next((f.attrs.get("triple", "") for f in fmap.values()), "")
    if triple:
        check_matches_triple(obj, triple)
    built = f" (target triple {triple})" if triple else ""
    plan = None
    if (obj.bits, obj.little) == (64, True) and obj.machine in RELOCATORS:  # also when built for another host
        plan = parse_object(payload, obj.machine)
        check_relocations(plan, payload)
        entries = plan.exported()
        for name, info in fmap.items():
            entry = info.attrs.get("entry", name + "__range")
            if entry not in entries:
                raise ArtifactError(f"llvm payload: the object does not define function {entry!r} (kernel {name!r})")
    if (obj.machine, obj.bits, obj.little) == (machine, bits, little) and plan is None:
        return (f"polykern's CPU loader runs objects on x86_64 and aarch64 hosts, not on {obj.describe()}"), None
    if (obj.machine, obj.bits, obj.little) != (machine, bits, little):
        host = MACHINE_NAMES.get(machine, "unknown")
        return (f"the object was compiled for {obj.describe()}{built} but this host is {host} "
                f"({bits}-bit, {'little' if little else 'big'}-endian); rebuild with target "
                f"'llvm -mtriple={host_triple()}' (or plain 'llvm' on this host), or run the artifact on a "
                f"{obj.machine_name} machine"), None
    features = next((f.attrs.get("features", "") for f in fmap.values()), "")
    missing = missing_host_features(features) if features else None
    if missing:
        return (f"the object needs CPU features this host lacks: {', '.join(missing)}; rebuild with a "
                "smaller -mattr/-mcpu (the default -mcpu=generic runs everywhere)"), plan
    lacking = unresolved(plan.external_names)
    if lacking:
        return (f"the object needs symbols this process cannot provide: {', '.join(lacking)} "
                "(only libc, libm and libgcc_s are linked at run time)"), plan
    return None, plan


class LLVMModule(LazyAsmSources, DeviceModule):
    """A CPU module; runnable when its object is for this host (see :func:`host_problem`)."""

    source_preference = SOURCE_PREFERENCE

    def __init__(self, payload: bytes, fmt: str, fmap: Mapping[str, FunctionInfo],
                 sources: Optional[Mapping[str, str]] = None):
        super().__init__("llvm", payload, fmt, fmap, sources)
        self.problem, self._plan = host_problem(self.payload, fmt, self.functions)
        self._engine = Lazy(self._link)
        self._kernels = LazyMap(self._make_kernel)

    @property
    def is_runnable(self) -> bool:  # type: ignore[override]
        return self.problem is None

    def not_runnable_reason(self, name: str) -> str:
        return f"cannot launch '{name}' on this CPU: {self.problem}" if self.problem else ""

    def _link(self):
        """Map the object once; returns its :class:`loader.Image` (entry symbol -> address)."""
        entries = [info.attrs.get("entry", name + "__range") for name, info in self.functions.items()]
        return load_image(self._plan, self.payload, entries)

    def _make_kernel(self, name: str) -> "CPUKernel":
        info = self.functions[name]
        image = self._engine.get()
        return CPUKernel(self, info, image.symbols[info.attrs.get("entry", name + "__range")])

    def _get_function(self, info: FunctionInfo) -> "CPUKernel":
        if self.problem is not None:
            raise DeviceError(self.not_runnable_reason(info.name), name="unsupported object")
        return self._kernels.get(info.name)


_STRUCT_CODES = {(0, 8): "b7x", (0, 16): "h6x", (0, 32): "i4x", (0, 64): "q", (1, 8): "B7x", (1, 16): "H6x",
                 (1, 32): "I4x", (1, 64): "Q", (2, 16): "e6x", (2, 32): "f4x", (2, 64): "d", (6, 8): "?7x"}
_INLINE_STACK_BYTES = 256 << 10
_FLOATISH = (float, int, np.float32, np.float64)  # the launching thread runs chunks itself only below this much stack


class _ArgPlan:
    """How one argument of a kernel is checked and packed on the fast path."""

    __slots__ = ("buffer", "dtype", "writable", "kind", "lo", "hi", "exact_int")

    def __init__(self, a):
        self.buffer = a.kind == "buffer"
        self.dtype = np.dtype(a.dtype.numpy)  # native byte order: the dtype arrays of it usually hold itself
        self.writable = self.buffer and not a.readonly
        t = a.dtype
        self.kind = "bool" if t.is_bool else "float" if t.is_float else "int"
        self.lo, self.hi = (t.min_value(), t.max_value()) if not t.is_bool else (0, 1)
        # ints this large are exact in float64, so float(v) then the type's rounding is one rounding
        self.exact_int = math.inf if t.bits == 64 else 1 << 53


class CPUKernel(StagedLaunch):
    """``kernel(*args, grid=..., block=...)``: runs on the worker pool (and the calling thread)
    and returns when done. NumPy arrays are used in place (the CPU shares host memory: no copies).

    Launch cost is kept low: the common case (NumPy arrays of exactly the declared dtype,
    Python/NumPy scalars in range, int/tuple grid and block seen before) is checked and packed
    into a per-thread argument block with one ``struct.pack_into``; anything else goes through
    :func:`polykern.runtime.launch.check_args`, which raises the precise :class:`LaunchError`: the
    staged launch (polykern/runtime/staged_launch.py), with host arrays used in place."""

    runtime = "cpu"
    copies_host = False  # NumPy arrays are the kernel's memory: bound in place, never copied

    def __init__(self, module: LLVMModule, info: FunctionInfo, address: int):
        self.module = module
        self.info = info
        self.address = address
        self._fn = _RANGE_FN(address)
        self.item_bytes = int(info.attrs.get("item_bytes", "0") or 0)
        #: Threads that ran the chunks of the latest launch (observability; tests use it).
        self.last_threads: Set[int] = set()
        self._plans = [_ArgPlan(a) for a in info.args]
        n = len(self._plans)
        self._nargs = n
        # argv cells (n pointers) then one 8-byte value cell per argument
        self._packer = struct.Struct("<" + "".join(_STRUCT_CODES[(a.code, a.bits)] if a.kind == "scalar" else "Q"
                                                   for a in info.args))
        self._tls = threading.local()
        self._dims: Dict[tuple, tuple] = {}
        private = info.attrs.get("private_bytes")
        self._fixed_stack = None if private is None else int(private) + info.shared_bytes
        self._prints = kernel_output.prints(info)

    @property
    def name(self) -> str:
        return self.info.name

    def _check_stack(self, block3) -> int:
        items = block3[0] * block3[1] * block3[2]
        need = self.item_bytes * items + self.info.shared_bytes + _STACK_MARGIN
        have = worker_pool().stack_bytes
        if need > have:
            raise LaunchError(f"kernel '{self.name}': block {block3} needs about {need >> 20} MiB of stack per "
                              f"CPU worker for shared and per-work-item storage; the workers have {have >> 20} MiB "
                              "(raise POLYKERN_CPU_STACK_MB before the first launch, or use smaller blocks)")
        return need

    def _launch_shape(self, grid, block):
        """(launch array, total groups, caller may run chunks) for a grid/block, cached."""
        key = (grid, block)
        try:
            return self._dims[key]
        except (KeyError, TypeError):  # TypeError: unhashable (a list): not cached
            pass
        grid3, block3 = normalize_dims("grid", grid, self.name), normalize_dims("block", block, self.name)
        check_global_size(self.name, grid3, block3)
        check_grid_limits(self.name, grid3, PORTABLE_MAX_GRID, grid_limit_name("CPU"))
        need = self._check_stack(block3)
        inline = (self._fixed_stack is not None
                  and need - _STACK_MARGIN + self._fixed_stack <= _INLINE_STACK_BYTES)
        shape = ((ctypes.c_int32 * 6)(*grid3, *block3), grid3[0] * grid3[1] * grid3[2], inline)
        if isinstance(grid, (int, tuple)) and isinstance(block, (int, tuple)) and len(self._dims) < 64:
            self._dims[key] = shape
        return shape

    def _cells(self):
        """This thread's argument block: argv pointers, then the packed values they point at."""
        cells = getattr(self._tls, "cells", None)
        if cells is None:
            n = max(self._nargs, 1)
            cells = ctypes.create_string_buffer(16 * n)
            base = ctypes.addressof(cells)
            struct.pack_into(f"<{n}Q", cells, 0, *(base + 8 * (n + i) for i in range(n)))
            self._tls.cells = cells
        return cells

    def _fast_values(self, args) -> Optional[list]:
        """The packed values of ``args`` if every one is a common, valid case; else None."""
        if len(args) != self._nargs:
            return None
        out = []
        for plan, v in zip(self._plans, args):
            if plan.buffer:
                if type(v) is not np.ndarray:
                    return None
                dt = v.dtype
                if dt is not plan.dtype and (dt != plan.dtype or not dt.isnative):
                    return None
                flags = v.flags
                if v.ndim == 0 or not flags.c_contiguous or (plan.writable and not flags.writeable):
                    return None
                out.append(data_address(v))
            elif plan.kind == "int":
                if type(v) is not int or not plan.lo <= v <= plan.hi:
                    return None
                out.append(v)
            elif plan.kind == "float":
                if type(v) not in _FLOATISH or (type(v) is int and not -plan.exact_int <= v <= plan.exact_int):
                    return None  # float(v) would round twice: the slow path rounds it once
                try:
                    fv = float(v)
                except OverflowError:  # a huge int: the slow path words the error
                    return None
                if abs(fv) > plan.hi and math.isfinite(fv):
                    return None
                out.append(fv)
            else:
                if type(v) is not bool:
                    return None
                out.append(v)
        return out

    def __call__(self, *args, grid=None, block=None):
        values = self._fast_values(args)
        if values is None or grid is None or block is None or type(grid) is bool or type(block) is bool:
            return self._slow_call(args, grid, block)
        launch, total, inline = self._launch_shape(grid, block)
        cells = self._cells()
        n = max(self._nargs, 1)
        try:
            self._packer.pack_into(cells, 8 * n, *values)
        except (struct.error, OverflowError):  # e.g. a float that rounds past the f16 range
            return self._slow_call(args, grid, block)
        self._run(ctypes.addressof(cells), ctypes.addressof(launch), total, inline, (args, cells, launch))

    def _slow_call(self, args, grid, block):
        self.staged(args, grid, block)

    # ------------------------------------------------------------ staged launch hooks (staged_launch.py)
    def limits(self, launch: Launch) -> None:
        launch.shape = self._launch_shape(launch.grid, launch.block)

    def bind_device(self, launch: Launch, arg: BufferArg):
        if arg.device[0] != "cpu":
            raise LaunchError(f"kernel '{self.name}', argument '{arg.name}': the CPU runtime takes host "
                              f"memory, got memory on device {arg.device[0]!r}; copy it to the host first")
        return ctypes.c_void_p(arg.ptr)

    def bind_scalar(self, launch: Launch, arg):
        return ctypes.create_string_buffer(arg.tobytes(), max(1, arg.info.dtype.nbytes))

    def dispatch(self, launch: Launch) -> None:
        shape, total, inline = launch.shape
        cells = launch.bindings
        argv = (ctypes.c_void_p * max(len(cells), 1))(*(ctypes.addressof(c) for c in cells))
        self._run(ctypes.addressof(argv), ctypes.addressof(shape), total, inline,
                  (launch.prepared, cells, argv, shape))

    def _run(self, argp: int, launchp: int, total: int, inline: bool, keepalive) -> None:
        fn = self._fn
        if total == 1 and inline and not self._prints:  # one group, small stack: one call, right here
            fn(argp, launchp, 0, 1)
            self.last_threads = {threading.get_ident()}
            return

        def chunk(begin: int, end: int) -> None:
            fn(argp, launchp, begin, end)

        if self._prints:  # pk.debug_print: C's printf, in order with Python's output (kernel_output.py)
            kernel_output.launching()
            try:
                self.last_threads = worker_pool().run(chunk, total, caller=inline)
            finally:
                kernel_output.launched()
        else:
            self.last_threads = worker_pool().run(chunk, total, caller=inline)
        del keepalive

    def __repr__(self) -> str:
        return f"<CPUKernel {self.info.signature()}>"


def create(payload: bytes, fmt: str, fmap: Mapping[str, FunctionInfo], sources: Dict[str, str]) -> LLVMModule:
    return LLVMModule(payload, fmt, fmap, sources)


def load_from_bytes(data: bytes, sources: Dict[str, str]) -> LLVMModule:
    fmt, fmap, payload = wire.decode_device_payload("llvm", data)
    check_payload("llvm", LLVMFallbackModule.payload_formats, fmt, fmap, payload)  # before anything trusts it
    return LLVMModule(payload, fmt, fmap, sources)


def devices():
    import llvmlite.binding as llvm

    ensure_initialized()
    return [f"cpu: {llvm.get_host_cpu_name()}, {worker_pool().workers} worker threads, {host_triple()}"]


def register() -> None:
    registry.register("module.create.llvm", create)
    registry.register("module.load_from_bytes.llvm", load_from_bytes)
