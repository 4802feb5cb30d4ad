"""The Metal Shading Language dialect of the shared C-like emitter (``polykern.codegen.c_source``).

Decisions:
- One self-contained shader source per kernel (``#include <metal_stdlib>``, its helpers, the kernel).
- Argument binding: kernel argument ``i`` is ``[[buffer(i)]]``; buffers are ``device T*`` (``device
  const T*`` when readonly), scalars are ``constant T&`` (the runtime passes them with ``setBytes``).
  Special registers come in as ``uint3`` attributes (``thread_position_in_grid`` ...), declared only
  when the kernel uses them; they are converted to ``int`` like every backend's.
- ``half`` is native. Metal has no ``double``: any f64 is refused at compile time.
- bool is ``uchar`` in memory and parameters (1 byte, 0/1), ``bool`` in registers.
- Atomics: ``atomic_int``/``atomic_uint`` functions (relaxed order) on device and threadgroup memory,
  reached by casting the element pointer; ``atomic_cas`` is a strong CAS built from
  ``atomic_compare_exchange_weak_explicit``; f32 add/min/max/xchg/cas go through ``atomic_uint``
  (float atomics need MSL 3.0 and only cover device memory). 8/16/64-bit atomics are refused.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from polykern.codegen.c_dialect import SPACE_GLOBAL, SPACE_SHARED, UNARY, CDialect, Code, TranslationUnit
from polykern.ir.types import ArrayType, ScalarType, bool_, f16, f32, f64, u16

from . import msl_matrix

_MATH = {f: f for f in ("sqrt", "rsqrt", "exp", "exp2", "log", "log2", "sin", "cos", "tanh", "pow", "fma",
                        "floor", "ceil", "fmod")}
_MATH.update({"abs": "fabs", "min": "fmin", "max": "fmax"})
# Metal compiles with fast math by default (pow undefined for x < 0, NaN and infinities not
# honoured, loose bounds): the f32 transcendentals use the precise:: variants, whose accuracy and
# special values are what polykern.numerics records for metal whatever the compile options.
_MATH_F32 = dict(_MATH, **{f: f"precise::{f}" for f in ("sqrt", "rsqrt", "exp", "exp2", "log", "log2", "sin",
                                                       "cos", "tanh", "pow", "fmod")})

# (parameter name, attribute) per special register.
_SG_REG = {"subgroup_size": ("pk_simd_width", "threads_per_simdgroup"),
           "subgroup_local_id": ("pk_simd_lane", "thread_index_in_simdgroup"),
           "subgroup_id": ("pk_simd_group", "simdgroup_index_in_threadgroup")}
_REG = {"global_id": ("pk_global_id", "thread_position_in_grid"),
        "local_id": ("pk_local_id", "thread_position_in_threadgroup"),
        "group_id": ("pk_group_id", "threadgroup_position_in_grid"),
        "local_size": ("pk_local_size", "threads_per_threadgroup"),
        "num_groups": ("pk_num_groups", "threadgroups_per_grid")}
_SPACE = {SPACE_GLOBAL: "device", SPACE_SHARED: "threadgroup"}
_ATOMIC_TYPE = {"i32": "atomic_int", "u32": "atomic_uint"}
_FN_NAME = {"add": "atomic_fetch_add_explicit", "min": "atomic_fetch_min_explicit",
            "max": "atomic_fetch_max_explicit", "xchg": "atomic_exchange_explicit"}
_COMBINE = {"add": "{a} + {b}", "min": "fmin({a}, {b})", "max": "fmax({a}, {b})"}


class MetalDialect(CDialect):
    name = "metal"
    language = "Metal Shading Language"
    half_native = True
    fn_qualifier = "inline"
    F32_AS_U32, U32_AS_F32 = "as_type<uint>({})", "as_type<float>({})"  # ir.Bitcast (bf16 conversions)
    TYPE_NAMES = {
        "bool": "bool", "i8": "char", "i16": "short", "i32": "int", "i64": "long",
        "u8": "uchar", "u16": "ushort", "u32": "uint", "u64": "ulong",
        "f16": "half", "f32": "float", "f64": "double",
    }
    MATH_F16 = _MATH
    MATH_F32 = _MATH_F32
    MATH_F64 = _MATH
    INT_MATH = {"abs": "abs", "min": "min", "max": "max"}
    # MSL vector types are aligned to their size (codegen only here: no Metal compiler on this host)
    VECTOR_STEMS = {"f32": "float", "i32": "int", "u32": "uint", "i64": "long", "u64": "ulong", "i16": "short",
                    "u16": "ushort", "i8": "char", "u8": "uchar"}

    def vector_pointer(self, vt, base, readonly):
        return f"((device {'const ' if readonly else ''}{vt}*){base})"

    def vector_value(self, vt, parts):
        return f"{vt}({', '.join(parts)})"

    def unsupported_type(self, t: ScalarType) -> Optional[str]:
        if t == f64:
            return "the Metal Shading Language has no double-precision type; use f32"
        return None

    def storage_type(self, t: ScalarType) -> str:
        return "uchar" if t == bool_ else super().storage_type(t)

    def int_suffix(self, t: ScalarType) -> str:
        return {"u32": "u", "i64": "L", "u64": "UL"}.get(t.name, "")

    def half_literal(self, digits: str) -> str:
        return f"{digits}h"

    def int_math(self, unit, func, t, args):
        if func in ("abs", "min", "max") and t != bool_ and (t.is_signed or func != "abs"):
            return Code(f"{func}({', '.join(a.text for a in args)})")  # overloaded for every integer type
        return super().int_math(unit, func, t, args)

    # ---------------------------------------------------------------- memory and parameters
    def load(self, unit, base, index, t, space):
        if t == bool_:
            return Code(f"(bool){base}[{index}]", UNARY)
        return Code(f"{base}[{index}]")

    def dynamic_shared_param(self, name, arr):
        # setThreadgroupMemoryLength(bytes, index: 0) at dispatch
        return f"threadgroup {self.storage_type(arr.elem)}* {name} [[threadgroup(0)]]"

    def dynamic_shared_decl(self, name, arr):
        return None

    def array_decl(self, name: str, arr: ArrayType) -> str:
        q = "threadgroup " if arr.scope == "shared" else ""
        return f"{q}{self.storage_type(arr.elem)} {name}[{arr.size}];"

    def param_decl(self, name, p, index):
        if p.is_buffer:
            const = "const " if p.type.readonly else ""
            return f"device {const}{self.storage_type(p.type.elem)}* {name} [[buffer({index})]]"
        return f"constant {self.storage_type(p.type)}& {name} [[buffer({index})]]"

    def scalar_param_prologue(self, unit, name, raw, t):
        if t == bool_:
            return f"bool {name} = (bool){raw};"
        return None

    def kernel_signature(self, symbol: str, params: List[str], regs: Sequence[Tuple[str, int]]) -> str:
        kinds = []
        for kind, _ in regs:
            if kind not in kinds:
                kinds.append(kind)
        params = params + [f"{'uint' if k in _SG_REG else 'uint3'} {_REG.get(k, _SG_REG.get(k))[0]} "
                           f"[[{_REG.get(k, _SG_REG.get(k))[1]}]]" for k in kinds]
        if len(params) <= 2:
            return f"kernel void {symbol}({', '.join(params)})"
        inner = ",\n".join(self.indent + p for p in params)
        return f"kernel void {symbol}(\n{inner})"

    def special_reg(self, kind: str, dim: int) -> Code:
        return Code(f"(int){_REG[kind][0]}.{'xyz'[dim]}", UNARY)

    def barrier(self) -> str:
        return "threadgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_device);"

    def matrix(self, em, s) -> None:
        """Matrix fragments: simdgroup matrices (msl_matrix.py)."""
        msl_matrix.emit(em, s)

    def subgroup(self, unit: TranslationUnit, op: str, t: ScalarType, args: List[Code]) -> Code:
        """SIMD-group functions (MSL 2.1+); the three registers are kernel parameters."""
        if op in ("size", "local_id", "id"):
            return Code(f"(int){_SG_REG['subgroup_' + op][0]}", UNARY)
        if t.bits == 64:
            raise self.refuse(f"subgroup_{op}() on {t}", "Metal's SIMD-group functions take 32-bit (and "
                              "16-bit) values; cast to i32, u32 or f32")
        v = args[0].text
        if op in ("shuffle", "shuffle_xor"):  # the lane (mask) modulo the SIMD-group width
            width = _SG_REG["subgroup_size"][0]
            return Code(f"simd_{op}({v}, (ushort)((uint){args[1].at(UNARY)} & ({width} - 1u)))")
        name = {"add": "simd_sum"}.get(op, f"simd_{op}")
        return Code(f"{name}({v})")

    def prologue(self, unit: TranslationUnit) -> List[str]:
        return ["#include <metal_stdlib>", "using namespace metal;"]

    # ---------------------------------------------------------------- atomics
    def atomic(self, unit: TranslationUnit, op: str, t: ScalarType, space: str, ptr: str, value: Code,
               compare: Optional[Code]) -> Code:
        q = _SPACE[space]
        if t.name in _ATOMIC_TYPE and op != "cas":
            at = _ATOMIC_TYPE[t.name]
            return Code(f"{_FN_NAME[op]}(({q} {at}*){ptr}, {value}, memory_order_relaxed)")
        if t.name in _ATOMIC_TYPE or t == f32:
            name = self._helper(unit, op, t, space)
            args = [value] if compare is None else [compare, value]
            return Code(f"{name}({ptr}, {', '.join(a.text for a in args)})")
        raise self.refuse(f"atomic_{op} on {t}", "Metal atomics cover 32-bit types (int, uint, float) only")

    def _helper(self, unit: TranslationUnit, op: str, t: ScalarType, space: str) -> str:
        q = _SPACE[space]
        vt = self.TYPE_NAMES[t.name]
        name = f"pk_atomic_{op}_{t.name}_{space}"
        if t == f32:
            word, at = "uint", "atomic_uint"
            to_bits, from_bits = "as_type<uint>({})", "as_type<float>({})"
        else:
            word, at = vt, _ATOMIC_TYPE[t.name]
            to_bits = from_bits = "{}"
        if op == "xchg":
            call = "atomic_exchange_explicit(({} {}*)p, {}, memory_order_relaxed)".format(q, at, to_bits.format("v"))
            src = (f"inline {vt} {name}({q} {vt}* p, {vt} v) {{\n"
                   f"    return {from_bits.format(call)};\n"
                   f"}}")
            return unit.helper(name, src)
        if op == "cas":
            note = "// atomic_cas on f32: compares bit patterns.\n" if t == f32 else ""
            src = (f"{note}// A strong compare-and-swap from the weak one; returns the old value.\n"
                   f"inline {vt} {name}({q} {vt}* p, {vt} cmp, {vt} v) {{\n"
                   f"    {word} want = {to_bits.format('cmp')};\n"
                   f"    {word} seen = want;\n"
                   f"    while (!atomic_compare_exchange_weak_explicit(({q} {at}*)p, &seen, {to_bits.format('v')},\n"
                   f"                                                  memory_order_relaxed, memory_order_relaxed)) {{\n"
                   f"        if (seen != want) {{\n"
                   f"            break;\n"
                   f"        }}\n"
                   f"    }}\n"
                   f"    return {from_bits.format('seen')};\n"
                   f"}}")
            return unit.helper(name, src)
        new = _COMBINE[op].format(a=from_bits.format("seen"), b="v")
        src = (f"inline {vt} {name}({q} {vt}* p, {vt} v) {{\n"
               f"    {q} {at}* a = ({q} {at}*)p;\n"
               f"    {word} seen = atomic_load_explicit(a, memory_order_relaxed);\n"
               f"    while (!atomic_compare_exchange_weak_explicit(a, &seen, {to_bits.format(new)},\n"
               f"                                                  memory_order_relaxed, memory_order_relaxed)) {{\n"
               f"    }}\n"
               f"    return {from_bits.format('seen')};\n"
               f"}}")
        return unit.helper(name, src)


DIALECT = MetalDialect()
