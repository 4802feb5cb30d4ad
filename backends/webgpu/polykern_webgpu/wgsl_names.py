"""Identifier hygiene for generated WGSL.

Kernel variable names come from Python and may collide with WGSL keywords,
reserved words or the predeclared functions/types the emitter calls (a local
named ``min`` would shadow the ``min()`` builtin). Generated helper names all
start with ``pk_``. :class:`Namer` maps every user name to a WGSL-safe name that
is unique within one shader, deterministically.
"""
from __future__ import annotations

import re
from typing import Dict, Iterable

# WGSL keywords and reserved words (WGSL spec, "Keyword and reserved word summary").
KEYWORDS = frozenset("""
alias break case const const_assert continue continuing default diagnostic discard else enable
false fn for if let loop override requires return struct switch true var while
""".split())

RESERVED = frozenset("""
NULL Self abstract active alignas alignof as asm asm_fragment async attribute auto await become
binding_array cast catch class co_await co_return co_yield coherent column_major common compile
compile_fragment concept const_cast consteval constexpr constinit crate debugger decltype delete
demote demote_to_helper do dynamic_cast enum explicit export extends extern external fallthrough
filter final finally friend from fxgroup get goto groupshared highp impl implements import inline
instanceof interface layout lowp macro macro_rules match mediump meta mod module move mut mutable
namespace new nil noexcept noinline nointerpolation noperspective null nullptr of operator package
packoffset partition pass patch pixelfragment precise precision premerge priv protected pub public
readonly ref regardless register reinterpret_cast require resource restrict self set shared sizeof
smooth snorm static static_assert static_cast std subroutine super target template this
thread_local throw trait try type typedef typeid typename typeof union unless unorm unsafe unsized
use using varying virtual volatile wgsl where with writeonly yield
""".split())

# Predeclared names the emitter uses (shadowing them would break generated calls),
# plus the type names, which naga also refuses as identifiers.
PREDECLARED = frozenset("""
bool i32 u32 f32 f16 vec2 vec3 vec4 array atomic ptr mat2x2 mat3x3 mat4x4 sampler
select bitcast min max abs sqrt inverseSqrt exp exp2 log log2 sin cos tanh pow fma floor ceil trunc
atomicLoad atomicStore atomicAdd atomicMin atomicMax atomicExchange atomicCompareExchangeWeak
workgroupBarrier storageBarrier arrayLength read read_write uniform storage workgroup private
function PkArgs PkLaunch
""".split())

_IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$|^_[A-Za-z0-9_]+$")

HELPER_PREFIX = "pk_"


def _needs_rename(name: str) -> bool:
    return (
        not _IDENT.match(name)
        or name.startswith("__")
        or name.startswith(HELPER_PREFIX)
        or name in KEYWORDS
        or name in RESERVED
        or name in PREDECLARED
    )


class Namer:
    """Assigns WGSL names to user identifiers.

    Names that are already safe are kept verbatim, so the WGSL reads like the
    kernel; others get a ``_<n>`` suffix that collides with nothing else.
    """

    def __init__(self, user_names: Iterable[str]):
        ordered = list(dict.fromkeys(user_names))
        taken = {n for n in ordered if not _needs_rename(n)}
        self._map: Dict[str, str] = {}
        for name in ordered:
            if name in taken:
                self._map[name] = name
                continue
            base = re.sub(r"[^A-Za-z0-9_]", "_", name).lstrip("_") or "v"
            if base[0].isdigit():
                base = "v" + base
            if base.startswith(HELPER_PREFIX):
                base = "u" + base
            n = 1
            cand = f"{base}_{n}"
            while cand in taken or _needs_rename(cand):
                n += 1
                cand = f"{base}_{n}"
            taken.add(cand)
            self._map[name] = cand

    def __getitem__(self, name: str) -> str:
        return self._map[name]
