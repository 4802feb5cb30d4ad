"""The OpenCL C 1.2 dialect of the shared C-like emitter (``polykern.codegen.c_source``).

Decisions:
- OpenCL C 1.2 (the version PoCL and most vendors accept); no generic address space, so helpers
  that take pointers exist once per address space (``_global`` / ``_local`` suffix).
- f16 is storage-only and needs no extension: ``vload_half``/``vstore_half_rte`` (core OpenCL) move
  halves between memory and ``float`` registers; results are rounded to half after every operation.
  (Many devices, PoCL's CPU device included, lack ``cl_khr_fp16``.) A ``half`` scalar parameter is
  passed as its 16 bits (``ushort``); f16 arrays are ``ushort`` arrays read through ``half*`` casts.
- bool is not a valid kernel-argument or buffer type in OpenCL C: bools are ``uchar`` in memory and
  in parameters (0/1, as every polykern runtime passes them), ``bool`` in registers.
- f64 enables ``cl_khr_fp64``; 64-bit atomics enable ``cl_khr_int64_base_atomics`` (and
  ``cl_khr_int64_extended_atomics`` for min/max). A device without them fails at program build.
- Atomics: the OpenCL 1.1 ``atomic_*`` functions on 32-bit integers (and ``atomic_xchg`` on float);
  float add/min/max/cas and all f64 atomics are ``atomic_cmpxchg``/``atom_cmpxchg`` loops. Float
  ``atomic_cas`` compares bit patterns. 8/16-bit and bool atomics are refused.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from polykern.codegen.c_dialect import ATOM, SPACE_GLOBAL, SPACE_SHARED, UNARY, CDialect, Code, TranslationUnit
from polykern.ir import nodes as ir
from polykern.ir.types import ArrayType, ScalarType, bool_, f16, f64

_MATH = {f: f for f in ("sqrt", "rsqrt", "exp", "exp2", "log", "log2", "sin", "cos", "tanh", "pow", "fma",
                        "floor", "ceil", "fmod")}
_MATH.update({"abs": "fabs", "min": "fmin", "max": "fmax"})

_REG = {"global_id": "get_global_id", "local_id": "get_local_id", "group_id": "get_group_id",
        "local_size": "get_local_size", "num_groups": "get_num_groups"}
_SPACE = {SPACE_GLOBAL: "__global", SPACE_SHARED: "__local"}
_SG_REG = {"size": "get_max_sub_group_size", "local_id": "get_sub_group_local_id", "id": "get_sub_group_id"}
_FN = "static inline"
_NAN_GUARDED = ("floor", "ceil", "exp", "exp2", "tanh")  # see OpenCLDialect.math

_HELPERS = {
    "pk_f16": ("""// f16 arithmetic: computed in float, rounded to half (round to nearest even).
{fn} float pk_f16(float x) {{
    ushort h;
    vstore_half_rte(x, 0, (half*)&h);
    return vload_half(0, (const half*)&h);
}}""", ()),
    "pk_f16_from_f64": ("""{fn} float pk_f16_from_f64(double x) {{
    ushort h;
    vstore_half_rte(x, 0, (half*)&h);
    return vload_half(0, (const half*)&h);
}}""", ()),
}

_NATIVE = {
    "i32": ("add", "min", "max", "xchg", "cas"), "u32": ("add", "min", "max", "xchg", "cas"),
    "i64": ("add", "min", "max", "xchg", "cas"), "u64": ("add", "min", "max", "xchg", "cas"),
    "f32": ("xchg",),
}
_FN32 = {"add": "atomic_add", "min": "atomic_min", "max": "atomic_max", "xchg": "atomic_xchg", "cas": "atomic_cmpxchg"}
_FN64 = {"add": "atom_add", "min": "atom_min", "max": "atom_max", "xchg": "atom_xchg", "cas": "atom_cmpxchg"}
# value type, CAS word type, CAS function, to-bits, from-bits
_CAS_TYPES = {
    "f32": ("float", "uint", "atomic_cmpxchg", "as_uint({})", "as_float({})"),
    "f64": ("double", "ulong", "atom_cmpxchg", "as_ulong({})", "as_double({})"),
}
_COMBINE = {"add": "{a} + {b}", "min": "fmin({a}, {b})", "max": "fmax({a}, {b})", "xchg": "{b}"}


class OpenCLDialect(CDialect):
    PRINT_LONG64 = "l"  # OpenCL C's long is 64 bits
    PRINT_FLOAT_AS_DOUBLE = False  # printf takes a float (doubles may be missing: cl_khr_fp64)
    name = "opencl"
    language = "OpenCL C"
    half_native = False
    fn_qualifier = _FN
    F32_AS_U32, U32_AS_F32 = "as_uint({})", "as_float({})"  # ir.Bitcast (bf16 conversions)
    TYPE_NAMES = {
        "bool": "bool", "i8": "char", "i16": "short", "i32": "int", "i64": "long",
        "u8": "uchar", "u16": "ushort", "u32": "uint", "u64": "ulong",
        "f16": "half", "f32": "float", "f64": "double",
    }
    MATH_F32 = _MATH
    MATH_F64 = _MATH
    INT_MATH = {"abs": "abs", "min": "min", "max": "max"}
    opaque_narrow_negation = True
    # OpenCL C vector types are aligned to their size: a cast pointer tells the compiler the alignment.
    VECTOR_STEMS = {"f32": "float", "f64": "double", "i32": "int", "u32": "uint", "i64": "long", "u64": "ulong",
                    "i16": "short", "u16": "ushort", "i8": "char", "u8": "uchar"}

    def vector_pointer(self, vt, base, readonly):
        return f"((__global {'const ' if readonly else ''}{vt}*){base})"

    def vector_value(self, vt, parts):
        return f"({vt})({', '.join(parts)})"

    def storage_type(self, t: ScalarType) -> str:
        return "uchar" if t == bool_ else super().storage_type(t)

    def int_suffix(self, t: ScalarType) -> str:
        return {"u32": "u", "i64": "L", "u64": "UL"}.get(t.name, "")

    def math(self, unit, func, t, args):
        # PoCL folds floor/ceil/exp/exp2/tanh of a NaN the compiler can see (NAN, x * NAN, a local
        # assigned -INF - -INF) to poison, and the store of the result vanished (fuzz seeds 11000016,
        # 12000278): a NaN argument is returned before the builtin sees it.
        if t.is_float and func in _NAN_GUARDED:
            ty = "double" if t == f64 else "float"
            name = unit.helper(f"pk_{func}_{ty}", f"{_FN} {ty} pk_{func}_{ty}({ty} x) {{\n"
                               f"    return isnan(x) ? x : {func}(x);\n}}")
            code = Code(f"{name}({args[0]})")
            return self.round_half(unit, code) if t == f16 and func not in self.EXACT_MATH else code
        # pow(NaN, NaN) with both NaNs visible to the compiler crashes PoCL 3.1's kernel compiler
        # (SIGSEGV), or hangs it inside a loop (F13, fuzz seed 8001165): NaN operands never reach pow.
        # C99 F.9.4.4: pow(x, +-0) and pow(+1, y) are 1 even for a NaN; otherwise a NaN gives NaN.
        if t.is_float and func == "pow":
            ty = "double" if t == f64 else "float"
            one = "1.0" if t == f64 else "1.0f"
            zero = "0.0" if t == f64 else "0.0f"
            name = unit.helper(f"pk_pow_{ty}", f"{_FN} {ty} pk_pow_{ty}({ty} x, {ty} y) {{\n"
                               f"    return (isnan(x) || isnan(y)) ? (x == {one} || y == {zero} ? {one} : x + y)"
                               f" : pow(x, y);\n}}")
            code = Code(f"{name}({args[0]}, {args[1]})")
            return self.round_half(unit, code) if t == f16 else code
        return super().math(unit, func, t, args)

    FAST_HELPERS = {  # native_exp/native_exp2 of a NaN PoCL can see: guarded as in math()
        f"pk_native_{op}": f"{{fn}} float pk_native_{op}(float x) {{{{\n    return isnan(x) ? x : native_{op}(x);\n}}}}"
        for op in ("exp", "exp2")}

    def int_math(self, unit, func, t, args):
        if func in ("min", "max") and t != bool_:  # overloaded for every integer type
            if t.bits < 32:  # C promotes uchar * uchar to int: the casts pick the overload of t
                ty = self.type_name(t)
                return Code(f"{func}(({ty}){args[0].at(UNARY)}, ({ty}){args[1].at(UNARY)})")
            return Code(f"{func}({args[0]}, {args[1]})")
        return super().int_math(unit, func, t, args)

    # ---------------------------------------------------------------- memory and parameters
    def _half_ptr(self, base: str, space: str, const: bool) -> str:
        if space == SPACE_GLOBAL:
            return base
        q = _SPACE.get(space, "")
        return f"({q + ' ' if q else ''}{'const ' if const else ''}half*){base}"

    def load(self, unit, base, index, t, space):
        if t == f16:
            return Code(f"vload_half({index}, {self._half_ptr(base, space, True)})")
        if t == bool_:
            return Code(f"(bool){base}[{index}]", UNARY)
        return Code(f"{base}[{index}]")

    def store(self, unit, base, index, value, t, space):
        if t == f16:
            # vstore_half_rte rounds to half itself
            return f"vstore_half_rte({value.unrounded or value.text}, {index}, {self._half_ptr(base, space, False)});"
        return f"{base}[{index}] = {value};"

    def dynamic_shared_param(self, name, arr):
        # The last kernel argument, after every IR parameter: the runtime sets it with clSetKernelArg(size, NULL).
        return f"__local {'ushort' if arr.elem == f16 else self.storage_type(arr.elem)}* {name}"

    def dynamic_shared_decl(self, name, arr):
        return None

    def array_decl(self, name: str, arr: ArrayType) -> str:
        q = "__local " if arr.scope == "shared" else ""
        elem = "ushort" if arr.elem == f16 else self.storage_type(arr.elem)
        return f"{q}{elem} {name}[{arr.size}];"

    def param_decl(self, name, p, index):
        if p.is_buffer:
            const = "const " if p.type.readonly else ""
            return f"__global {const}{self.storage_type(p.type.elem)}* {name}"
        return f"{'ushort' if p.type == f16 else self.storage_type(p.type)} {name}"

    def scalar_param_prologue(self, unit, name, raw, t):
        if t == f16:
            return f"float {name} = vload_half(0, (const half*)&{raw});"
        if t == bool_:
            return f"bool {name} = (bool){raw};"
        return None

    def kernel_signature(self, symbol: str, params: List[str], regs: Sequence[Tuple[str, int]]) -> str:
        return f"__kernel void {symbol}({', '.join(params)})"

    def special_reg(self, kind: str, dim: int) -> Code:
        return Code(f"(int){_REG[kind]}({dim})", UNARY)

    def loop_guard(self, fn):
        # PoCL's kernel compiler (ImplicitLoopBarriers) puts a barrier into a loop with a uniform
        # trip count in a kernel that has barriers, and its uniformity analysis misses a work-item's
        # earlier `return`: that work-item ran the loop anyway and its stores happened (F12, fuzz
        # seed 8001124 of the 19:08 generator). A loop condition that depends on the work-item
        # (always true) keeps PoCL from adding that barrier.
        if not (ir.uses_barrier(fn) and any(isinstance(s, ir.Return) for s in ir.walk_stmts(fn.body))):
            return None
        return "const bool pk_wi = get_local_id(0) < get_local_size(0);", "pk_wi"

    def barrier(self) -> str:
        return "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"

    def subgroup(self, unit: TranslationUnit, op: str, t: ScalarType, args: List[Code]) -> Code:
        """cl_khr_subgroups (sub_group_reduce_*, any/all, broadcast) and cl_khr_subgroup_shuffle; the
        codegen refuses kernels with subgroups unless the target declares them (``-subgroups``)."""
        unit.features.add("subgroups")
        if op in _SG_REG:
            return Code(f"(int){_SG_REG[op]}()", UNARY)
        v = args[0].text
        if op in ("shuffle", "shuffle_xor"):  # the lane (mask) modulo the subgroup size
            unit.features.add("subgroup_shuffle")
            lane = f"(uint){args[1].at(UNARY)} % get_max_sub_group_size()"
            return Code(f"sub_group_{op}({v}, {lane})")
        if op == "broadcast_first":  # every lane is active (uniform control flow): lane 0 is the first
            return Code(f"sub_group_broadcast({v}, 0u)")
        if op in ("any", "all"):
            return Code(f"(sub_group_{op}((int){args[0].at(UNARY)}) != 0)", ATOM)
        return Code(f"sub_group_reduce_{op}({v})")

    def prologue(self, unit: TranslationUnit) -> List[str]:
        # OpenCL C contracts a*b+c into fma by default; the language does not (polykern.numerics).
        out = ["#pragma OPENCL FP_CONTRACT OFF"]
        if "f64" in unit.features:
            out.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
        if "subgroups" in unit.features:
            out.append("#pragma OPENCL EXTENSION cl_khr_subgroups : enable")
        if "subgroup_shuffle" in unit.features:
            out.append("#pragma OPENCL EXTENSION cl_khr_subgroup_shuffle : enable")
        if "int64_base_atomics" in unit.features:
            out.append("#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable")
        if "int64_extended_atomics" in unit.features:
            out.append("#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable")
        return out

    def helper_source(self, name: str):
        src, deps = _HELPERS[name]
        return src.format(fn=_FN), deps

    # ---------------------------------------------------------------- atomics
    def atomic(self, unit: TranslationUnit, op: str, t: ScalarType, space: str, ptr: str, value: Code,
               compare: Optional[Code]) -> Code:
        args = [value] if compare is None else [compare, value]
        text = ", ".join(a.text for a in args)
        if op in _NATIVE.get(t.name, ()):
            if t.bits == 64:
                unit.features.add("int64_extended_atomics" if op in ("min", "max") else "int64_base_atomics")
                return Code(f"{_FN64[op]}({ptr}, {text})")
            return Code(f"{_FN32[op]}({ptr}, {text})")
        if t.name not in _CAS_TYPES:
            raise self.refuse(f"atomic_{op} on {t}", "OpenCL C atomics work on 32-bit types and "
                              "(with cl_khr_int64_base_atomics) 64-bit types only")
        if t == f64:
            unit.features.add("int64_base_atomics")
        name = self._cas_helper(unit, op, t, space)
        return Code(f"{name}({ptr}, {text})")

    def _cas_helper(self, unit: TranslationUnit, op: str, t: ScalarType, space: str) -> str:
        vt, word, cas, to_bits, from_bits = _CAS_TYPES[t.name]
        q = _SPACE[space]
        name = f"pk_atomic_{op}_{t.name}_{space}"
        if op == "cas":
            call = "{}((volatile {} {}*)p, {}, {})".format(cas, q, word, to_bits.format("cmp"), to_bits.format("v"))
            src = (f"// atomic_cas on {t}: compares bit patterns.\n"
                   f"{_FN} {vt} {name}(volatile {q} {vt}* p, {vt} cmp, {vt} v) {{\n"
                   f"    return {from_bits.format(call)};\n"
                   f"}}")
            return unit.helper(name, src)
        new = _COMBINE[op].format(a=from_bits.format("assumed"), b="v")
        src = (f"{_FN} {vt} {name}(volatile {q} {vt}* p, {vt} v) {{\n"
               f"    volatile {q} {word}* a = (volatile {q} {word}*)p;\n"
               f"    {word} old = *a, assumed;\n"
               f"    do {{\n"
               f"        assumed = old;\n"
               f"        old = {cas}(a, assumed, {to_bits.format(new)});\n"
               f"    }} while (old != assumed);\n"
               f"    return {from_bits.format('old')};\n"
               f"}}")
        return unit.helper(name, src)


DIALECT = OpenCLDialect()
