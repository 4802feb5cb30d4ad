"""The C-like languages' differences (CUDA C, OpenCL C, Metal Shading Language, and out-of-tree C
dialects such as examples/out_of_tree_backend): :class:`CDialect` with its hooks (type names,
qualifiers and address spaces, special registers, barrier, atomics, math names, literals, kernel
signature, half support), the :class:`Code` fragments with their C precedence, literals, and the
:class:`TranslationUnit` that collects the helpers a file needs. c_source.py's emitter walks the IR
and asks these hooks; c_source re-exports the public names (the plugin API imports them from there).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import KernelTypeError, SourceLoc
from ..ir import debug_print
from ..ir import nodes as ir
from ..ir.vector import MAX_VECTOR_BYTES
from ..ir.bfloat16 import f32_to_bits
from ..ir.types import ArrayType, BufferType, ScalarType, bf16, bool_, f16, f32, f64, i32, u32
from ..numerics import fast_math as fast_math_entry

if TYPE_CHECKING:  # annotations only: the emitter calls the dialect's hooks
    from .c_source import KernelEmitter

__all__ = ["Code", "CDialect", "TranslationUnit", "space_of", "float_literal_digits", "int_literal_digits",
           "ATOM", "UNARY", "SPACE_GLOBAL", "SPACE_SHARED", "SPACE_PRIVATE"]

# C operator precedence, lower binds tighter (0 = primary expression).
ATOM, UNARY, MUL, ADD, SHIFT, REL, EQ, BAND, BXOR, BOR, LAND, LOR, COND = 0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13

BIN_TOKEN = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "/", "mod": "%",
             "and": "&", "or": "|", "xor": "^", "shl": "<<", "shr": ">>",
             "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=", "land": "&&", "lor": "||"}
BIN_PREC = {"add": ADD, "sub": ADD, "mul": MUL, "div": MUL, "floordiv": MUL, "mod": MUL,
            "and": BAND, "or": BOR, "xor": BXOR, "shl": SHIFT, "shr": SHIFT,
            "lt": REL, "le": REL, "gt": REL, "ge": REL, "eq": EQ, "ne": EQ, "land": LAND, "lor": LOR}
# Operators whose mixing with others is hard to read: always parenthesized as operands.
_CONFUSING = {SHIFT, BAND, BXOR, BOR}
# Results of these ops on 8/16-bit integers may not fit the type: cast back after promotion.
_WIDENING = ("add", "sub", "mul", "div", "floordiv", "shl")

SPACE_GLOBAL, SPACE_SHARED, SPACE_PRIVATE = "global", "shared", "private"


@dataclass(frozen=True)
class Code:
    """An emitted C expression and its precedence."""

    text: str
    prec: int = ATOM
    #: storage-only f16: the expression before its final rounding to half (a store rounds anyway)
    unrounded: Optional[str] = None
    #: storage-only f16: the 16-bit storage expression this value was loaded from (copies skip converting)
    bits: Optional[str] = None
    #: wrapping signed arithmetic: the same value as an unsigned expression (nested ops reuse it)
    wrapped: Optional["Code"] = None

    def at(self, prec: int) -> str:
        """The text, parenthesized unless it binds at least as tightly as ``prec``."""
        return self.text if self.prec <= prec else f"({self.text})"

    def __str__(self) -> str:
        return self.text


def space_of(t) -> str:
    if isinstance(t, BufferType):
        return SPACE_GLOBAL
    return SPACE_SHARED if t.scope == "shared" else SPACE_PRIVATE


def float_literal_digits(value: float, t: ScalarType) -> str:
    """Shortest decimal that reads back as exactly ``value`` rounded to ``t`` (f16 via its f32 value)."""
    if t.bits == 64:
        text = repr(float(value))
    else:
        v = np.float32(np.float16(value)) if t.bits == 16 else np.float32(value)
        if v == 0:
            text = "0.0"
        elif 1e-4 <= abs(v) < 1e7:
            text = np.format_float_positional(v, unique=True, trim="0")
        else:
            text = np.format_float_scientific(v, unique=True, trim="0")
    if "e" in text:
        mant, exp = text.split("e")
        mant = mant if "." in mant else mant + ".0"
        if mant.endswith("."):
            mant += "0"
        text = f"{mant}e{int(exp)}"
    elif "." not in text:
        text += ".0"
    elif text.endswith("."):
        text += "0"
    return text


def int_literal_digits(value: int) -> str:
    return str(int(value))


def c_string(text: str) -> str:
    """A C string literal of ``text`` (printable ASCII, newlines and tabs: ``ir.debug_print``'s)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("?", "\\?").replace(
        "\n", "\\n").replace("\t", "\\t") + '"'


