"""The emulated Hexagon module: each kernel's ``K__range`` linked with the harness, run under QEMU.

``HexagonModule.get_function(name)`` links, once per kernel and lazily (thread-safe), the
module's object with the harness and builtins objects (toolchain.py) into a static Hexagon
executable whose ``pk_entry`` is the kernel's entry symbol (``ld.lld --defsym``). A launch checks
its arguments like every runtime (:func:`polykern.runtime.launch.check_args`), streams them to the
executable under ``qemu-hexagon-static`` (:mod:`polykern.runtime.launch_stream`), which runs all workgroups in one call of
``K__range`` on one emulated hardware thread, and copies the written buffers back into the
caller's arrays. The executables live in a private temporary folder removed with the module.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
import weakref
from pathlib import Path
from typing import List, Mapping, Optional

import numpy as np

from polykern.codegen.cpu.lazy_asm import LazyAsmSources
from polykern.errors import DeviceError, LaunchError
from polykern.runtime.launch import BufferArg
from polykern.runtime.lazy import Lazy, LazyMap
from polykern.runtime.staged_launch import HostCopy, Launch, StagedLaunch
from polykern.module import DeviceModule, FunctionInfo

from polykern.runtime import launch_stream as protocol
from .toolchain import QEMU_CPU, Tools, find_tools, support_objects

__all__ = ["HexagonModule", "HexagonKernel", "STACK_ENV", "MAX_GLOBAL_ID"]

STACK_ENV = "POLYKERN_HEXAGON_STACK_MB"
MAX_GLOBAL_ID = 2 ** 31 - 1
_STACK_MARGIN = 1 << 20


def stack_bytes() -> int:
    raw = os.environ.get(STACK_ENV, "64")
    try:
        mb = int(raw)
    except ValueError:
        raise LaunchError(f"{STACK_ENV}={raw!r} is not a whole number of MiB") from None
    if not 1 <= mb <= 1024:
        raise LaunchError(f"{STACK_ENV}={mb} is outside 1..1024 MiB")
    return mb << 20


class HexagonModule(LazyAsmSources, DeviceModule):
    """A hexagon module that runs under QEMU user-mode emulation."""

    source_preference = ("asm", "llvm")

    def __init__(self, payload: bytes, fmt: str, fmap: Mapping[str, FunctionInfo],
                 sources: Optional[Mapping[str, str]] = None):
        super().__init__("hexagon", payload, fmt, fmap, sources)
        self.problem = self._problem()
        self._folder = Lazy(self._make_folder)
        self._kernels = LazyMap(self._link)

    def _problem(self) -> Optional[str]:
        if self.fmt != "o":
            return f"the Hexagon runtime runs payloads of format 'o' (ELF object), not {self.fmt!r}"
        if self.payload[:4] != b"\x7fELF" or len(self.payload) < 20 or self.payload[18:20] != b"\xa4\x00":
            return "the payload is not a Hexagon ELF object (e_machine 164)"
        return None

    @property
    def is_runnable(self) -> bool:  # type: ignore[override]
        return self.problem is None

    def not_runnable_reason(self, name: str) -> str:
        return f"cannot launch '{name}' on the emulated Hexagon: {self.problem}" if self.problem else ""

    def _make_folder(self) -> Path:
        folder = tempfile.mkdtemp(prefix="polykern-hexagon-mod-")
        weakref.finalize(self, shutil.rmtree, folder, True)
        (Path(folder) / "module.o").write_bytes(self.payload)
        return Path(folder)

    def _link(self, name: str) -> "HexagonKernel":
        tools = find_tools()
        info = self.functions[name]
        entry = info.attrs.get("entry", name + "__range")
        folder = self._folder.get()
        exe = folder / f"k{sorted(self.functions).index(name)}.elf"
        harness, builtins = support_objects(tools)
        r = subprocess.run([tools.lld, "-static", "-e", "_start", f"--defsym=pk_entry={entry}", harness,
                            str(folder / "module.o"), builtins, "-o", str(exe)], capture_output=True, text=True)
        if r.returncode != 0:
            raise DeviceError(f"hexagon: linking kernel '{name}' (entry {entry}) with the emulation harness failed: "
                              f"{r.stderr.strip()}", name="link failed")
        return HexagonKernel(self, info, tools, str(exe))

    def _get_function(self, info: FunctionInfo) -> "HexagonKernel":
        if self.problem is not None:
            raise DeviceError(self.not_runnable_reason(info.name), name="unsupported object")
        return self._kernels.get(info.name)


def _host_view(a: BufferArg) -> np.ndarray:
    if a.array is not None:
        return a.array
    if a.device[0] == "cpu":
        n = a.nbytes
        return np.frombuffer((ctypes.c_char * n).from_address(a.ptr), dtype=a.info.dtype.numpy) if n else \
            np.empty(0, a.info.dtype.numpy)
    raise LaunchError(f"argument '{a.name}': the Hexagon runtime takes host memory (it copies it to the "
                      f"emulator), got memory on device {a.device[0]!r}; copy it to the host first")


class HexagonKernel(StagedLaunch):
    """``kernel(*args, grid=..., block=...)``: one emulated run; returns when the buffers are back."""

    runtime = "hexagon"
    same_host_ok = False  # every buffer argument is its own copy in the emulator

    def __init__(self, module: HexagonModule, info: FunctionInfo, tools: Tools, exe: str):
        self.module = module
        self.info = info
        self.tools = tools
        self.exe = exe
        self.item_bytes = int(info.attrs.get("item_bytes", "0") or 0)

    @property
    def name(self) -> str:
        return self.info.name

    # ------------------------------------------------------------ staged launch hooks (staged_launch.py)
    def limits(self, launch: Launch) -> None:
        grid3, block3 = launch.grid, launch.block
        for d in range(3):
            if f"global_id.{d}" in self.info.launch_tags and grid3[d] * block3[d] > MAX_GLOBAL_ID + 1:
                raise LaunchError(f"kernel '{self.name}': grid[{d}] * block[{d}] = {grid3[d] * block3[d]} "
                                  f"work-items, but global_id({d}) is an i32")
        for d in range(3):
            if grid3[d] > MAX_GLOBAL_ID or block3[d] > MAX_GLOBAL_ID:
                raise LaunchError(f"kernel '{self.name}': grid and block sizes must fit in an i32")
        launch.stack = stack = stack_bytes()
        need = self.item_bytes * block3[0] * block3[1] * block3[2] + self.info.shared_bytes + _STACK_MARGIN
        if need > stack:
            raise LaunchError(f"kernel '{self.name}': block {block3} needs about {need >> 20} MiB of stack for "
                              f"shared and per-work-item storage; the emulated Hexagon thread has {stack >> 20} "
                              f"MiB (raise {STACK_ENV}, or use smaller blocks)")

    def is_device(self, arg: BufferArg) -> bool:
        return arg.array is None and arg.device[0] != "cpu"

    def bind_device(self, launch: Launch, arg: BufferArg):
        raise LaunchError(f"argument '{arg.name}': the Hexagon runtime takes host memory (it copies it to the "
                          f"emulator), got memory on device {arg.device[0]!r}; copy it to the host first")

    def stage_in(self, launch: Launch, arg: BufferArg) -> bytes:
        view = _host_view(arg)
        return view.view(np.uint8).reshape(-1).tobytes() if view.size else b""

    def bind_scalar(self, launch: Launch, arg) -> bytes:
        return arg.tobytes()

    def dispatch(self, launch: Launch) -> None:
        items, written = [], []
        for a, value in zip(launch.prepared, launch.bindings):
            if isinstance(a, BufferArg):
                kind = protocol.READ if a.info.readonly else protocol.WRITE
                items.append((kind, value))
                if kind == protocol.WRITE:
                    written.append((a.ptr, a.nbytes))
            else:
                items.append((protocol.SCALAR, value))
        if len(items) > protocol.MAX_ARGS:
            raise LaunchError(f"kernel '{self.name}': at most {protocol.MAX_ARGS} arguments on Hexagon")
        data = protocol.encode(items, (*launch.grid, *launch.block))
        r = subprocess.run([self.tools.qemu, "-cpu", QEMU_CPU, "-s", str(launch.stack), self.exe], input=data,
                           capture_output=True)
        if r.returncode != 0:
            why = r.stderr.decode("utf-8", "replace").strip() or "no message"
            raise DeviceError(f"kernel '{self.name}' failed under {os.path.basename(self.tools.qemu)} "
                              f"(exit status {r.returncode}): {why}", code=r.returncode, name="emulated run failed")
        try:
            outs = protocol.split_outputs(r.stdout, [n for _, n in written])
        except ValueError as e:
            raise DeviceError(f"kernel '{self.name}': the emulated run returned incomplete results ({e})",
                              name="emulated run failed") from None
        launch.outputs = dict(zip(written, outs))  # (ptr, nbytes) -> the bytes the kernel left there

    def stage_out(self, launch: Launch, copies: List[HostCopy]) -> None:
        for hc in copies:
            raw = launch.outputs[(hc.arg.ptr, hc.nbytes)]
            _host_view(hc.arg).view(np.uint8).reshape(-1)[:] = np.frombuffer(raw, dtype=np.uint8)

    def __repr__(self) -> str:
        return f"<HexagonKernel {self.info.signature()} (emulated)>"
