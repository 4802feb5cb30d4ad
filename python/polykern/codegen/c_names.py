"""C identifiers for IR names: keywords and builtins of every C-like dialect are avoided.

IR names are the user's own (a parameter may be called ``int`` or ``loop``: the names are the ABI),
and a backend must print any verified IR, so the source emitter maps every IR name through
:class:`NameTable`.
Mapping is deterministic (same IR, same names) and the same for CUDA C, OpenCL C and MSL, so the
three sources read alike.
"""
from __future__ import annotations

import re
from typing import Dict, Iterable

# Keywords, type names and builtins of C99, C++ (CUDA, MSL), OpenCL C and MSL, plus the builtin
# function names the emitters print. A kernel variable named like one of these is suffixed with "_".
RESERVED = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char16_t char32_t class
compl const constexpr const_cast constant continue decltype default delete device do double
dynamic_cast else enum explicit export extern false float for friend goto half if inline int kernel
long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public
register reinterpret_cast restrict return short signed sizeof static static_assert static_cast struct
switch template this thread thread_local threadgroup throw true try typedef typeid typename union
unsigned using virtual void volatile wchar_t while xor xor_eq
__global __local __constant __private __kernel global local private read_only write_only read_write
uchar ushort uint ulong size_t ptrdiff_t intptr_t uintptr_t sampler_t image1d_t image2d_t image3d_t
event_t cl_mem main vertex fragment
threadIdx blockIdx blockDim gridDim warpSize atomicAdd atomicMin atomicMax atomicExch atomicCAS
get_global_id get_local_id get_group_id get_local_size get_num_groups barrier mem_fence
threadgroup_barrier mem_flags memory_order_relaxed as_type metal
sqrt sqrtf rsqrt rsqrtf exp expf exp2 exp2f log logf log2 log2f sin sinf cos cosf tanh tanhf pow powf
fabs fabsf abs llabs min max fmin fminf fmax fmaxf fma fmaf floor floorf ceil ceilf fmod fmodf select
vload_half vstore_half vstore_half_rte atomic_add atomic_min atomic_max atomic_xchg atomic_cmpxchg
atom_add atom_min atom_max atom_xchg atom_cmpxchg as_float as_uint as_double as_ulong
INFINITY NAN
""".split())

_VECTOR_TYPE = re.compile(r"^(bool|char|uchar|short|ushort|int|uint|long|ulong|half|float|double)\d+$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_reserved(name: str) -> bool:
    return (name in RESERVED or bool(_VECTOR_TYPE.match(name)) or name.startswith("pk_")
            or name.startswith("__") or (name.startswith("_") and name[1:2].isupper()))


def ascii_ident(name: str) -> str:
    """``name`` as an ASCII C identifier (Python allows Unicode identifiers; C compilers differ)."""
    if _IDENT.match(name):
        return name
    out = "".join(c if (c.isascii() and (c.isalnum() or c == "_")) else f"u{ord(c):04x}" for c in name)
    return out if out and not out[0].isdigit() else "v_" + out


class NameTable:
    """IR name -> unique C identifier for one kernel (and its kernel name)."""

    def __init__(self, names: Iterable[str]):
        self._map: Dict[str, str] = {}
        taken = set()
        for name in names:  # in declaration order: params, locals, arrays
            c = _unreserve(ascii_ident(name))
            base, n = c, 2
            while c in taken or is_reserved(c):
                c, n = f"{base}{n}", n + 1
            taken.add(c)
            self._map[name] = c

    def __getitem__(self, name: str) -> str:
        return self._map[name]

    def items(self):
        return self._map.items()


def _unreserve(c: str) -> str:
    if c.startswith("pk_") or c.startswith("_"):
        c = "v" + c  # a prefix reserved to polykern or the implementation: no suffix can fix it
    return c + "_" if is_reserved(c) else c


def kernel_symbol(name: str) -> str:
    """The C symbol of a kernel (recorded as FunctionInfo.attrs["entry"])."""
    return _unreserve(ascii_ident(name))
