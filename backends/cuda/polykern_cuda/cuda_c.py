"""The CUDA C dialect of the shared C-like emitter (``polykern.codegen.c_source``).

Decisions:
- No ``#include``: the source compiles with NVRTC alone (which ships no ``cuda_fp16.h``), so f16 is
  storage-only: ``unsigned short`` in memory, ``float`` in registers, converted with the PTX
  ``cvt`` instructions through inline asm and rounded to half after every operation.
- Kernels are ``extern "C" __global__`` so their symbol is the kernel name.
- Atomics: native ``atomicAdd/Min/Max/Exch/CAS`` where CUDA has the overload (sm_75+, the oldest
  architecture CUDA 13 supports); float min/max, 16-bit and bit-pattern float CAS go through an
  ``atomicCAS`` loop. A float ``atomic_cas`` compares bit patterns (so -0.0 != 0.0, NaN == same NaN).
  8-bit and bool atomics are refused (CUDA has no 8-bit ``atomicCAS``).
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from polykern.codegen.c_dialect import ATOM, UNARY, CDialect, Code, TranslationUnit
from polykern.ir.types import ScalarType, f16, f64

from . import cp_async, hopper, mma_sync

_F32 = {"sqrt": "sqrtf", "rsqrt": "rsqrtf", "exp": "expf", "exp2": "exp2f", "log": "logf", "log2": "log2f",
        "sin": "sinf", "cos": "cosf", "tanh": "tanhf", "pow": "powf", "abs": "fabsf", "min": "fminf",
        "max": "fmaxf", "fma": "fmaf", "floor": "floorf", "ceil": "ceilf", "fmod": "fmodf"}
_F64 = {"sqrt": "sqrt", "rsqrt": "rsqrt", "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2",
        "sin": "sin", "cos": "cos", "tanh": "tanh", "pow": "pow", "abs": "fabs", "min": "fmin",
        "max": "fmax", "fma": "fma", "floor": "floor", "ceil": "ceil", "fmod": "fmod"}

# Fast math (numerics.FAST_MATH["cuda"]): the PTX approximations CUDA C has no intrinsic for.
_FAST_HELPERS = {name: f"""{{fn}} float {name}(float x) {{{{
    float y;
    asm("{instr} %0, %1;" : "=f"(y) : "f"(x));
    return y;
}}}}""" for name, instr in (("pk_fast_exp2", "ex2.approx.ftz.f32"), ("pk_fast_rsqrt", "rsqrt.approx.ftz.f32"))}

_REG = {"local_id": "threadIdx", "group_id": "blockIdx", "local_size": "blockDim", "num_groups": "gridDim"}
_XYZ = "xyz"
_FN = "static __device__ __forceinline__"

_INDENT = "    "
_TID = "(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))"

_HELPERS = {
    "pk_sg_local_id": (f"""{{fn}} unsigned pk_sg_local_id() {{{{ return {_TID} & 31u; }}}}""", ()),
    "pk_sg_id": (f"""{{fn}} unsigned pk_sg_id() {{{{ return {_TID} >> 5; }}}}""", ()),
    "pk_sg_mask": (f"""// the lanes of this thread's warp that exist (the block's last warp may be partial)
{{fn}} unsigned pk_sg_mask() {{{{
    unsigned n = blockDim.x * blockDim.y * blockDim.z - ({_TID} & ~31u);
    return n >= 32u ? 0xffffffffu : (1u << n) - 1u;
}}}}""", ()),
    "pk_f2h": ("""{fn} unsigned short pk_f2h(float x) {{
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
    return h;
}}""", ()),
    "pk_d2h": ("""{fn} unsigned short pk_d2h(double x) {{
    unsigned short h;
    asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h) : "d"(x));
    return h;
}}""", ()),
    "pk_h2f": ("""{fn} float pk_h2f(unsigned short h) {{
    float x;
    asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(h));
    return x;
}}""", ()),
    "pk_f16": ("""// f16 arithmetic: computed in float, rounded to half (round to nearest even).
{fn} float pk_f16(float x) {{ return pk_h2f(pk_f2h(x)); }}""", ("pk_f2h", "pk_h2f")),
    "pk_f16_from_f64": ("""{fn} float pk_f16_from_f64(double x) {{ return pk_h2f(pk_d2h(x)); }}""",
                        ("pk_d2h", "pk_h2f")),
}

_NATIVE_ATOMIC = {
    "add": ("i32", "u32", "u64", "f32", "f64"),
    "min": ("i32", "u32", "i64", "u64"),
    "max": ("i32", "u32", "i64", "u64"),
    "xchg": ("i32", "u32", "u64", "f32"),
    "cas": ("i32", "u32", "u64"),
}
_ATOMIC_FN = {"add": "atomicAdd", "min": "atomicMin", "max": "atomicMax", "xchg": "atomicExch", "cas": "atomicCAS"}

# Types handled by an atomicCAS loop: value type, memory type, CAS word type, to-bits, from-bits.
_CAS_TYPES = {
    "f32": ("float", "float", "unsigned int", "__float_as_uint({})", "__uint_as_float({})"),
    "f64": ("double", "double", "unsigned long long",
            "(unsigned long long)__double_as_longlong({})", "__longlong_as_double((long long){})"),
    "f16": ("float", "unsigned short", "unsigned short", "pk_f2h({})", "pk_h2f({})"),
    "i16": ("short", "short", "unsigned short", "(unsigned short)({})", "(short){}"),
    "u16": ("unsigned short", "unsigned short", "unsigned short", "(unsigned short)({})", "{}"),
}
_COMBINE = {
    "add": "{a} + {b}",
    "xchg": "{b}",
    "min": {"f32": "fminf({a}, {b})", "f64": "fmin({a}, {b})", "f16": "fminf({a}, {b})", "": "{a} < {b} ? {a} : {b}"},
    "max": {"f32": "fmaxf({a}, {b})", "f64": "fmax({a}, {b})", "f16": "fmaxf({a}, {b})", "": "{a} > {b} ? {a} : {b}"},
}


class CUDADialect(CDialect):
    name = "cuda"
    FAST_HELPERS = _FAST_HELPERS
    language = "CUDA C"
    half_native = False
    fn_qualifier = _FN
    F32_AS_U32, U32_AS_F32 = "__float_as_uint({})", "__uint_as_float({})"  # ir.Bitcast (bf16 conversions)
    TYPE_NAMES = dict(CDialect.TYPE_NAMES, f16="unsigned short")
    MATH_F32 = _F32
    MATH_F64 = _F64
    INT_MATH = {"abs": "abs", "abs64": "llabs", "min": "min", "max": "max"}
    opaque_narrow_negation = True
    asm_keyword = "asm"
    # CUDA's vector types (aligned to their size, so nvcc emits ld/st.global.v2/v4).
    # f16 is stored as its bits (unsigned short): its vectors are ushort2/4, converted lane by lane
    VECTOR_STEMS = {"f32": "float", "f64": "double", "i32": "int", "u32": "uint", "i64": "longlong",
                    "u64": "ulonglong", "i16": "short", "u16": "ushort", "i8": "char", "u8": "uchar",
                    "f16": "ushort"}

    def vector_value(self, vt, parts):
        return f"make_{vt}({', '.join(parts)})"

    def vector_lane(self, unit, lane, t):
        return f"{unit.helper('pk_h2f')}({lane})" if t == f16 else lane

    def vector_part(self, unit, value, t):
        if t != f16:
            return value.text
        return value.bits if value.bits is not None else f"{unit.helper('pk_f2h')}({value.unrounded or value.text})"

    def float_special(self, value: float, t: ScalarType) -> Code:
        if t == f64:
            bits = "0x7ff8000000000000" if value != value else ("0x7ff0000000000000" if value > 0 else
                                                               "0xfff0000000000000")
            return Code(f"__longlong_as_double({bits}ll)")
        bits = "0x7fc00000" if value != value else ("0x7f800000" if value > 0 else "0xff800000")
        return Code(f"__int_as_float({bits})")

    # ---------------------------------------------------------------- memory and parameters
    def load(self, unit, base, index, t, space):
        if t == f16:
            return Code(f"{unit.helper('pk_h2f')}({base}[{index}])", bits=f"{base}[{index}]")
        return Code(f"{base}[{index}]")

    def store(self, unit, base, index, value, t, space):
        if t == f16 and value.bits is not None:  # a copy: move the 16 bits
            return f"{base}[{index}] = {value.bits};"
        if t == f16:  # pk_f2h rounds to half itself
            return f"{base}[{index}] = {unit.helper('pk_f2h')}({value.unrounded or value.text});"
        return f"{base}[{index}] = {value};"

    def dynamic_shared_decl(self, name, arr):
        # One untyped extern array for every kernel (kernels of one file may type theirs differently).
        return (f"extern __shared__ __align__(16) unsigned char pk_dynamic_shared[]; "
                f"{self.storage_type(arr.elem)}* {name} = ({self.storage_type(arr.elem)}*)pk_dynamic_shared;")

    def array_decl(self, name, arr):
        q = "__shared__ __align__(16) " if arr.scope == "shared" else ""  # vector and ldmatrix accesses
        return f"{q}{self.storage_type(arr.elem)} {name}[{arr.size}];"

    def param_decl(self, name, p, index):
        if p.is_buffer:
            const = "const " if p.type.readonly else ""
            return f"{const}{self.storage_type(p.type.elem)}* {name}"
        return f"{self.storage_type(p.type)} {name}"

    def scalar_param_prologue(self, unit, name, raw, t):
        if t == f16:
            return f"float {name} = {unit.helper('pk_h2f')}({raw});"
        return None

    def kernel_signature(self, symbol: str, params: List[str], regs: Sequence[Tuple[str, int]]) -> str:
        return f'extern "C" __global__ void {symbol}({", ".join(params)})'

    def special_reg(self, kind: str, dim: int) -> Code:
        c = _XYZ[dim]
        if kind == "global_id":
            return Code(f"(int)(blockIdx.{c} * blockDim.{c} + threadIdx.{c})", UNARY)
        return Code(f"(int){_REG[kind]}.{c}", UNARY)

    def barrier(self) -> str:
        return "__syncthreads();"

    def matrix(self, em, s) -> None:
        """Matrix fragments: mma.sync through inline PTX (mma_sync.py)."""
        mma_sync.emit_c(em, s)

    def async_copy(self, em, s) -> None:
        """Asynchronous copies: cp.async through inline PTX (cp_async.py; sm_80+)."""
        cp_async.emit_c(em, s)

    def hopper(self, em, s) -> None:
        """Hopper operations (hopper.py; sm_90a, checked by the pipeline)."""
        hopper.emit_c(em, s)

    def hidden_params(self, fn):
        return hopper.hidden_params(fn)

    def signature_attributes(self, fn, head: str) -> str:
        bounds = hopper.launch_bounds(fn)
        return head.replace("__global__ void ", "__global__ void " + bounds, 1) if bounds else head

    def kernel_declarations(self, em) -> None:
        hopper.declarations(em)

    def subgroup(self, unit: TranslationUnit, op: str, t: ScalarType, args: List[Code]) -> Code:
        """Subgroups are warps of 32 lanes over the block's linear thread index (docs/language.md)."""
        if op == "size":
            return Code("32")
        if op in ("local_id", "id"):
            return Code(f"(int){unit.helper('pk_sg_' + op)}()", UNARY)
        mask = f"{unit.helper('pk_sg_mask')}()"
        v = args[0].text
        if op == "shuffle":  # __shfl_sync reads lane (lane % 32)
            return Code(f"__shfl_sync({mask}, {v}, {args[1].text})")
        if op == "shuffle_xor":  # the lane mask's low 5 bits
            return Code(f"__shfl_xor_sync({mask}, {v}, {args[1].text})")
        if op == "broadcast_first":
            return Code(f"__shfl_sync({mask}, {v}, 0)")
        if op in ("any", "all"):
            return Code(f"(__{op}_sync({mask}, {v}) != 0)", ATOM)
        name = f"pk_sg_{op}_{t.name}"
        if name not in unit.helpers:
            tn = self.type_name(t)
            step = self.math(unit, op, t, [Code("v"), Code("w")]) if op != "add" else Code("v + w")
            if t.is_int and t.is_signed and op == "add":  # wrap, as the IR's integers do
                ut = self.unsigned_of(t)
                step = Code(f"({tn})(({ut})v + ({ut})w)")
            # Into lane 0, then broadcast: lane l takes lane l + o only where that lane exists, so a
            # partial warp (the block's last) reduces over its lanes exactly.
            unit.helper("pk_sg_local_id")
            tree = (f"{_INDENT}unsigned lane = pk_sg_local_id(), n = __popc(m);\n"
                    f"{_INDENT}for (unsigned o = 16; o > 0; o >>= 1) {{\n"
                    f"{_INDENT}{_INDENT}{tn} w = __shfl_down_sync(m, v, o);\n"
                    f"{_INDENT}{_INDENT}if (lane + o < n) v = {step.text};\n"
                    f"{_INDENT}}}\n"
                    f"{_INDENT}return __shfl_sync(m, v, 0);")
            if t.name in ("i32", "u32") and op in ("add", "min", "max"):  # redux.sync on sm_80+
                tree = (f"#if __CUDA_ARCH__ >= 800\n{_INDENT}return __reduce_{op}_sync(m, v);\n#else\n"
                        f"{tree}\n#endif")
            src = (f"// subgroup_{op} over the lanes m of a warp (all lanes get the same result)\n"
                   f"{_FN} {tn} {name}(unsigned m, {tn} v) {{\n{tree}\n}}")
            unit.helper(name, src, ("pk_sg_local_id",))
        return Code(f"{name}({mask}, {v})")

    def helper_source(self, name: str):
        src, deps = _HELPERS[name] if name in _HELPERS else hopper.HELPERS[name]
        return src.format(fn=_FN), deps

    # ---------------------------------------------------------------- atomics
    def atomic(self, unit: TranslationUnit, op: str, t: ScalarType, space: str, ptr: str, value: Code,
               compare: Optional[Code]) -> Code:
        fn = _ATOMIC_FN[op]
        args = [value] if compare is None else [compare, value]
        if t.name in _NATIVE_ATOMIC[op]:
            return Code(f"{fn}({ptr}, {', '.join(a.text for a in args)})")
        if t.name == "i64" and op in ("add", "xchg", "cas"):  # the unsigned overload wraps identically
            cast = ", ".join(f"(unsigned long long){a.at(UNARY)}" for a in args)
            return Code(f"(long long){fn}((unsigned long long*){ptr}, {cast})", UNARY)
        if t.name not in _CAS_TYPES:
            raise self.refuse(f"atomic_{op} on {t}",
                              "CUDA has no 8-bit atomics; use a buffer of i32/u32 (or 16/32/64-bit types)")
        name = self._cas_helper(unit, op, t)
        return Code(f"{name}({ptr}, {', '.join(a.text for a in args)})")

    def _cas_helper(self, unit: TranslationUnit, op: str, t: ScalarType) -> str:
        vt, mt, word, to_bits, from_bits = _CAS_TYPES[t.name]
        name = f"pk_atomic_{op}_{t.name}"
        deps = ("pk_f2h", "pk_h2f") if t == f16 else ()
        if op == "cas":
            call = "atomicCAS(({}*)p, {}, {})".format(word, to_bits.format("cmp"), to_bits.format("v"))
            src = (f"// atomic_cas on {t}: compares bit patterns.\n"
                   f"{_FN} {vt} {name}({mt}* p, {vt} cmp, {vt} v) {{\n"
                   f"    return {from_bits.format(call)};\n"
                   f"}}")
            return unit.helper(name, src, deps)
        combine = _COMBINE[op]
        if isinstance(combine, dict):
            combine = combine.get(t.name, combine[""])
        new = combine.format(a=from_bits.format("assumed"), b="v")
        src = (f"{_FN} {vt} {name}({mt}* p, {vt} v) {{\n"
               f"    {word}* a = ({word}*)p;\n"
               f"    {word} old = *a, assumed;\n"
               f"    do {{\n"
               f"        assumed = old;\n"
               f"        old = atomicCAS(a, assumed, {to_bits.format(new)});\n"
               f"    }} while (old != assumed);\n"
               f"    return {from_bits.format('old')};\n"
               f"}}")
        return unit.helper(name, src, deps)


DIALECT = CUDADialect()
