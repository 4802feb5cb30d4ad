"""A seeded random kernel generator for differential testing (Csmith/YARPGen style, for polykern).

``generate(seed)`` returns a :class:`GenProgram`: the kernel's Python *source* (readable, savable,
compiled by the real frontend), its launch shape, the arguments (from the same seed), and the
features it uses (``f64``, ``i64``, ``i8`` ..., see ``FEATURES``) so a runner knows which refusals
a backend may answer with. The same seed gives the same program and the same inputs, on any host.

Programs are valid by construction, so the oracle (``polykern.testing.interp``) gives them one meaning:
- every index is masked into range (``e & (N - 1)`` on an i32, N a power of two); integer ``//`` and
  ``%`` divide by ``(d | 1)``, never zero;
- every work-item writes only its own output slots (``o[gid * K + c]``), reads inputs and its own
  slots, and meets the others only through shared memory between barriers (each work-item writes
  ``sh[lid]``, all read after ``barrier()``, at the top level where control flow is uniform) and
  through atomics whose result does not depend on order (integer add, min, max; the old value unused);
- ``while`` loops count a fresh counter first thing in their body, so ``continue`` cannot spin;
- inexact operations (math builtins, float ``/``) are applied to exact operands and stored directly
  into a "math" buffer nobody reads, so each is compared within its own ULP budget;
- float -> int casts see any value (NaN, infinities, out of range: they saturate, NaN -> 0);
- device functions (``@pk.func`` helpers ``h<k>``) take scalars, an input buffer and a ``pk.constexpr``,
  may return early (also from inside a loop) and are called from expressions; a kernel may have a
  ``pk.constexpr`` parameter (``range`` bounds, literals), fixed by ``.specialize`` at the module's end;
- vector groups, a ``pk.shared_dynamic`` array, rotates past the width (``kernelgen_memory``), matrix
  fragments (``kernelgen_matrix``), device functions with memory (``kernelgen_funcs``) and subgroup
  collectives under subgroup-uniform control flow (``kernelgen_subgroups``), each drawn from a random
  stream of its own with its ``PROBABILITY``.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..ir.bfloat16 import bf16_array
from ..numerics import FAST_MATH_OPS
from .kernelgen_funcs import memory_functions
from .kernelgen_matrix import matrix_possible, matrix_section
from .kernelgen_memory import copy_counts, rotate_section, shared_dynamic_section, vector_section
from .kernelgen_subgroups import subgroup_uniform_section
from .kernelgen_values import FLOATS, INTS, itemsize
from .kernelgen_values import RANGES as _RANGES, np_name as _np, rand_value as _rand_value

PORTABLE = ("bool", "i32", "u32", "f32", "f16")
ALL = ("bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64")
#: feature names a backend may refuse (backends declare theirs; see tests/runtimes.py)
FEATURES = ("f64", "f16", "i64", "u64", "i8", "u8", "i16", "u16", "bool_buffer", "math_f64", "subgroups", "barrier",
            "bf16", "matrix")
#: every type a program may use, in declaration order: ALL (the pool the types are drawn from) and bf16,
#: which joins from a random stream of its own (so the programs of earlier seeds stay what they were)
TYPE_ORDER = ALL + ("bf16",)

N_IN = 16  # input buffer length (indices masked with N_IN - 1)
N_LOCAL = 8  # pk.local array length
N_ACC = 8  # atomic accumulator length
#: the chance that a program gets each section added on 2026-11-28 (memory, matrix, rotates, device functions; each drawn from its own random stream,
#: ``random.Random(f"{section}-{seed}")``, so a seed without them keeps its program of before)
PROBABILITY = {"vectors": 0.25, "shared_dynamic": 0.2, "matrix": 0.15, "rotates": 0.3, "memory_functions": 0.15,
               "subgroup_uniform": 0.25}
_INEXACT_MATH = ("sqrt", "rsqrt", "exp", "exp2", "log", "log2", "sin", "cos", "tanh", "pow", "fma")
_EXACT_F64_MATH = ("sqrt", "fma", "/")  # the f64 math stores that are not "math_f64"

@dataclass
class GenProgram:
    seed: int
    name: str
    source: str
    grid: Tuple[int, int, int]
    block: Tuple[int, int, int]
    params: List[Tuple[str, str, Optional[str]]]  # (name, scalar type, "in"/"out"/"math"/"acc" or None)
    features: frozenset
    args_seed: int
    sizes: Dict[str, int] = field(default_factory=dict)
    finite: bool = False  # no NaN or infinity among the float inputs (avoid "specials")
    shared_size: Optional[int] = None  # the launch's shared_size= (the kernel has a pk.shared_dynamic array)
    #: in a checked program (generate(checked=True)): what one work-item accesses out of bounds ("" none)
    violation: str = ""
    #: buffer parameter -> the alignment (bytes) its pk.vload/vstore/copy_async groups need, where more
    #: than one element's: what the built kernel's FunctionInfo ``vector_align`` must record
    vector_align: Dict[str, int] = field(default_factory=dict)
    #: generate(fast_math=True): built with pk.build(..., fast_math=True), some math stores spelled with
    #: the pk.fast_* builtins; compared against the fast-math promises
    fast_math: bool = False

    def make_args(self) -> List:
        """The launch arguments (NumPy scalars and arrays), the same for the same program."""
        rng = np.random.default_rng(self.args_seed)
        out = []
        for name, t, role in self.params:
            if role is None:
                out.append(np.dtype(_np(t)).type(_rand_value(rng, t, self.finite)))
            elif t == "bf16":  # values rounded to bf16, passed as their bits (ir/bfloat16.py)
                out.append(bf16_array(np.array([_rand_value(rng, t, self.finite) for _ in range(self.sizes[name])],
                                               np.float32)))
            else:
                n = self.sizes[name]
                arr = np.array([_rand_value(rng, t, self.finite) for _ in range(n)], dtype=_np(t))
                out.append(arr)
        return out


class _Gen:
    n_in, n_local = N_IN, N_LOCAL

    def __init__(self, seed: int, name: str, avoid=frozenset(), checked: bool = False, probability=None,
                 fast_math: bool = False):
        self.avoid = frozenset(avoid)
        self.fast_math = fast_math
        self.checked = checked
        self.probability = dict(PROBABILITY, **(probability or {}))
        self.rng = random.Random(seed)
        self.seed = seed
        self.name = name
        r = self.rng
        self.portable = r.random() < 0.5
        pool = tuple(t for t in (PORTABLE if self.portable else ALL) if t not in self.avoid)
        k = r.randint(2, min(6, len(pool)))
        types = set(r.sample(pool, k)) | {"i32"}
        if "bf16" not in self.avoid and random.Random(f"bf16-{seed}").random() < 0.3:
            types.add("bf16")
        self.types = sorted(types, key=TYPE_ORDER.index)
        self.vars: Dict[str, List[str]] = {t: [] for t in TYPE_ORDER}
        self.fixed: set = set()  # readable but not assignable: parameters, ids, loop variables
        self.readonly: Dict[str, str] = {}  # type -> input buffer name
        self.outs: Dict[str, str] = {}  # type -> output buffer name
        self.out_slots: Dict[str, int] = {}
        self.maths: Dict[str, str] = {}
        self.math_slots: Dict[str, int] = {}
        self.local_arrays: Dict[str, str] = {}
        self.shared: Optional[Tuple[str, str]] = None
        self.counter = 0
        self.lines: List[str] = []
        self.loop_depth = 0
        self.budget = r.randint(8, 28)
        self.uses_inexact_f64 = False
        self.block = r.choice([4, 8, 16])
        self.groups = r.choice([1, 2, 3])
        self.helpers: List[Tuple[str, str, List[Tuple[str, str]]]] = []  # (name, return type, params)
        self.constexprs: Dict[str, int] = {}  # pk.constexpr names visible here -> value
        self.call_depth = 0
        # Whether a program has device functions or a constexpr comes from a second generator, so the
        # programs of seeds without them are the ones this generator made before they existed.
        self.frng = random.Random(f"features-{seed}")
        self.sgrng = random.Random(f"subgroups-{seed}")  # likewise for the subgroup section
        self.cprng = random.Random(f"copies-{seed}")  # likewise for the asynchronous-copy section
        self.uses_barrier = False
        self.uses_subgroups = False
        # the sections added on 2026-11-28, each from a random stream of its own (see PROBABILITY)
        self.streams = {k: random.Random(f"{k}-{seed}") for k in PROBABILITY}
        self.shared_size: Optional[int] = None
        self.violation = ""
        self.extra_types: set = set()  # types a section uses beyond self.types (features)
        self.extra_sizes: Dict[str, int] = {}
        self.align: Dict[str, int] = {}
        self.mem_call: Optional[Tuple[str, str]] = None
        self.params: List[Tuple[str, str, Optional[str]]] = []

    # ------------------------------------------------------------------ helpers
    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, depth: int, text: str):
        self.lines.append("    " * (depth + 1) + text)

    def types_of(self, pred) -> List[str]:
        return [t for t in self.types if pred(t)]

    def int_types(self) -> List[str]:
        return self.types_of(lambda x: x in INTS)

    def add_buffer(self, t: str, role: str, size: int) -> str:
        """A new buffer parameter (after the others: earlier arguments keep their values) of ``size``."""
        name = self.fresh("mo" if role == "out" else "ma")
        self.params.append((name, t, role))
        self.extra_sizes[name] = size
        return name

    def need_align(self, buf: str, n: int, t: str):
        """Record that a group of ``n`` elements of ``t`` accesses kernel buffer ``buf`` (docs/language.md 6.1)."""
        size = itemsize(t)
        if n * size > size:
            self.align[buf] = max(self.align.get(buf, 0), min(n * size, 16))

    def wants(self, section: str, needs=()) -> bool:
        """Whether this program gets ``section`` (its own stream's first draw; not when avoided)."""
        if section in self.avoid or set(needs) & self.avoid:
            return False
        return self.streams[section].random() < self.probability[section]

    # ------------------------------------------------------------------ expressions
    def literal(self, t: str, bare: bool = False) -> str:
        """A literal of type ``t``: typed (``i8(5)``), or with ``bare`` a plain literal that adapts to
        the other operand (only used where that operand is typed)."""
        r = self.rng
        if t == "bool":
            return r.choice(["True", "False"])
        if t in FLOATS:
            c = r.random()
            if c < 0.1 and "specials" not in self.avoid:
                v = r.choice(["NAN", "INF", "-INF"])
            elif c < 0.2:
                v = r.choice(["0.0", "-0.0", "65504.0", "1e-3", "0.1"] +
                             (["3e38", "2147483648.0", "-2147483904.0", "4294967296.0"] if t != "f16" else []))
            else:
                v = repr(r.randint(-64, 64) / r.choice([1, 2, 4, 8, 10]))
        else:
            lo, hi = _RANGES[t]
            c = r.random()
            if c < 0.2:
                v = str(r.choice([lo, hi, lo + 1, hi - 1]))
            else:
                v = str(r.randint(max(lo, -100), min(hi, 100)))
        if bare:
            return f"({v})" if v.startswith("-") else v
        return f"{t}({v})"

    def index(self, depth: int, mask: int) -> str:
        t = self.rng.choice(self.types_of(lambda x: x in INTS))
        e = self.expr(t, depth)
        if t != "i32":
            e = f"i32({e})"
        return f"(({e}) & {mask})"

    def leaf(self, t: str) -> str:
        r = self.rng
        opts = ["lit"] * 2
        if self.vars[t]:
            opts += ["var"] * 4
        if t in self.readonly:
            opts += ["in"] * 2
        if t == "i32":
            opts += ["reg"]
        if t in self.local_arrays:
            opts += ["local"]
        calls = [h for h in self.helpers if h[1] == t and self.call_depth < 2
                 and all(pt[4:] in self.readonly for _, pt in h[2] if pt.startswith("buf:"))]
        if calls:
            opts += ["call"]
        if self.constexprs and t in INTS:
            opts += ["const"]
        c = r.choice(opts)
        if c == "call":
            return self.call(r.choice(calls))
        if c == "const":  # typed: a bare constant would adapt to its context like a literal
            return f"{t}({r.choice(sorted(self.constexprs))})"
        if c == "var":
            return r.choice(self.vars[t])
        if c == "in":
            return f"{self.readonly[t]}[{self.index(0, N_IN - 1)}]"
        if c == "reg":
            return r.choice(["pk.global_id(0)", "pk.local_id(0)", "pk.group_id(0)", "pk.local_size(0)",
                             "pk.num_groups(0)"])
        if c == "local":
            return f"{self.local_arrays[t]}[{self.index(0, N_LOCAL - 1)}]"
        return self.literal(t)

    def expr(self, t: str, depth: int) -> str:
        r = self.rng
        if depth <= 0 or r.random() < 0.3:
            return self.leaf(t)
        d = depth - 1
        if t == "bool":
            c = r.random()
            if c < 0.45:
                ct = r.choice(self.types_of(lambda x: x != "bool"))
                op = r.choice(["<", "<=", ">", ">=", "==", "!="])
                return f"({self.expr(ct, d)} {op} {self.expr(ct, d)})"
            if c < 0.65:
                return f"({self.expr('bool', d)} {r.choice(['and', 'or'])} {self.expr('bool', d)})"
            if c < 0.75:
                return f"(not {self.expr('bool', d)})"
            if c < 0.85:
                return self.cast(t, d)
            if c < 0.9:
                return f"({self.expr('bool', d)} == {self.expr('bool', d)})"
            return self.choice_expr(t, d)
        c = r.random()
        if c < 0.45:
            return self.arith(t, d)
        if c < 0.6:
            return self.cast(t, d)
        if c < 0.7:
            return self.choice_expr(t, d)
        if c < 0.85:
            return self.exact_math(t, d)
        if c < 0.93:
            return f"(-{self.expr(t, d)})"
        if t in INTS:
            return f"(~{self.expr(t, d)})"
        return self.arith(t, d)

    def arith(self, t: str, d: int) -> str:
        r = self.rng
        a = self.expr(t, d)
        b = self.literal(t, bare=True) if r.random() < 0.25 else self.expr(t, d)
        if t in FLOATS:
            op = r.choice(["+", "-", "*", "+", "-", "*", "%"])
            if op == "%" and "float_mod" in self.avoid:
                op = "+"
            if op == "%":
                return f"({a} % ({b}))"
            return f"({a} {op} {b})"
        op = r.choice(["+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>"])
        if op in ("//", "%"):
            # x // 0 == x and x % 0 == 0 are defined (numerics), so a divisor may be zero sometimes
            return f"({a} {op} ({b} | 1))" if r.random() < 0.8 else f"({a} {op} {b})"
        if op in ("<<", ">>"):
            bits = int(t[1:])
            names = [v for v in self.vars[t]]
            if names and r.random() < 0.3:
                b = r.choice(names)  # a run-time amount: taken modulo the width
            elif r.random() < 0.5:
                b = str(r.randint(0, bits - 1))
            else:
                b = f"({b} & {bits - 1})"
        return f"({a} {op} {b})"

    def cast(self, t: str, d: int) -> str:
        src = self.rng.choice(self.types_of(lambda x: x != t))
        fn = "bool_" if t == "bool" else t
        return f"{fn}({self.expr(src, d)})"

    def choice_expr(self, t: str, d: int) -> str:
        c = self.expr("bool", d)
        a, b = self.expr(t, d), self.expr(t, d)
        if self.rng.random() < 0.5:
            return f"pk.select({c}, {a}, {b})"
        return f"({a} if {c} else {b})"

    def exact_math(self, t: str, d: int) -> str:
        r = self.rng
        if t in FLOATS:
            f = r.choice(["abs", "floor", "ceil", "min", "max"])
        else:
            f = r.choice(["abs", "min", "max"] if t[0] == "i" else ["min", "max"])
        if f in ("min", "max"):
            return f"pk.{f}({self.expr(t, d)}, {self.expr(t, d)})"
        return f"pk.{f}({self.expr(t, d)})"

    # ------------------------------------------------------------------ statements
    def out_store(self, depth: int, t: str):
        buf = self.outs[t]
        c = self.out_slots[t]
        self.out_slots[t] += 1
        self.emit(depth, f"{buf}[g * {{K_{buf}}} + {c}] = {self.expr(t, 3)}")

    def math_store(self, depth: int):
        t = self.rng.choice(self.types_of(lambda x: x in FLOATS))
        buf = self.maths[t]
        c = self.math_slots[t]
        self.math_slots[t] += 1
        f = self.rng.choice(_INEXACT_MATH + ("/",))
        if t == "f64" and f not in _EXACT_F64_MATH:
            if "math_f64" in self.avoid:
                f = self.rng.choice(_EXACT_F64_MATH)
            else:
                self.uses_inexact_f64 = True
        if self.fast_math and (f == "/" or f in FAST_MATH_OPS) and self.rng.random() < 0.5:  # any float type:
            fast = f"fast_{'div' if f == '/' else f}"  # not f32, the precise op (passes/fast_math.py)
            val = f"pk.{fast}({', '.join(self.expr(t, 2) for _ in range(2 if f == '/' else 1))})"
        elif f == "/":
            val = f"{self.expr(t, 2)} / {self.expr(t, 2)}"
        elif f == "pow":
            val = f"pk.pow({self.expr(t, 2)}, {self.expr(t, 2)})"
        elif f == "fma":
            val = f"pk.fma({self.expr(t, 2)}, {self.expr(t, 2)}, {self.expr(t, 2)})"
        else:
            val = f"pk.{f}({self.expr(t, 2)})"
        self.emit(depth, f"{buf}[g * {{K_{buf}}} + {c}] = {val}")

    def stmt(self, depth: int):
        r = self.rng
        self.budget -= 1
        c = r.random()
        nest_ok = depth < 3 and self.budget > 2
        if c < 0.2:
            t = r.choice(self.types)
            names = [v for v in self.vars[t] if v not in self.fixed]
            if not names:
                return self.declare(depth, t)
            v = r.choice(names)
            if t != "bool" and r.random() < 0.4:
                op = r.choice(["+", "-", "*"] if t in FLOATS else ["+", "-", "*", "&", "|", "^", "<<", ">>"])
                amount = self.expr(t, 2)
                if op in ("<<", ">>"):  # a constant amount must be < the width (the frontend refuses it)
                    amount = f"({amount} & {int(t[1:]) - 1})"
                self.emit(depth, f"{v} {op}= {amount}")
            else:
                self.emit(depth, f"{v} = {self.expr(t, 3)}")
        elif c < 0.35:
            self.out_store(depth, r.choice(list(self.outs)))
        elif c < 0.45:
            self.math_store(depth)
        elif c < 0.55 and self.local_arrays:
            t = r.choice(list(self.local_arrays))
            self.emit(depth, f"{self.local_arrays[t]}[{self.index(1, N_LOCAL - 1)}] = {self.expr(t, 2)}")
        elif c < 0.62:
            t = r.choice(["i32", "u32"]) if "u32" in self.types else "i32"
            buf, op = self.accs[t]  # one op per buffer: mixing add with max would depend on order
            self.emit(depth, f"pk.atomic_{op}({buf}, {self.index(1, N_ACC - 1)}, {self.expr(t, 2)})")
        elif c < 0.75 and nest_ok:
            self.emit(depth, f"if {self.expr('bool', 3)}:")
            self.body(depth + 1)
            k = r.random()
            if k < 0.3:
                self.emit(depth, f"elif {self.expr('bool', 2)}:")
                self.body(depth + 1)
            if k < 0.6:
                self.emit(depth, "else:")
                self.body(depth + 1)
        elif c < 0.85 and nest_ok:
            self.for_loop(depth)
        elif c < 0.9 and nest_ok:
            self.while_loop(depth)
        elif c < 0.93 and self.loop_depth > 0:
            self.emit(depth, f"if {self.expr('bool', 2)}:")
            self.emit(depth + 1, r.choice(["break", "continue"]))
        elif c < 0.95 and depth > 0:
            self.emit(depth, f"if {self.expr('bool', 2)}:")
            self.emit(depth + 1, "return")
        else:
            self.declare(depth, r.choice(self.types))

    def declare(self, depth: int, t: str):
        v = self.fresh("v")
        val = self.expr(t, 3)
        if self.rng.random() < 0.5 or t in ("bool",):
            self.emit(depth, f"{v}: {'bool_' if t == 'bool' else t} = {val}")
        else:
            self.emit(depth, f"{v} = {t if t != 'bool' else 'bool_'}({val})")
        if depth == 0:
            self.vars[t].append(v)  # only top-level names are visible everywhere after

    def body(self, depth: int):
        n = self.rng.randint(1, 3)
        saved = {t: list(v) for t, v in self.vars.items()}
        for _ in range(n):
            self.stmt(depth)
        self.vars = saved

    def for_loop(self, depth: int):
        r = self.rng
        v = self.fresh("k")  # not "i": i16 would shadow the type
        c = r.random()
        if c < 0.5:
            rng_ = f"range({r.randint(0, 5)})"
        elif c < 0.8:
            rng_ = f"range({r.randint(-3, 2)}, {r.randint(0, 6)}, {r.choice([1, 2, 3])})"
        elif c < 0.9:
            rng_ = f"range({r.randint(3, 7)}, {r.randint(-3, 2)}, {r.choice([-1, -2])})"
        elif c < 0.95 and self.constexprs:
            rng_ = f"range({r.choice(sorted(self.constexprs))})"  # unrolled (lang/specialize.py)
        else:
            rng_ = f"range({self.index(2, 3)})"
        self.emit(depth, f"for {v} in {rng_}:")
        self.loop_depth += 1
        saved = {t: list(x) for t, x in self.vars.items()}
        self.vars["i32"].append(v)
        self.fixed.add(v)
        n = r.randint(1, 3)
        for _ in range(n):
            self.stmt(depth + 1)
        self.vars = saved
        self.loop_depth -= 1

    def while_loop(self, depth: int):
        r = self.rng
        w = self.fresh("w")
        self.emit(depth, f"{w} = 0")
        self.emit(depth, f"while {w} < {r.randint(0, 4)}:")
        self.emit(depth + 1, f"{w} += 1")
        self.loop_depth += 1
        saved = {t: list(x) for t, x in self.vars.items()}
        n = r.randint(1, 3)
        for _ in range(n):
            self.stmt(depth + 1)
        self.vars = saved
        self.loop_depth -= 1

    # ------------------------------------------------------------------ asynchronous copies
    def copy_section(self):
        """pk.copy_async at the top level: each work-item copies one group of an input buffer into its
        slot of a shared array (one or two committed groups, waited for with copy_wait(1) and
        copy_wait(0)), then, after a barrier, reads an element another work-item copied (docs/language.md
        "Asynchronous copies"; plain copies on every backend but cuda/nvptx sm_80+)."""
        r = self.cprng
        ins = [t for t in self.types if t in self.readonly and t != "bool"]
        if not ins:
            return
        t = r.choice(ins)
        n = r.choice(copy_counts(self, t))
        groups = N_IN // n  # of the input buffer (N_IN elements, a power of two)
        parts = r.choice([1, 2])
        sh = self.fresh("cp")
        self.uses_barrier = True
        self.emit(0, f"{sh} = pk.shared({t}, {parts * self.block * n})")
        for p in range(parts):
            off = r.randint(0, groups - 1)
            self.need_align(self.readonly[t], n, t)
            self.emit(0, f"pk.copy_async({sh}, lid + {p * self.block}, {self.readonly[t]}, "
                         f"(lid + {off}) & {groups - 1}, {n})")
            self.emit(0, "pk.copy_commit()")
        if parts == 2:
            self.emit(0, "pk.copy_wait(1)")
        self.emit(0, "pk.copy_wait(0)")
        self.emit(0, "pk.barrier()")
        v = self.fresh("v")
        self.emit(0, f"{v} = {sh}[(lid * {n} + {r.randint(0, parts * self.block * n - 1)}) & "
                     f"{parts * self.block * n - 1}]")
        self.vars[t].append(v)

    # ------------------------------------------------------------------ subgroups
    def subgroup_section(self):
        """pk.subgroup_* at the top level (uniform control flow), used only in ways whose result does
        not depend on the device's subgroup size: reductions and votes folded into an accumulator by
        each subgroup's lane 0 with the accumulator's own (order-free) atomic, shuffles that give a
        work-item its own value back (masks 1 and 2 stay inside a subgroup: blocks are 4, 8 or 16),
        broadcasts of group-uniform values, and the ids recombined into local_id(0)."""
        r = self.sgrng
        self.uses_subgroups = True
        lead = "pk.subgroup_local_id() == 0"
        for t, (acc, op) in sorted(self.accs.items()):
            if r.random() < 0.7:
                v = self.fresh("sg")
                self.emit(0, f"{v} = pk.subgroup_{op}({t}({self.expr(t, 2)}))")
                self.emit(0, f"if {lead}:")
                self.emit(1, f"pk.atomic_{op}({acc}, {r.randint(0, N_ACC - 1)}, {v})")
            if op in ("min", "max") and r.random() < 0.5:  # min of all() / max of any(): the group's vote
                vote = "all" if op == "min" else "any"
                v = self.fresh("sg")
                self.emit(0, f"{v} = {t}(pk.subgroup_{vote}({self.expr('bool', 2)}))")
                self.emit(0, f"if {lead}:")
                self.emit(1, f"pk.atomic_{op}({acc}, {r.randint(0, N_ACC - 1)}, {v})")
        for t in [t for t in self.types if t in ("i32", "u32", "i64", "u64", "f32", "f64")]:
            if r.random() < 0.5:
                v = self.fresh("sg")
                m = r.choice([1, 2])
                inner = r.choice([f"pk.subgroup_shuffle_xor(pk.subgroup_shuffle_xor({self.expr(t, 2)}, {m}), {m})",
                                  f"pk.subgroup_shuffle({self.expr(t, 2)}, pk.subgroup_local_id())"])
                self.emit(0, f"{v} = {t}({inner})")
                self.vars[t].append(v)
            if r.random() < 0.3:
                v = self.fresh("sg")
                self.emit(0, f"{v} = {t}(pk.subgroup_broadcast_first({t}(pk.group_id(0) * {r.randint(1, 9)})))")
                self.vars[t].append(v)
        if r.random() < 0.5:
            v = self.fresh("sg")
            self.emit(0, f"{v} = pk.subgroup_id() * pk.subgroup_size() + pk.subgroup_local_id() - lid")
            self.vars["i32"].append(v)

    # ------------------------------------------------------------------ device functions
    def call(self, helper) -> str:
        name, _, params = helper
        self.call_depth += 1
        args = []
        for p, pt in params:
            if pt == "constexpr":
                args.append(str(self.rng.randint(0, 4)))
            elif pt.startswith("buf:"):
                args.append(self.readonly[pt[4:]])
            else:
                args.append(self.expr(pt, 1))
        self.call_depth -= 1
        return f"{name}({', '.join(args)})"

    def helper(self) -> List[str]:
        """A @pk.func: scalar parameters, maybe an input buffer and a pk.constexpr, early returns."""
        r = self.rng
        name, t = self.fresh("h"), r.choice(self.types)
        params = [(self.fresh("p"), r.choice(self.types)) for _ in range(r.randint(1, 3))]
        kernel_state = (self.vars, self.readonly, self.local_arrays, self.lines, self.fixed, self.constexprs)
        self.vars = {x: [] for x in TYPE_ORDER}
        for p, pt in params:
            self.vars[pt].append(p)
        inputs = {x: self.readonly[x] for x in self.readonly if r.random() < 0.5}
        self.readonly, self.local_arrays, self.lines, self.fixed = {}, {}, [], set()
        for x in inputs:
            b = self.fresh("b")
            self.readonly[x] = b
            params.append((b, "buf:" + x))
        self.constexprs = {}
        if r.random() < 0.5:
            c = self.fresh("C")
            self.constexprs[c] = 0
            params.append((c, "constexpr"))
        for _ in range(r.randint(0, 2)):
            self.declare(0, r.choice(self.types))
        if r.random() < 0.5:
            self.emit(0, f"if {self.expr('bool', 2)}:")
            self.emit(1, f"return {self.expr(t, 2)}")
        if r.random() < 0.5:
            k = self.fresh("k")
            bound = sorted(self.constexprs)[0] if self.constexprs else str(r.randint(0, 4))
            self.emit(0, f"for {k} in range({bound}):")
            self.vars["i32"].append(k)
            self.fixed.add(k)
            names = [v for v in self.vars[t] if v not in self.fixed]
            if names:
                self.emit(1, f"{r.choice(names)} = {self.expr(t, 2)}")
            self.emit(1, f"if {self.expr('bool', 2)}:")
            self.emit(2, f"return {self.expr(t, 2)}")
        self.emit(0, f"return {self.expr(t, 3)}")
        body = self.lines
        sig = ", ".join(f"{p}: {_helper_annot(pt)}" for p, pt in params)
        (self.vars, self.readonly, self.local_arrays, self.lines, self.fixed, self.constexprs) = kernel_state
        self.helpers.append((name, t, params))
        return ["", "", "@pk.func", f"def {name}({sig}) -> {_annot(t, None)}:"] + body + [""]

    # ------------------------------------------------------------------ program
    def program(self) -> GenProgram:
        r = self.rng
        params = self.params
        for _ in range(r.randint(0, 3)):
            t = r.choice(self.types)
            t = "f32" if t == "bf16" else t  # no bf16 scalar kernel arguments (docs/language.md "bf16")
            name = self.fresh("s")
            params.append((name, t, None))
            self.vars[t].append(name)
            self.fixed.add(name)
        for t in self.types:
            if t == "bool" and (self.portable or "bool_buffer" in self.avoid):
                continue
            if r.random() < 0.7:
                name = self.fresh("a")
                self.readonly[t] = name
                params.append((name, t, "in"))
            name = self.fresh("o")
            self.outs[t] = name
            self.out_slots[t] = 0
            params.append((name, t, "out"))
        for t in self.types_of(lambda x: x in FLOATS):
            name = self.fresh("m")
            self.maths[t] = name
            self.math_slots[t] = 0
            params.append((name, t, "math"))
        if not self.maths:
            self.types.append("f32")
            name = self.fresh("m")
            self.maths["f32"] = name
            self.math_slots["f32"] = 0
            params.append((name, "f32", "math"))
        self.accs = {}
        for t in (["i32", "u32"] if "u32" in self.types else ["i32"]):
            name = self.fresh("acc")
            self.accs[t] = (name, r.choice(["add", "add", "min", "max"]))
            params.append((name, t, "acc"))
        helper_lines = []
        for _ in range(self.frng.choice([0, 0, 0, 1, 2]) if "functions" not in self.avoid else 0):
            helper_lines += self.helper()
        if self.wants("memory_functions", ("functions", "barrier")):
            helper_lines += memory_functions(self)
        if "constexpr" not in self.avoid and self.frng.random() < 0.25:
            self.constexprs[self.fresh("C")] = self.frng.randint(0, 6)

        self.emit(0, "g = pk.global_id(0)")
        self.vars["i32"].append("g")
        self.emit(0, "lid = pk.local_id(0)")
        self.vars["i32"].append("lid")
        self.fixed.update(("g", "lid"))
        for t in self.types:
            if t != "bool" and r.random() < 0.25:
                name = self.fresh("la")
                self.emit(0, f"{name} = pk.local({t}, {N_LOCAL})")
                self.local_arrays[t] = name
        if r.random() < 0.4 and "barrier" not in self.avoid:
            t = r.choice(self.types)
            sh = self.fresh("sh")
            self.uses_barrier = True
            self.emit(0, f"{sh} = pk.shared({'bool_' if t == 'bool' else t}, {self.block})")
            for _ in range(r.randint(1, 2)):
                self.emit(0, f"{sh}[lid] = {self.expr(t, 3)}")
                self.emit(0, "pk.barrier()")
                v = self.fresh("v")
                self.emit(0, f"{v} = {sh}[(lid + {r.randint(0, self.block - 1)}) & {self.block - 1}]")
                self.emit(0, "pk.barrier()")
                self.vars[t].append(v)
        if not {"copies", "barrier"} & self.avoid and self.cprng.random() < 0.25:
            self.copy_section()
        if "subgroups" not in self.avoid and self.sgrng.random() < 0.3:
            self.subgroup_section()
        if self.wants("subgroup_uniform", ("subgroups",)):
            subgroup_uniform_section(self)
        if self.wants("vectors"):
            vector_section(self)
        if self.wants("shared_dynamic", ("barrier",)) and self.shared_size is None:
            shared_dynamic_section(self)
        if self.wants("matrix", ("subgroups",)) and matrix_possible(self):
            matrix_section(self)
        if self.wants("rotates"):
            rotate_section(self)
        if self.mem_call is not None:
            t, call = self.mem_call
            v = self.fresh("v")
            self.emit(0, f"{v} = {call}")
            self.vars[t].append(v)
        while self.budget > 0:
            self.stmt(0)
        for t in self.outs:
            if self.out_slots[t] == 0:
                self.out_store(0, t)
        for t in self.maths:
            if self.math_slots[t] == 0:
                c = self.math_slots[t]
                self.math_slots[t] += 1
                self.emit(0, f"{self.maths[t]}[g * {{K_{self.maths[t]}}} + {c}] = pk.sqrt({self.expr(t, 2)})")
        nthreads = self.block * self.groups
        sizes = {}
        slots = {}
        for name, t, role in params:
            if name in self.extra_sizes:
                sizes[name] = self.extra_sizes[name]
            elif role == "in":
                sizes[name] = N_IN
            elif role == "out":
                slots[name] = self.out_slots[t]
                sizes[name] = nthreads * self.out_slots[t]
            elif role == "math":
                slots[name] = self.math_slots[t]
                sizes[name] = nthreads * self.math_slots[t]
            elif role == "acc":
                sizes[name] = N_ACC
        body = "\n".join(self.lines)
        for name, k in slots.items():
            body = body.replace(f"{{K_{name}}}", str(k))
        sig = ", ".join([f"{c}: pk.constexpr" for c in self.constexprs] +
                        [f"{n}: {_annot(t, role)}" for n, t, role in params])
        used = {t for _, t, _ in params} | set(self.types) | self.extra_types
        feats = {t for t in used if t in FEATURES}
        if any(t == "bool" and role is not None for _, t, role in params):
            feats.add("bool_buffer")
        if self.uses_inexact_f64:
            feats.add("math_f64")
        if self.uses_subgroups:
            feats.add("subgroups")
        if self.uses_barrier:  # shared memory between barriers: work-items that run together
            feats.add("barrier")
        if "pk.mma(" in body:
            feats.add("matrix")
        src = HEADER + "\n".join(helper_lines) + f"\n\n@pk.kernel\ndef {self.name}({sig}):\n{body}\n"
        if self.constexprs:  # the module's kernel is the specialized one (its .name says the values)
            values = ", ".join(f"{c}={v}" for c, v in self.constexprs.items())
            src += f"\n\n{self.name} = {self.name}.specialize({values})\n"
        return GenProgram(self.seed, self.name, src, (self.groups, 1, 1), (self.block, 1, 1), params,
                          frozenset(feats), self.seed * 7919 + 17, sizes, "specials" in self.avoid,
                          self.shared_size, self.violation, dict(self.align), self.fast_math)


def _helper_annot(pt: str) -> str:
    """A device function parameter: "constexpr", "buf:<type>" (an input buffer) or a scalar type."""
    if pt == "constexpr":
        return "pk.constexpr"
    return _annot(pt[4:], "in") if pt.startswith("buf:") else _annot(pt, None)


def _annot(t: str, role) -> str:
    tn = "bool_" if t == "bool" else t
    if role is None:
        return tn
    if role == "in":
        return f'Buffer[{tn}, "readonly"]'
    return f"Buffer[{tn}]"


HEADER = '''"""Generated by polykern.testing.kernelgen."""
import polykern as pk
from polykern import Buffer, bf16, bool_, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64  # noqa: F401

NAN = float("nan")
INF = float("inf")'''


#: what ``generate(avoid=...)`` can leave out: to keep fuzzing past a known open bug, and every name of
#: FEATURES, so that a program can be made for a target that refuses some (polykern.testing.fuzzprofile)
AVOIDABLE = {"float_mod": "no float % (C fmod)", "functions": "no @pk.func helpers",
             "constexpr": "no pk.constexpr kernel parameter", "subgroups": "no pk.subgroup_* section",
             "copies": "no pk.copy_async section", "bf16": "no bf16 values",
             **{t: f"no {t} values" for t in FEATURES if t in TYPE_ORDER and t != "bf16"},
             "bool_buffer": "no bool buffers (bool scalars and shared arrays stay)",
             "math_f64": "no f64 math beyond sqrt, fma and /",
             "barrier": "no shared memory between barriers (nor pk.copy_async, which needs one)",
             "specials": "no NaN or infinity among the literals and the inputs (arithmetic may still make one)",
             "vectors": "no pk.vload/pk.vstore section", "shared_dynamic": "no pk.shared_dynamic array",
             "matrix": "no matrix fragments", "rotates": "no rotate section (shift amounts past the width)",
             "memory_functions": "no @pk.func pair with shared memory, pk.vload/vstore and copies inside",
             "function_shared_dynamic": "no pk.shared_dynamic declared inside a device function",
             "matrix_huge_ld": "no checked-mode fragment violation by a leading dimension near 2^31 / rows",
             "subgroup_uniform": "no subgroup collectives under subgroup-uniform control flow"}
#: ``avoid`` that gives the programs of the generator before device functions and constexprs existed
#: (the seeds that regression tests name)
BEFORE_FUNCTIONS = frozenset(("functions", "constexpr", "subgroups", "copies", "bf16", "vectors", "shared_dynamic",
                              "matrix", "rotates", "memory_functions", "subgroup_uniform"))
#: ``avoid`` that gives the programs of the generator before its 2026-11-28 sections (vector groups, dynamic
#: shared memory, matrix fragments, rotates, device functions with memory): a seed's program of then
BEFORE_MEMORY = frozenset(("vectors", "shared_dynamic", "matrix", "rotates", "memory_functions", "subgroup_uniform"))


def generate(seed: int, name: Optional[str] = None, avoid=frozenset(), checked: bool = False,
             probability: Optional[Dict[str, float]] = None, fast_math: bool = False) -> GenProgram:
    """The program of ``seed`` (deterministic: the same seed and arguments give the same source and
    inputs). ``avoid``: names from ``AVOIDABLE``. ``checked``: for a checked-mode run
    (``bounds_check=True``): a share of the vector and fragment sections point one work-item's group
    or offset past its array (``GenProgram.violation`` says so; the launch must be a LaunchError).
    ``probability``: overrides of ``PROBABILITY`` (section -> chance a program gets it). ``fast_math``: the
    program is built with ``fast_math=True`` and half its math stores of ``numerics.FAST_MATH_OPS`` (and
    ``/``) call the ``pk.fast_*`` builtins (the same seed without it gives the program of before)."""
    bad = set(avoid) - set(AVOIDABLE)
    if bad:
        raise ValueError(f"kernelgen: unknown avoid {sorted(bad)}; known: {sorted(AVOIDABLE)}")
    unknown = set(probability or {}) - set(PROBABILITY)
    if unknown:
        raise ValueError(f"kernelgen: unknown probability {sorted(unknown)}; known: {sorted(PROBABILITY)}")
    return _Gen(seed, name or f"fz{seed}", avoid, checked, probability, fast_math).program()
