"""The C99 dialect of polykern's shared C-like emitter (``polykern.codegen.c_source``).

Work-items run one after another on the host, so whatever needs them to run together is refused at
compile time with a located ``KernelTypeError`` (``codegen.check_supported``): ``barrier()`` and shared
memory; atomics are plain read-modify-writes. f16 is refused too (C99 has no half type). Special registers come from a ``pk_workitem`` the launcher fills in.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from polykern.codegen.c_source import CDialect, Code, TranslationUnit
from polykern.ir.types import ScalarType, f16, f64

_MATH = ("sqrt", "exp", "exp2", "log", "log2", "sin", "cos", "tanh", "pow", "fma", "floor", "ceil", "fmod")
_NAMES = {"abs": "fabs", "min": "fmin", "max": "fmax"}

WORKITEM = ("typedef struct {\n"
            "    int global_id[3], local_id[3], group_id[3], local_size[3], num_groups[3];\n"
            "} pk_workitem;")


class CSourceDialect(CDialect):
    name = "csrc"
    language = "C99"
    fn_qualifier = "static inline"
    MATH_F32 = {**{f: f + "f" for f in _MATH}, **{k: v + "f" for k, v in _NAMES.items()}}
    MATH_F64 = {**{f: f for f in _MATH}, **_NAMES}

    def unsupported_type(self, t: ScalarType) -> Optional[str]:
        return "C99 has no half-precision type" if t == f16 else None

    def math(self, unit: TranslationUnit, func: str, t: ScalarType, args: List[Code]) -> Code:
        if func == "rsqrt" and t.is_float:
            ty, sqrt = ("double", "sqrt") if t == f64 else ("float", "sqrtf")
            name = unit.helper(f"pk_rsqrt_{ty}", f"static inline {ty} pk_rsqrt_{ty}({ty} x) {{\n"
                                                 f"    return 1 / {sqrt}(x);\n}}")
            return Code(f"{name}({args[0]})")
        return super().math(unit, func, t, args)

    def int_math(self, unit: TranslationUnit, func: str, t: ScalarType, args: List[Code]) -> Code:
        if func not in ("abs", "min", "max"):
            raise self.refuse(f"{func}() on {t}", "the function is defined for floats only")
        if func == "abs" and not t.is_signed:
            return args[0]
        ty = self.type_name(t)
        name = f"pk_{func}_{t.name}"
        if func == "abs":  # |MIN| wraps to MIN (polykern.numerics): negate in the unsigned type
            u = self.unsigned_of(t)
            body = f"return x < 0 ? ({ty})(({u})0 - ({u})x) : x;"
            src = f"static inline {ty} {name}({ty} x) {{\n    {body}\n}}"
        else:
            op = "<" if func == "min" else ">"
            src = f"static inline {ty} {name}({ty} a, {ty} b) {{\n    return a {op} b ? a : b;\n}}"
        return Code(f"{unit.helper(name, src)}({', '.join(a.text for a in args)})")

    def special_reg(self, kind: str, dim: int) -> Code:
        return Code(f"pk_wi->{kind}[{dim}]")

    def barrier(self) -> str:
        raise self.refuse("barrier()", "the csrc backend runs work-items one after another")

    def atomic(self, unit, op, t, space, ptr, value, compare):
        """Work-items run one after another, so an atomic is a plain read-modify-write that returns
        the old value. Integer arithmetic wraps (done in the unsigned type); a float ``atomic_cas``
        compares bit patterns, as on every polykern backend."""
        ty, name = self.storage_type(t), f"pk_atomic_{op}_{t.name}"
        if op == "cas":
            same = "memcmp(&old, &cmp, sizeof old) == 0" if t.is_float else "old == cmp"
            unit.features.add("memcmp")
            body = f"{ty} old = *p;\n    if ({same}) *p = v;\n    return old;"
            src = f"static inline {ty} {name}({ty}* p, {ty} cmp, {ty} v) {{\n    {body}\n}}"
            return Code(f"{unit.helper(name, src)}({ptr}, {compare}, {value})")
        if op == "add":
            new = "old + v" if t.is_float else f"({ty})(({self.unsigned_of(t)})old + ({self.unsigned_of(t)})v)"
        elif op in ("min", "max"):
            if t.is_float:
                new = f"{self.MATH_F64[op] if t == f64 else self.MATH_F32[op]}(old, v)"
            else:
                new = f"v {'<' if op == 'min' else '>'} old ? v : old"
        elif op == "xchg":
            new = "v"
        else:
            raise self.refuse(f"atomic_{op}", "unknown atomic operation")
        src = (f"static inline {ty} {name}({ty}* p, {ty} v) {{\n    {ty} old = *p;\n    *p = {new};\n"
               f"    return old;\n}}")
        return Code(f"{unit.helper(name, src)}({ptr}, {value})")

    def array_decl(self, name: str, arr) -> str:
        if arr.scope == "shared":
            raise self.refuse("shared memory", "the csrc backend runs work-items one after another")
        return super().array_decl(name, arr)

    def param_decl(self, name: str, p, index: int) -> str:
        if p.is_buffer:
            const = "const " if p.type.readonly else ""
            return f"{const}{self.storage_type(p.type.elem)}* {name}"
        return f"{self.storage_type(p.type)} {name}"

    def kernel_signature(self, symbol: str, params: List[str], regs: Sequence[Tuple[str, int]]) -> str:
        return f"static void {symbol}({', '.join(params + ['const pk_workitem* pk_wi'])})"

    def prologue(self, unit: TranslationUnit) -> List[str]:
        includes = ["#include <math.h>", "#include <stdbool.h>", "#include <stdint.h>"]
        if "memcmp" in unit.features:
            includes.append("#include <string.h>")
        return includes + ["", WORKITEM]


DIALECT = CSourceDialect()