class CDialect:
    """One C-like language. Subclasses override the hooks; the defaults are plain C99."""

    name = "c"             # backend name, used in error messages ("cuda", "opencl", "metal")
    language = "C"         # human name of the language ("CUDA C", "OpenCL C", "Metal Shading Language")
    indent = "    "
    half_native = False    # True: f16 values are a native type; False: storage-only (see module doc)
    fn_qualifier = "static inline"  # how helper functions are declared

    TYPE_NAMES: Dict[str, str] = {
        "bool": "bool", "i8": "signed char", "i16": "short", "i32": "int", "i64": "long long",
        "u8": "unsigned char", "u16": "unsigned short", "u32": "unsigned int", "u64": "unsigned long long",
        "f16": "half", "f32": "float", "f64": "double",
    }

    # ---------------------------------------------------------------- types
    def unsupported_type(self, t: ScalarType) -> Optional[str]:
        """Why ``t`` cannot be used at all on this backend, or None."""
        return None

    # The dialect's f32 <-> u32 bit casts ("{}" for the operand); None: bf16 is refused (passes/legalize_f16.py
    # converts bf16 with them).
    F32_AS_U32: Optional[str] = None
    U32_AS_F32: Optional[str] = None

    def bf16_refusal(self) -> Optional[str]:
        """Why bf16 cannot be used on this dialect, or None (its values are u16 bits: passes/legalize_f16.py)."""
        return None if self.F32_AS_U32 and self.U32_AS_F32 else f"the {self.language} emitter has no f32 bit casts"

    def type_name(self, t: ScalarType) -> str:
        """The C type of a *value* of type ``t`` (a local, an expression)."""
        if t == bf16:  # its bits
            return self.TYPE_NAMES["u16"]
        if t == f16 and not self.half_native:
            return self.TYPE_NAMES["f32"]
        return self.TYPE_NAMES[t.name]

    def storage_type(self, t: ScalarType) -> str:
        """The C type of ``t`` in memory (buffers, arrays) and in a scalar kernel parameter."""
        return self.TYPE_NAMES["u16" if t == bf16 else t.name]

    def unsigned_of(self, t: ScalarType) -> str:
        return self.TYPE_NAMES["u" + t.name[1:]] if t.name[0] == "i" else self.TYPE_NAMES[t.name]

    # ---------------------------------------------------------------- literals
    def literal(self, value, t: ScalarType) -> Code:
        if t == bool_:
            return Code("true" if value else "false")
        if t == bf16:
            return Code(f"({self.type_name(t)}){int(f32_to_bits(value))}", UNARY)
        if t.is_float:
            return self.float_literal(float(value), t)
        return self.int_literal(int(value), t)

    def int_suffix(self, t: ScalarType) -> str:
        return {"u32": "u", "i64": "ll", "u64": "ull"}.get(t.name, "")

    def int_literal(self, value: int, t: ScalarType) -> Code:
        suffix = self.int_suffix(t)
        if t.bits < 32:
            return Code(f"({self.type_name(t)}){value}", UNARY) if value >= 0 else \
                Code(f"({self.type_name(t)})({value})", UNARY)
        if value == t.min_value() and t.code == 0:  # INT_MIN has no literal of its own
            return Code(f"(-{-value - 1}{suffix} - 1{suffix})", ATOM)
        return Code(f"{value}{suffix}", ATOM) if value >= 0 else Code(f"-{-value}{suffix}", UNARY)

    def float_literal(self, value: float, t: ScalarType) -> Code:
        if math.isnan(value) or math.isinf(value):
            return self.float_special(value, t)
        digits = float_literal_digits(abs(value), t)
        text = digits + self.float_suffix(t)
        if t == f16 and self.half_native:
            text = self.half_literal(digits)
        return Code("-" + text, UNARY) if math.copysign(1.0, value) < 0 else Code(text, ATOM)

    def float_suffix(self, t: ScalarType) -> str:
        return "" if t == f64 else "f"

    def half_literal(self, digits: str) -> str:
        return f"(half){digits}f"

    def float_special(self, value: float, t: ScalarType) -> Code:
        name = "NAN" if math.isnan(value) else "INFINITY"
        text = name if t == f32 or (t == f16 and not self.half_native) else f"({self.type_name(t)}){name}"
        return Code("-" + text, UNARY) if value < 0 else Code(text, UNARY if text.startswith("(") else ATOM)

    # ---------------------------------------------------------------- operations
    def cast(self, unit: "TranslationUnit", x: Code, src: ScalarType, dst: ScalarType) -> Code:
        if src == dst:
            return x
        if bf16 in (src, dst):  # on the bits before the emitter (passes/legalize_f16.py)
            raise self.refuse(f"a {src} -> {dst} conversion", "bf16 conversions are written on the bits first")
        # float -> int: only values in range arrive here (passes/legalize_numerics.py)
        if dst == f16 and not self.half_native:
            if src == f64:
                return Code(f"{unit.helper('pk_f16_from_f64')}({x})")
            inner = x.text if src == f32 else f"(float){x.at(UNARY)}"
            return Code(f"{unit.helper('pk_f16')}({inner})", unrounded=inner)
        if src == f16 and not self.half_native and dst == f32:
            return x  # the value already is a float holding a half
        return Code(f"({self.type_name(dst)}){x.at(UNARY)}", UNARY)

    def bitcast(self, x: Code, src: ScalarType, dst: ScalarType) -> Code:
        """``ir.Bitcast`` (passes/legalize_f16.py): f32 <-> u32 with the dialect's bit casts; bf16 (its bits,
        an unsigned short) <-> u32 by integer conversion (zero-extended, the low half)."""
        if (src, dst) == (f32, u32):
            return Code(self.F32_AS_U32.format(x), ATOM)
        if (src, dst) == (u32, f32):
            return Code(self.U32_AS_F32.format(x), ATOM)
        if bf16 in (src, dst):
            return Code(f"({self.type_name(dst)}){x.at(UNARY)}", UNARY)
        raise self.refuse(f"a bitcast from {src} to {dst}", "only f32 and bf16 bits are reinterpreted here")

    def round_half(self, unit: "TranslationUnit", x: Code) -> Code:
        """Round a float-held f16 result to half precision (storage-only f16)."""
        return Code(f"{unit.helper('pk_f16')}({x})", unrounded=x.text)

    def fmod(self, unit: "TranslationUnit", t: ScalarType, a: Code, b: Code) -> Code:
        return self.math(unit, "fmod", t, [a, b])

    # Float math: ``polykern.ir.MATH_FUNCS`` plus "fmod" -> function name, per float type. A dialect
    # with overloaded names uses one table for every type.
    MATH_F32: Dict[str, str] = {}
    MATH_F64: Dict[str, str] = {}
    MATH_F16: Dict[str, str] = {}
    # Results that are exact in any precision need no rounding back to half.
    EXACT_MATH = ("abs", "min", "max", "floor", "ceil")

    def math(self, unit: "TranslationUnit", func: str, t: ScalarType, args: List[Code]) -> Code:
        """A math builtin (``polykern.ir.MATH_FUNCS`` plus ``fmod``); all args have type ``t``."""
        if func in ir.FAST_MATH:  # only those numerics.FAST_MATH lists for this dialect (passes/fast_math.py)
            return self.fast_math(unit, ir.FAST_MATH[func], t, args)
        if t.is_float:
            if t == f16 and not self.half_native:
                code = Code(f"{self.MATH_F32[func]}({', '.join(a.text for a in args)})")
                return code if func in self.EXACT_MATH else self.round_half(unit, code)
            table = {16: self.MATH_F16, 32: self.MATH_F32, 64: self.MATH_F64}[t.bits]
            return Code(f"{table[func]}({', '.join(a.text for a in args)})")
        return self.int_math(unit, func, t, args)

    # Helpers a fast-math lowering of ``polykern.numerics.FAST_MATH`` names: name -> source ({fn}: the
    # dialect's function qualifier).
    FAST_HELPERS: Dict[str, str] = {}

    def fast_math(self, unit: "TranslationUnit", op: str, t: ScalarType, args: List[Code]) -> Code:
        """``fast_<op>`` of f32: the function ``polykern.numerics.FAST_MATH[<this dialect>][op]`` names
        (a helper of :attr:`FAST_HELPERS` where the dialect defines it)."""
        entry = fast_math_entry(self.name, op)
        if entry is None or t != f32:
            raise self.refuse(f"fast math {op}() on {t}", "polykern.numerics.FAST_MATH lists no lowering")
        name = entry.lowering
        if name in self.FAST_HELPERS:
            name = unit.helper(name, self.FAST_HELPERS[name].format(fn=self.fn_qualifier))
        return Code(f"{name}({', '.join(a.text for a in args)})")

    INT_MATH: Dict[str, str] = {"abs": "abs", "min": "min", "max": "max"}

    def int_math(self, unit: "TranslationUnit", func: str, t: ScalarType, args: List[Code]) -> Code:
        """abs/min/max on integers (and bool). Default: 8/16-bit values are computed in int."""
        if func not in self.INT_MATH:
            raise self.refuse(f"{func}() on {t}", "the function is defined for floats only")
        if func == "abs" and not t.is_signed:
            return args[0]
        if func == "abs" and t != bool_:
            return self.signed_abs(unit, t, args[0])
        if t.bits < 32 or t == bool_:
            inner = ", ".join(f"(int){a.at(UNARY)}" for a in args)
            return Code(f"({self.type_name(t)}){self.INT_MATH[func]}({inner})", UNARY)
        name = self.INT_MATH.get(f"{func}{t.bits}", self.INT_MATH[func])
        return Code(f"{name}({', '.join(a.text for a in args)})")

    def signed_abs(self, unit: "TranslationUnit", t: ScalarType, x: Code) -> Code:
        """|x| of a signed integer, |MIN| == MIN (polykern.numerics). Not C's abs() (UB at MIN, and
        PoCL made it poison) and not a select of a negation that can wrap: ptxas takes PTX's abs.s32
        as never negative (abs(INT_MIN) < 0 was false on an H100, driver 580), and NVVM turns
        select(x < 0, 0u - x, x) into abs.s32. MIN is returned as itself; no other negation here can
        overflow (tools/gpu/neg_probe2.py)."""
        tn = self.type_name(t)
        name = f"pk_abs_{t.name}"
        lo = self.int_literal(t.min_value(), t)
        src_text = (f"// {t} abs: |MIN| == MIN\n"
                    f"{self.fn_qualifier} {tn} {name}({tn} x) {{\n"
                    f"{self.indent}return x == {lo} ? x : x < 0 ? ({tn})(-x) : x;\n}}")
        return Code(f"{unit.helper(name, src_text)}({x.text})")

    # True: 8/16-bit negations pass through an empty GNU asm statement (CUDA C, OpenCL C). ptxas
    # loses the 16-bit wrap of neg.s16 (-(-32768) % 25 gave 18, not -18, and -(-32768) < 0 was false,
    # on an H100 with driver 580, through NVRTC and NVIDIA's OpenCL alike; every C spelling of the
    # negation reaches neg.s16 through NVVM): behind the asm, later operations see an opaque int.
    opaque_narrow_negation = False
    asm_keyword = "__asm__"

    def narrow_negate(self, unit: "TranslationUnit", t: ScalarType, code: Code) -> Code:
        """-x of an 8/16-bit signed value (``code``: the negation computed in int, cast to the type)."""
        if not self.opaque_narrow_negation:
            return code
        name = unit.helper("pk_opaque_i32", f"{self.fn_qualifier} int pk_opaque_i32(int v) {{\n"
                           f"{self.indent}{self.asm_keyword} volatile(\"\" : \"+r\"(v));\n{self.indent}return v;\n}}")
        return Code(f"({self.type_name(t)}){name}({code.text})", UNARY)

    def special_reg(self, kind: str, dim: int) -> Code:
        raise NotImplementedError

    def barrier(self) -> str:
        raise NotImplementedError

    def subgroup(self, unit: "TranslationUnit", op: str, t: ScalarType, args: List[Code]) -> Code:
        """``pk.subgroup_<op>`` (``polykern.ir.SUBGROUP_OPS``; ``t``: the result type, ``args``: the
        value and, for shuffles, the lane). Raise :meth:`refuse` where the backend lacks it."""
        raise self.refuse(f"subgroup_{op}()", f"{self.language} has no subgroup operations here")

    def atomic(self, unit: "TranslationUnit", op: str, t: ScalarType, space: str, ptr: str,
               value: Code, compare: Optional[Code]) -> Code:
        """Atomic ``op`` on ``*ptr`` (``ptr`` is ``&base[index]``); returns the old value.
        Raise :meth:`refuse` where impossible."""
        raise NotImplementedError

    def load(self, unit: "TranslationUnit", base: str, index: Code, t: ScalarType, space: str) -> Code:
        return Code(f"{base}[{index}]")

    def store(self, unit: "TranslationUnit", base: str, index: Code, value: Code, t: ScalarType,
              space: str) -> str:
        return f"{base}[{index}] = {value};"

    # ---------------------------------------------------------------- declarations
    # ---------------------------------------------------------------- wide access (ir/vector.py)
    #: element type name -> the language's vector type name stem (``float`` -> ``float4``); a type
    #: missing here (and any vector over MAX_VECTOR_BYTES) is emitted as scalar accesses.
    VECTOR_STEMS: Dict[str, str] = {}

    def vector_type(self, t: ScalarType, n: int) -> Optional[str]:
        stem = self.VECTOR_STEMS.get(t.name)
        return f"{stem}{n}" if stem is not None and n * t.nbytes <= MAX_VECTOR_BYTES else None

    def vector_pointer(self, vt: str, base: str, readonly: bool) -> str:
        """``base`` (a buffer parameter) as a pointer to ``vt``."""
        return f"(({'const ' if readonly else ''}{vt}*){base})"

    def vector_value(self, vt: str, parts: List[str]) -> str:
        raise NotImplementedError

    def vector_lane(self, unit: "TranslationUnit", lane: str, t: ScalarType) -> str:
        """The value of a loaded vector's lane (C text ``lane``) as a ``t`` local."""
        return lane

    def vector_part(self, unit: "TranslationUnit", value: Code, t: ScalarType) -> str:
        """A ``t`` value as a lane of a vector to store."""
        return value.text

    # ---------------------------------------------------------------- pk.shared_dynamic (ir/dynamic_shared.py)
    def dynamic_shared_param(self, name: str, arr: ArrayType) -> Optional[str]:
        """A trailing kernel parameter for the dynamic shared array (OpenCL ``__local T*``), or None."""
        return None

    def dynamic_shared_decl(self, name: str, arr: ArrayType) -> Optional[str]:
        """The body's declaration of the dynamic shared array, or None (a parameter holds it)."""
        raise self.refuse("pk.shared_dynamic()", f"{self.language} here has no dynamic shared memory")

    def array_decl(self, name: str, arr: ArrayType) -> str:
        return f"{self.storage_type(arr.elem)} {name}[{arr.size}];"

    def param_decl(self, name: str, p: ir.Param, index: int) -> str:
        raise NotImplementedError

    def scalar_param_prologue(self, unit: "TranslationUnit", name: str, raw: str, t: ScalarType) -> Optional[str]:
        """If a scalar parameter's storage type differs from its value type, the parameter is declared
        as ``raw`` and this statement defines ``name``; None if the parameter is used directly."""
        return None

    def kernel_signature(self, symbol: str, params: List[str], regs: Sequence[Tuple[str, int]]) -> str:
        raise NotImplementedError

    def prologue(self, unit: "TranslationUnit") -> List[str]:
        """Lines before the helpers: includes, pragmas (may read ``unit.features``)."""
        return []

    def helper_source(self, name: str) -> Tuple[str, Tuple[str, ...]]:
        """Source of helper ``name`` and the helpers it calls."""
        raise KeyError(name)

    def loop_guard(self, fn: ir.Function) -> Optional[Tuple[str, str]]:
        """(a declaration at the top of kernel ``fn``, a condition that every loop condition is
        and-ed with), or None: where a dialect's compiler needs loops marked (OpenCL on PoCL)."""
        return None

    # ---------------------------------------------------------------- errors
    def matrix(self, em: "KernelEmitter", s: ir.MatrixOp) -> None:
        """Emit a matrix-fragment statement (docs/language.md "Matrix fragments") into ``em``; dialects
        whose target kind declares Capabilities.matrix (polykern/capabilities.py) override this."""
        raise em.fail("matrix fragments", f"the {self.language} emitter has no matrix engine", s)

    def async_copy(self, em: "KernelEmitter", s: ir.Stmt) -> None:
        """Emit pk.copy_async/copy_commit/copy_wait (docs/language.md "Asynchronous copies"); only
        dialects whose target kind declares Capabilities.async_copy see them (the pipeline
        lowers them to plain copies for every other target)."""
        raise em.fail("asynchronous copies", f"the {self.language} emitter has none (they are lowered to "
                      "plain copies before it runs: passes/async_copy.py)", s)

    def hopper(self, em: "KernelEmitter", s: ir.HopperOp) -> None:
        """Emit a Hopper operation (docs/language.md "Hopper ..."); only dialects whose target kind declares
        Capabilities.hopper see them (the pipeline refuses every other target)."""
        raise em.fail("Hopper operations", f"the {self.language} emitter has none", s)

    #: ``pk.debug_print``: the length modifier of a 64-bit integer, and whether a float argument is passed
    #: as a double (C's variadic promotion; OpenCL C's printf takes a float as it is)
    PRINT_LONG64 = "ll"
    PRINT_FLOAT_AS_DOUBLE = True

    def print_call(self, em: "KernelEmitter", s: ir.Print) -> str:
        """``printf("...", args);`` for a ``pk.debug_print``; only dialects whose target kind declares
        ``Capabilities.debug_print`` see one (the pipeline refuses every other target)."""
        text = debug_print.c_format(debug_print.parse(s.fmt), [a.type for a in s.args], self.PRINT_LONG64)
        args = []
        for a in s.args:
            code = em.expr(a)
            args.append(f"(double){code.at(UNARY)}" if a.type.is_float and self.PRINT_FLOAT_AS_DOUBLE else str(code))
        return f"printf({c_string(text)}{''.join(', ' + x for x in args)});"

    def hidden_params(self, fn: ir.Function) -> List[str]:
        """Parameters the dialect adds after the user's (and the dynamic shared one): none by default."""
        return []

    def signature_attributes(self, fn: ir.Function, head: str) -> str:
        """``head`` (kernel_signature's) with any attributes the kernel needs (launch bounds)."""
        return head

    def kernel_declarations(self, em: "KernelEmitter") -> None:
        """Lines after the array declarations (objects a dialect declares per kernel): none by default."""

    def refuse(self, feature: str, reason: str, loc: Optional[SourceLoc] = None) -> KernelTypeError:
        return KernelTypeError(f"{self.name} backend: {feature} is not supported: {reason}", loc)


class TranslationUnit:
    """Helpers and features collected while emitting the kernels of one source file."""

    def __init__(self, dialect: CDialect):
        self.dialect = dialect
        self.helpers: Dict[str, Tuple[str, Tuple[str, ...]]] = {}
        self.features: set = set()

    def helper(self, name: str, source: Optional[str] = None, deps: Tuple[str, ...] = ()) -> str:
        """Require helper ``name`` (from the dialect's library, or the given source); returns ``name``."""
        if name not in self.helpers:
            if source is None:
                source, deps = self.dialect.helper_source(name)
            self.helpers[name] = (source, tuple(deps))
            for d in deps:
                self.helper(d)
        return name

    def helper_lines(self) -> List[str]:
        """Every required helper, dependencies first, otherwise sorted by name."""
        out, done = [], set()

        def visit(n):
            if n in done:
                return
            done.add(n)
            src, deps = self.helpers[n]
            for d in sorted(deps):
                visit(d)
            out.append(src.rstrip("\n"))

        for n in sorted(self.helpers):
            visit(n)
        lines: List[str] = []
        for src in out:
            lines.extend(src.split("\n"))
            lines.append("")
        return lines
