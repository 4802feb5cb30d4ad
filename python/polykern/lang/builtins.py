"""The builtins of the kernel language (``pk.global_id``, ``pk.barrier``, ``pk.sqrt`` ...).

They are markers: the frontend recognizes them by identity while translating a kernel's AST. Calling
one from ordinary Python raises a clear error, because kernels are never executed by CPython.
"""
from __future__ import annotations

import builtins as _py
import math as _math

from ..errors import KernelSyntaxError


class Builtin:
    __slots__ = ("name", "category")

    def __init__(self, name: str, category: str):
        self.name = name
        self.category = category

    def __call__(self, *args, **kwargs):
        raise KernelSyntaxError(
            f"pk.{self.name}() can only be used inside a @pk.kernel function; kernels are compiled, "
            "not run by Python"
        )

    def __repr__(self) -> str:
        return f"<polykern builtin {self.name}>"


_SPECIAL = ("global_id", "local_id", "group_id", "local_size", "num_groups")
_MATH = ("sqrt", "rsqrt", "exp", "exp2", "log", "log2", "sin", "cos", "tanh", "pow", "fma", "abs", "min",
         "max", "floor", "ceil", "fast_exp", "fast_exp2", "fast_log", "fast_log2", "fast_rsqrt", "fast_div")
_ATOMIC = ("atomic_add", "atomic_min", "atomic_max", "atomic_xchg", "atomic_cas")
_OTHER = {"barrier": "barrier", "select": "select", "shared": "alloc", "local": "alloc", "vload": "vector",
          "shared_dynamic": "alloc",
          "vstore": "vector", "debug_print": "debug"}

# pk.subgroup_<op> (docs/language.md "Subgroups"): ir.SUBGROUP_OPS with the prefix.
_SUBGROUP = ("subgroup_size", "subgroup_local_id", "subgroup_id", "subgroup_shuffle", "subgroup_shuffle_xor",
             "subgroup_add", "subgroup_min", "subgroup_max", "subgroup_any", "subgroup_all",
             "subgroup_broadcast_first")

# Matrix fragments (docs/language.md "Matrix fragments"; lang/matrix.py).
_MATRIX = ("frag_a", "frag_b", "frag_acc", "frag_fill", "frag_load", "frag_store", "frag_scale", "mma")

# Asynchronous copies into shared memory (docs/language.md "Asynchronous copies"; lang/async_copy.py).
_COPY = ("copy_async", "copy_commit", "copy_wait")

# Hopper: warpgroup MMA, tensor copies, transaction barriers (docs/language.md; lang/hopper.py).
_HOPPER = ("warpgroups", "mbarriers", "tensor_map", "wg_acc", "mbarrier_init", "mbarrier_arrive", "mbarrier_arrive_tx",
           "mbarrier_wait", "tma_load", "wg_fill", "wgmma", "wgmma_commit", "wgmma_wait", "wg_store", "setmaxnreg",
           "wg_vec", "wgmma_kn", "wg_row_max", "wg_row_sum", "wg_elements", "wg_rows",
           "named_barrier", "named_arrive")

BUILTINS = {}
for _n in _HOPPER:
    BUILTINS[_n] = Builtin(_n, "hopper")
BUILTINS["warpgroup_id"] = Builtin("warpgroup_id", "warpgroup")
for _n in _COPY:
    BUILTINS[_n] = Builtin(_n, "copy")
for _n in _MATRIX:
    BUILTINS[_n] = Builtin(_n, "matrix")
for _n in _SUBGROUP:
    BUILTINS[_n] = Builtin(_n, "subgroup")
for _n in _SPECIAL:
    BUILTINS[_n] = Builtin(_n, "special")
for _n in _MATH:
    BUILTINS[_n] = Builtin(_n, "math")
for _n in _ATOMIC:
    BUILTINS[_n] = Builtin(_n, "atomic")
for _n, _c in _OTHER.items():
    BUILTINS[_n] = Builtin(_n, _c)

globals().update(BUILTINS)

# Python functions that mean the same thing inside a kernel.
PYTHON_ALIASES = {
    id(_py.min): "min", id(_py.max): "max", id(_py.abs): "abs", id(_py.pow): "pow",
    id(_math.sqrt): "sqrt", id(_math.exp): "exp", id(_math.log): "log", id(_math.log2): "log2",
    id(_math.sin): "sin", id(_math.cos): "cos", id(_math.tanh): "tanh", id(_math.pow): "pow",
    id(_math.floor): "floor", id(_math.ceil): "ceil", id(_math.fabs): "abs",
}
if hasattr(_math, "exp2"):
    PYTHON_ALIASES[id(_math.exp2)] = "exp2"
if hasattr(_math, "fma"):
    PYTHON_ALIASES[id(_math.fma)] = "fma"

__all__ = sorted(BUILTINS)
