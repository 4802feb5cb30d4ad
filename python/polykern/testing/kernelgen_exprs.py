"""kernelgen's expressions: literals, leaves (variables, inputs, registers, local arrays, device-function
calls, constexprs), masked indices, arithmetic with safe divisors and shift amounts, casts, selects and
the exact math builtins.

:class:`ExprGen` is a part of :class:`polykern.testing.kernelgen_generator.Generator`: it draws from
``rng`` and reads the generator's names (``vars``, ``readonly``, ``local_arrays``, ``helpers``,
``constexprs``, ``types``, ``avoid``).
"""
from __future__ import annotations

from .kernelgen_funcs import call
from .kernelgen_values import FLOATS, INTS, N_IN, N_LOCAL, RANGES

__all__ = ["ExprGen"]


class ExprGen:
    """The generator's expressions (a part of ``Generator``)."""

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
            lo, hi = RANGES[t]
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
            return call(self, r.choice(calls))
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
