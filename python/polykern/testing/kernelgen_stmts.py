"""kernelgen's statements: assignments, stores into each work-item's own output slots, inexact math
stores (and their ``pk.fast_*`` spelling under fast math), local-array stores, order-free atomics,
``if``/``elif``/``else``, ``for`` and ``while`` loops, ``break``/``continue`` and early returns.

:class:`StmtGen` is a part of :class:`polykern.testing.kernelgen_generator.Generator`: it draws from
``rng``, spends ``budget`` and writes ``lines`` (through ``emit``).
"""
from __future__ import annotations

from ..numerics import FAST_MATH_OPS
from .kernelgen_values import FLOATS, N_ACC, N_LOCAL

__all__ = ["StmtGen"]

_INEXACT_MATH = ("sqrt", "rsqrt", "exp", "exp2", "log", "log2", "sin", "cos", "tanh", "pow", "fma")
_EXACT_F64_MATH = ("sqrt", "fma", "/")  # the f64 math stores that are not "math_f64"


class StmtGen:
    """The generator's statements (a part of ``Generator``)."""

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
