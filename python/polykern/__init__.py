"""polykern: compile Python compute kernels for every major backend, ship one .kbin artifact.

    import polykern as pk
    from polykern import f32, i32, Buffer

    @pk.kernel
    def saxpy(n: i32, a: f32, x: Buffer[f32], y: Buffer[f32]):
        i = pk.global_id(0)
        if i < n:
            y[i] = a * x[i] + y[i]

    mod = pk.build([saxpy], targets=["llvm", "vulkan"])
    mod.export("k.bin")
    pk.load("k.bin")["saxpy"](n, 2.0, x, y, grid=(n + 255) // 256, block=256)
"""
from . import errors  # noqa: F401
from .ir.types import (Buffer, bf16, bool_, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32,  # noqa: F401
                       u64)
from .ir.bfloat16 import BF16_DTYPE, bf16_array, bf16_to_f32  # noqa: F401
from .lang.builtins import (atomic_add, atomic_cas, atomic_max, atomic_min, atomic_xchg,  # noqa: F401
                            barrier, ceil, cos, debug_print, exp, exp2, floor, fma, global_id, group_id, local,
                            local_id, local_size, log, log2, num_groups, pow, rsqrt, select, shared,
                            shared_dynamic, sin, sqrt, tanh, vload, vstore)
from .lang.builtins import (subgroup_add, subgroup_all, subgroup_any, subgroup_broadcast_first,  # noqa: F401
                            subgroup_id, subgroup_local_id, subgroup_max, subgroup_min, subgroup_shuffle,
                            subgroup_shuffle_xor, subgroup_size)
from .lang.builtins import (frag_a, frag_acc, frag_b, frag_fill, frag_load, frag_scale,  # noqa: F401
                            frag_store, mma)
from .lang.builtins import copy_async, copy_commit, copy_wait  # noqa: F401
from .lang.builtins import fast_div, fast_exp, fast_exp2, fast_log, fast_log2, fast_rsqrt  # noqa: F401
from .lang.builtins import (mbarrier_arrive, mbarrier_arrive_tx, mbarrier_init, mbarrier_wait,  # noqa: F401
                            mbarriers, named_arrive, named_barrier, setmaxnreg, tensor_map, tma_load, warpgroup_id,
                            warpgroups, wg_acc, wg_elements, wg_fill, wg_row_max, wg_row_sum, wg_rows, wg_store,
                            wg_vec, wgmma, wgmma_commit, wgmma_kn, wgmma_wait)
from .lang.builtins import abs, max, min  # noqa: F401,A004
from .lang.kernel import Kernel, kernel  # noqa: F401
from .lang.annotations import Local, MBarriers, Shared, TensorMap, WgAcc, WgVec, constexpr, dtype  # noqa: F401
from .lang.functions import Func, func  # noqa: F401

from .version import __version__  # noqa: E402,F401
from .streams import Event, Graph, Stream, default_stream, stream, synchronize  # noqa: E402,F401
from .user_tracebacks import entry_point as _entry_point  # noqa: E402


@_entry_point
def build(kernels, targets=("llvm",), *, bounds_check=None, fast_math=False):
    """Compile kernels for targets; see :func:`polykern.pipeline.build` (``bounds_check=True``: checked mode;
    ``fast_math=True``: f32 exp/exp2/log/log2/rsqrt and ``/`` within the fast-math promises)."""
    from .pipeline import build as _build

    return _build(kernels, targets, bounds_check=bounds_check, fast_math=fast_math)


def autotune(configs, key=(), **options):
    """Decorator: tune a kernel over launch/constexpr configurations; see :mod:`polykern.autotuning`."""
    from .autotuning import autotune as _autotune

    return _autotune(configs, key, **options)


@_entry_point
def load(path_or_bytes, strict: bool = False):
    """Load a .kbin artifact (a path or its bytes); see :func:`polykern.artifact.load`."""
    from .artifact import load as _load

    return _load(path_or_bytes, strict=strict)


def to_device(array, *, device="cpu"):
    """A copy of ``array`` on ``device`` ("cpu", "cuda:0", "opencl:1", "vulkan", "webgpu"); see
    :mod:`polykern.runtime.devices`."""
    from .runtime.devices import to_device as _to_device

    return _to_device(array, device=device)


def empty(shape, dtype, *, device="cpu"):
    """An uninitialized array on ``device``; see :mod:`polykern.runtime.devices`."""
    from .runtime.devices import empty as _empty

    return _empty(shape, dtype, device=device)


def zeros(shape, dtype, *, device="cpu"):
    """A zero-filled array on ``device``; see :mod:`polykern.runtime.devices`."""
    from .runtime.devices import zeros as _zeros

    return _zeros(shape, dtype, device=device)


def _public_names():
    """What ``from polykern import *`` binds: the types, builtins, decorators and entry points, but no
    submodule and no name of Python's own (``abs``, ``max``, ``min``, ``pow``: write ``pk.max``; inside a
    kernel Python's ``abs``/``max``/``min``/``pow`` mean the same builtins anyway)."""
    import builtins as python
    import types

    return sorted(name for name, value in globals().items()
                  if not name.startswith("_") and not isinstance(value, types.ModuleType)
                  and not hasattr(python, name))


__all__ = _public_names()


def __getattr__(name):
    # Submodules that need registry/backends are imported on first use to keep `import polykern` light.
    if name in ("backends", "registry", "target", "module", "artifact", "pipeline"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'polykern' has no attribute {name!r}")
