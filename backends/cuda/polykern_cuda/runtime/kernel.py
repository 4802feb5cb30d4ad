"""``CUDAKernel``: ``mod["k"](*args, grid=, block=)`` on the CUDA device.

One launch = ``check_args`` (LaunchError before anything touches the device), grid/block checks
against the device's limits and the kernel's own (register-bound) thread limit, then, with the
primary context current on this thread: buffer staging (``buffers.Staging``), the parameter
buffer packed from FunctionInfo (``abi.pack``), ``cuLaunchKernel`` on the legacy default stream,
a context synchronize (so kernel faults are reported by this call, as DeviceError with the
CUresult), copies back of written host arrays. Launches are synchronous; threads may launch at
once (each pushes the context on its own stack).
"""
from __future__ import annotations

from typing import Any, Tuple

import pycuda.driver as drv

from polykern.errors import DeviceError, LaunchError
from polykern.launch import BufferArg, check_args
from polykern.module import FunctionInfo

from . import abi
from .buffers import Staging
from .cuerrors import cuda_call

__all__ = ["CUDAKernel"]


class CUDAKernel:
    def __init__(self, module, info: FunctionInfo, loaded, entry: str):
        self.module = module  # keeps the module (and its loaded image) alive while the kernel is used
        self.info = info
        self.loaded = loaded
        self.entry = entry
        self.dev = loaded.dev
        FA = drv.function_attribute
        fn = loaded.function(entry)
        try:
            with self.dev.scope(), cuda_call(f"querying kernel '{info.name}'"):
                self.max_threads = int(fn.get_attribute(FA.MAX_THREADS_PER_BLOCK))
                self.num_regs = int(fn.get_attribute(FA.NUM_REGS))
        finally:
            fn = None  # see __call__

    @property
    def name(self) -> str:
        return self.info.name

    def __repr__(self) -> str:
        return f"<CUDAKernel {self.info.signature()} on cuda:{self.dev.ordinal}>"

    def check_limits(self, grid3: Tuple[int, int, int], block3: Tuple[int, int, int]) -> None:
        dev, where = self.dev, f"kernel '{self.name}'"
        for axis, (b, mb) in enumerate(zip(block3, dev.max_block)):
            if b > mb:
                raise LaunchError(f"{where}: block {block3} exceeds {dev.name}'s maximum block size {dev.max_block} "
                                  f"in dimension {'xyz'[axis]}")
        threads = block3[0] * block3[1] * block3[2]
        if threads > dev.max_threads:
            raise LaunchError(f"{where}: block {block3} has {threads} threads; {dev.name} allows {dev.max_threads} "
                              "per block")
        if threads > self.max_threads:
            raise LaunchError(f"{where}: block {block3} has {threads} threads, but this kernel uses {self.num_regs} "
                              f"registers per thread, so at most {self.max_threads} threads per block fit on "
                              f"{dev.name}; use a smaller block")
        for axis, (g, mg) in enumerate(zip(grid3, dev.max_grid)):
            if g > mg:
                raise LaunchError(f"{where}: grid {grid3} exceeds {dev.name}'s maximum grid size {dev.max_grid} "
                                  f"in dimension {'xyz'[axis]}")

    def __call__(self, *args: Any, grid=None, block=None) -> None:
        grid3, block3, prepared = check_args(self.info, args, grid, block)
        self.check_limits(grid3, block3)
        dev = self.dev
        scalars = {a.index: a.tobytes() for a in prepared if not isinstance(a, BufferArg)}
        fn = None
        with dev.scope():
            staging = Staging(dev, self.name)
            reusable = True
            try:
                for a in prepared:
                    if isinstance(a, BufferArg):
                        staging.add(a)
                params = abi.pack(self.info, scalars, staging.pointers)
                staging.synchronize_producers()
                fn = self.loaded.function(self.entry)
                with cuda_call(f"launching kernel '{self.name}'"):
                    fn._launch_kernel(grid3, block3, params, 0, None)
                with cuda_call(f"running kernel '{self.name}' (grid {grid3}, block {block3})"):
                    drv.Context.synchronize()
                dev.count("launches")
                staging.copy_back()
            except DeviceError as e:
                reusable = not getattr(e, "sticky", False)
                raise
            finally:
                # A pycuda Function keeps its module alive; a traceback keeps this frame: drop it here so
                # the module is never freed later on a thread where its context is not current.
                fn = None
                staging.release(reusable)
