"""Translation of Python expressions inside a kernel to typed IR expressions."""
from __future__ import annotations

import ast
import operator
import types as _pytypes

from ..errors import KernelSyntaxError, KernelTypeError
from ..ir import nodes as ir
from ..ir.types import ArrayType, BufferType, ScalarType, bf16, bool_, f32, f64, i32, i64, u32, u64
from . import builtins as B
from . import hopper
from .call_hints import uncallable_message
from .functions import Func
from .typing_rules import coerce, default_type, is_weak, literal, unify

_BINOPS = {
    ast.Add: ("add", "+"), ast.Sub: ("sub", "-"), ast.Mult: ("mul", "*"), ast.Div: ("div", "/"),
    ast.FloorDiv: ("floordiv", "//"), ast.Mod: ("mod", "%"), ast.BitAnd: ("and", "&"),
    ast.BitOr: ("or", "|"), ast.BitXor: ("xor", "^"), ast.LShift: ("shl", "<<"),
    ast.RShift: ("shr", ">>"), ast.Pow: ("pow", "**"),
}
_CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_CMP_TEXT = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_UNSUPPORTED_EXPR = {
    ast.ListComp: "list comprehensions", ast.SetComp: "set comprehensions",
    ast.DictComp: "dict comprehensions", ast.GeneratorExp: "generator expressions",
    ast.Lambda: "lambda expressions", ast.Dict: "dict literals", ast.Set: "set literals",
    ast.List: "list literals", ast.Tuple: "tuples", ast.JoinedStr: "f-strings", ast.Await: "await",
    ast.Yield: "yield", ast.YieldFrom: "yield", ast.Starred: "starred expressions",
    ast.NamedExpr: "assignment expressions (:=)", ast.Slice: "slices",
}
# Constant folding of two untyped literals, with the language's C semantics for // and %.
_FOLD = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "and": operator.and_, "or": operator.or_, "xor": operator.xor,
}

_CAST_NAMES = {int: i32, float: f32, bool: bool_}
# The value types of subgroup shuffles and reductions (docs/language.md "Subgroups"); a backend
# without 64-bit types refuses those itself.
_SUBGROUP_TYPES = (i32, u32, i64, u64, f32, f64)
# Untyped integer constants are exact, but bounded: no type is wider than 64 bits.
_MAX_LITERAL_BITS = 128
_CONST_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: None, ast.Mod: None,
    ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.Pow: operator.pow,
}


def _is_safe(e: ir.Expr) -> bool:
    """True if evaluating ``e`` can neither fault nor have an effect (no memory access, no atomics,
    no integer division)."""
    for x in ir.walk_expr(e):
        if isinstance(x, (ir.Load, ir.Atomic)):
            return False
        if isinstance(x, ir.BinOp) and x.op in ("floordiv", "mod") and not x.type.is_float:
            return False
    return True


# The deepest expression the frontend emits; deeper ones are split into temporaries.
MAX_EXPR_DEPTH = 64


def expr_depth(e: ir.Expr) -> int:
    """The depth of an expression tree (cached on its nodes: the frontend builds trees bottom-up)."""
    d = getattr(e, "_pk_depth", None)
    if d is None:
        d = 1 + max((expr_depth(c) for c in e.children()), default=0)
        e._pk_depth = d
    return d


def _c_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


class ExprTranslator:
    """Mixin: expression translation. The host class provides ``src``, ``env`` (the Python names the
    kernel sees), ``vars`` (kernel variables: name -> ir type), ``fn`` (the ir.Function)."""

    # ------------------------------------------------------------------ helpers
    def loc(self, node):
        return self.src.loc(node)

    def syntax_error(self, msg, node):
        return KernelSyntaxError(msg, self.loc(node))

    def type_error(self, msg, node):
        return KernelTypeError(msg, self.loc(node))

    def static_value(self, node):
        """Resolve a name or attribute chain to the Python object it names, or raise KeyError."""
        if isinstance(node, ast.Name):
            if node.id in self.vars:
                raise KeyError(node.id)
            if node.id in self.env:
                return self.env[node.id]
            import builtins as pybuiltins

            if hasattr(pybuiltins, node.id):
                return getattr(pybuiltins, node.id)
            raise KeyError(node.id)
        if isinstance(node, ast.Attribute):
            base = self.static_value(node.value)
            if isinstance(base, _pytypes.ModuleType) or hasattr(base, node.attr):
                try:
                    return getattr(base, node.attr)
                except AttributeError:
                    pass
            raise KeyError(node.attr)
        raise KeyError(type(node).__name__)

    def const_int(self, node, what: str) -> int:
        """Evaluate a compile-time integer expression: int literals, numbers from the enclosing Python
        scope, and the integer operators (+ - * // % << >> & | ^ ** ~, unary + and -), exactly and with
        C truncation for // and %. Iterative, so a long constant expression cannot exhaust the stack."""
        todo, vals = [(node, False)], []
        while todo:
            n, ready = todo.pop()
            if isinstance(n, ast.BinOp) and type(n.op) in _CONST_BINOPS:
                if not ready:
                    todo += [(n, True), (n.right, False), (n.left, False)]
                    continue
                b, a = vals.pop(), vals.pop()
                vals.append(self._const_binop(n, a, b, what))
            elif isinstance(n, ast.UnaryOp) and type(n.op) in (ast.USub, ast.UAdd, ast.Invert):
                if not ready:
                    todo += [(n, True), (n.operand, False)]
                    continue
                v = vals.pop()
                vals.append(-v if isinstance(n.op, ast.USub) else (~v if isinstance(n.op, ast.Invert) else v))
            else:
                vals.append(self._const_leaf(n, what))
        return vals[0]

    def _const_leaf(self, node, what):
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, (ast.Name, ast.Attribute)):
            try:
                v = self.static_value(node)
            except KeyError:
                v = None
            if isinstance(v, int) and not isinstance(v, bool):
                return v
            if isinstance(v, (bool, float)):  # e.g. a pk.constexpr specialized to 1.5
                raise self.type_error(f"{what} must be a compile-time integer constant, but "
                                      f"'{ast.unparse(node)}' is {v!r} ({type(v).__name__})", node)
        raise self.type_error(f"{what} must be a compile-time integer constant (integer literals, names of "
                              f"Python ints and integer operators), got '{ast.unparse(node)}'", node)

    def _const_binop(self, node, a, b, what):
        op = type(node.op)
        if op in (ast.FloorDiv, ast.Mod):
            if b == 0:
                raise self.type_error(f"division by zero in {what}", node)
            q = _c_div(a, b)
            return q if op is ast.FloorDiv else a - q * b
        if op in (ast.LShift, ast.RShift) and not 0 <= b <= _MAX_LITERAL_BITS:
            raise self.type_error(f"shift amount {b} in {what} is out of range (0..{_MAX_LITERAL_BITS})", node)
        if op is ast.Pow and (b < 0 or (abs(a) > 1 and b * a.bit_length() > _MAX_LITERAL_BITS)):
            raise self.type_error(f"{a} ** {b} in {what} is not a usable integer constant", node)
        return _CONST_BINOPS[op](a, b)

    # ------------------------------------------------------------------ entry
    def expr(self, node) -> ir.Expr:
        e = self._expr(node)
        if e.loc is None:
            e.loc = self.loc(node)
        return self.bounded(e, node)

    def bounded(self, e: ir.Expr, node) -> ir.Expr:
        """``e``, or a temporary assigned ``e`` first (in ``pending``) if ``e`` is deeper than
        ``MAX_EXPR_DEPTH``: every backend walks IR expressions recursively, so their depth stays small
        however long the user's expression is. The temporary is evaluated where ``e`` was, in order."""
        if expr_depth(e) <= MAX_EXPR_DEPTH or is_weak(e) or not isinstance(e.type, ScalarType):
            return e
        tmp = self.new_temp(e.type, node)
        assign = ir.Assign(tmp, e)
        assign.loc = e.loc
        self.pending.append(assign)
        v = ir.Var(tmp, e.type)
        v.loc = e.loc
        return v

    def scalar_expr(self, node) -> ir.Expr:
        e = self.expr(node)
        if not isinstance(e.type, ScalarType):
            raise self.type_error(f"expected a scalar value, got {e.type}", node)
        return e

    def cond_expr(self, node) -> ir.Expr:
        """A condition: bool, or a number compared against zero (Python truthiness)."""
        e = self.scalar_expr(node)
        if e.type == bool_:
            return e
        e = default_type(e)
        zero = ir.Const(0.0 if e.type.is_float else 0, e.type)
        out = ir.BinOp("ne", e, zero)
        out.loc = e.loc
        return out

    def _expr(self, node) -> ir.Expr:
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            what = _UNSUPPORTED_EXPR.get(type(node), f"'{type(node).__name__}' expressions")
            raise self.syntax_error(f"{what} are not supported in kernels", node)
        return method(node)

    # ------------------------------------------------------------------ leaves
    def expr_Constant(self, node):
        if isinstance(node.value, (bool, int, float)):
            return literal(node.value, self.loc(node))
        raise self.type_error(f"constant {node.value!r} of type {type(node.value).__name__} is not "
                              "supported in kernels", node)

    def expr_Name(self, node):
        if node.id in self.vars:
            return ir.Var(node.id, self.vars[node.id])
        try:
            v = self.static_value(node)
        except KeyError:
            raise self.syntax_error(f"name '{node.id}' is not defined", node) from None
        return self._python_value(v, node)

    def expr_Attribute(self, node):
        try:
            v = self.static_value(node)
        except KeyError:
            raise self.syntax_error(f"cannot resolve '{ast.unparse(node)}' in a kernel", node) from None
        return self._python_value(v, node)

    def _python_value(self, v, node):
        if isinstance(v, (bool, int, float)):
            return literal(v, self.loc(node))
        raise self.type_error(
            f"'{ast.unparse(node)}' is a {type(v).__name__}; kernels can use only numbers from "
            "the enclosing Python scope", node)

    # ------------------------------------------------------------------ operators
    def expr_BinOp(self, node):
        """Operator trees are translated iteratively (post-order, left before right, as Python
        evaluates them): ``x[0] + x[0] + ...`` with thousands of terms cannot exhaust the stack."""
        todo, vals = [(node, False)], []
        while todo:
            n, ready = todo.pop()
            if not isinstance(n, ast.BinOp):
                vals.append(self.scalar_expr(n))
            elif not ready:
                if type(n.op) not in _BINOPS:
                    raise self.syntax_error(f"operator {type(n.op).__name__} is not supported", n)
                todo += [(n, True), (n.right, False), (n.left, False)]
            else:
                b, a = vals.pop(), vals.pop()
                e = self._binop(n, a, b)
                if e.loc is None:
                    e.loc = self.loc(n)
                vals.append(e if n is node else self.bounded(e, n))
        return vals[0]

    def _binop(self, node, a, b):
        name, text = _BINOPS[type(node.op)]
        loc = self.loc(node)
        if name == "pow":
            return self._pow(a, b, node)
        what = f"'{text}'"
        if is_weak(a) and is_weak(b):
            folded = self._fold(name, a, b, node)
            if folded is not None:
                return folded
        a, b = unify(a, b, what, loc, (node.left, text, node.right))
        a, b = default_type(a), default_type(b)
        t = a.type
        if name in ("and", "or", "xor"):
            if t.is_float:
                raise self.type_error(f"{what} needs integer or bool operands, got {t}", node)
        elif t == bool_:
            raise self.type_error(f"{what} is not defined for bool operands", node)
        if name == "div" and not t.is_float:
            raise self.type_error(
                f"'/' on {t} operands: use '//' for integer division, or cast to a float type", node)
        if name == "floordiv" and t.is_float:
            d = ir.BinOp("div", a, b)
            d.loc = loc
            return ir.Call("floor", [d])
        if name in ("shl", "shr"):
            if t.is_float:
                raise self.type_error(f"{what} needs integer operands, got {t}", node)
            if isinstance(b, ir.Const) and not 0 <= b.value < t.bits:
                raise self.type_error(f"shift amount {b.value} is out of range for {t} (0..{t.bits - 1})",
                                      node)
            # the IR takes the amount modulo the width; a target whose shift does not is given the mask
            # by passes/legalize_numerics.py
        return ir.BinOp(name, a, b)

    def _fold(self, name, a, b, node):
        x, y = a.value, b.value
        if name in _FOLD and (name not in ("and", "or", "xor") or (isinstance(x, int) and isinstance(y, int))):
            return literal(_FOLD[name](x, y), self.loc(node))
        if name == "div":
            if y == 0:
                raise self.type_error("division by zero in a constant expression", node)
            if isinstance(x, int) and isinstance(y, int):
                return None  # let the normal path report '/' on integers
            return literal(x / y, self.loc(node))
        if name in ("shl", "shr") and isinstance(x, int) and isinstance(y, int):
            if not 0 <= y <= _MAX_LITERAL_BITS:
                raise self.type_error(f"shift amount {y} of a constant expression is out of range "
                                      f"(0..{_MAX_LITERAL_BITS})", node)
            return literal(x << y if name == "shl" else x >> y, self.loc(node))
        if name in ("floordiv", "mod") and isinstance(x, int) and isinstance(y, int):
            if y == 0:
                raise self.type_error("division by zero in a constant expression", node)
            q = _c_div(x, y)
            return literal(q if name == "floordiv" else x - q * y, self.loc(node))
        return None

    def _pow(self, a, b, node):
        if is_weak(a) and is_weak(b) and isinstance(a.value, int) and isinstance(b.value, int) \
                and b.value >= 0:
            if abs(a.value) > 1 and b.value * a.value.bit_length() > _MAX_LITERAL_BITS:
                raise self.type_error(f"constant {a.value} ** {b.value} is too large for any integer type",
                                      node)
            return literal(a.value ** b.value, self.loc(node))
        if is_weak(b) and isinstance(b.value, int) and 0 <= b.value <= 8 and not a.type == bool_:
            a = default_type(a)
            if b.value == 0:
                return ir.Const(1.0 if a.type.is_float else 1, a.type)
            if not _is_safe(a) or any(isinstance(x, ir.Atomic) for x in ir.walk_expr(a)):
                tmp = self.new_temp(a.type, node)
                self.pending.append(ir.Assign(tmp, a))
                a = ir.Var(tmp, a.type)
            out = a
            for _ in range(b.value - 1):
                out = ir.BinOp("mul", out, a)
            return out
        a, b = unify(a, b, "'**'", self.loc(node), (node.left, "**", node.right))
        a, b = default_type(a), default_type(b)
        if not a.type.is_float:
            raise self.type_error(
                f"'**' on {a.type}: integer powers need a constant exponent 0..8; cast to float for pow", node)
        return ir.Call("pow", [a, b])

    def expr_UnaryOp(self, node):
        a = self.scalar_expr(node.operand)
        if isinstance(node.op, ast.UAdd):
            return a
        if isinstance(node.op, ast.Not):
            c = self.cond_expr(node.operand)
            return ir.UnaryOp("not", c)
        if isinstance(node.op, ast.USub):
            if is_weak(a):
                return literal(-a.value, self.loc(node))
            if a.type == bool_:
                raise self.type_error("unary '-' is not defined for bool", node)
            return ir.UnaryOp("neg", a)
        if isinstance(node.op, ast.Invert):
            a = default_type(a)
            if not a.type.is_int:
                raise self.type_error(f"'~' needs an integer operand, got {a.type}", node)
            return ir.UnaryOp("invert", a)
        raise self.syntax_error(f"unary operator {type(node.op).__name__} is not supported", node)

    def expr_BoolOp(self, node):
        name = "land" if isinstance(node.op, ast.And) else "lor"
        out = self.cond_expr(node.values[0])
        for v in node.values[1:]:
            saved, self.pending = self.pending, []
            try:
                rhs = self.cond_expr(v)
                pre = self.pending
            finally:
                self.pending = saved
            if pre:
                # The right operand needs statements: keep short-circuit order explicit.
                tmp = self.new_temp(bool_, node)
                self.pending.append(ir.Assign(tmp, out))
                test = ir.Var(tmp, bool_) if name == "land" else ir.UnaryOp("not", ir.Var(tmp, bool_))
                self.pending.append(ir.If(test, pre + [ir.Assign(tmp, rhs)], []))
                out = ir.Var(tmp, bool_)
            else:
                out = ir.BinOp(name, out, rhs)
            out.loc = self.loc(node)
            out = self.bounded(out, node)
        return out

    def expr_Compare(self, node):
        if len(node.ops) != 1:
            raise self.syntax_error("chained comparisons (a < b < c) are not supported in kernels; "
                                    "write (a < b) and (b < c)", node)
        op = type(node.ops[0])
        if op not in _CMPOPS:
            raise self.syntax_error(f"comparison '{type(node.ops[0]).__name__}' is not supported in kernels",
                                    node)
        name = _CMPOPS[op]
        a, b = self.scalar_expr(node.left), self.scalar_expr(node.comparators[0])
        text = _CMP_TEXT[name]
        a, b = unify(a, b, f"'{text}'", self.loc(node), (node.left, text, node.comparators[0]))
        a, b = default_type(a), default_type(b)
        if a.type == bool_ and name not in ("eq", "ne"):
            raise self.type_error(f"'{_CMP_TEXT[name]}' is not defined for bool operands", node)
        return ir.BinOp(name, a, b)

    def expr_IfExp(self, node):
        """``a if c else b`` evaluates only the arm it picks (``x[i] if i < n else 0`` must not read
        x[n]). Arms that cannot fault or have effects become a Select; others a temporary and an If."""
        c = self.cond_expr(node.test)
        a, pre_a = self.expr_with_pending(node.body)
        b, pre_b = self.expr_with_pending(node.orelse)
        a, b = unify(a, b, "conditional expression", self.loc(node), (node.body, None, node.orelse))
        a, b = default_type(a), default_type(b)
        if not pre_a and not pre_b and _is_safe(a) and _is_safe(b):
            return ir.Select(c, a, b)
        tmp = self.new_temp(a.type, node)
        self.pending.append(ir.If(c, pre_a + [ir.Assign(tmp, a)], pre_b + [ir.Assign(tmp, b)]))
        return ir.Var(tmp, a.type)

    def expr_with_pending(self, node):
        """Translate ``node`` collecting, separately, the statements it needs to run first."""
        saved, self.pending = self.pending, []
        try:
            e = self.scalar_expr(node)
            return e, self.pending
        finally:
            self.pending = saved

    # ------------------------------------------------------------------ memory
    def array_ref(self, node) -> ir.Var:
        if not isinstance(node, ast.Name) or node.id not in self.vars:
            raise self.type_error(f"'{ast.unparse(node)}' is not a Buffer or array of this kernel", node)
        t = self.vars[node.id]
        if not isinstance(t, (BufferType, ArrayType)):
            raise self.type_error(f"'{node.id}' is a scalar of type {t}, not a Buffer or array", node)
        v = ir.Var(node.id, t)
        v.loc = self.loc(node)
        return v

    def index_expr(self, node) -> ir.Expr:
        if isinstance(node, (ast.Slice, ast.Tuple)):
            raise self.syntax_error("buffers are 1-D and indexed by one integer (no slices or tuples)", node)
        e = default_type(self.scalar_expr(node))
        if not e.type.is_int:
            raise self.type_error(f"index must be an integer, got {e.type}", node)
        return e

    def expr_Subscript(self, node):
        if hopper.is_element(self, node):
            return hopper.element(self, node)
        base = self.array_ref(node.value)
        return ir.Load(base, self.index_expr(node.slice))

    # ------------------------------------------------------------------ calls
    def expr_Call(self, node):
        if node.keywords:
            raise self.syntax_error("keyword arguments are not supported in kernel calls", node)
        try:
            fn = self.static_value(node.func)
        except KeyError:
            raise self.syntax_error(f"cannot call '{ast.unparse(node.func)}' in a kernel", node) from None
        if isinstance(fn, ScalarType):
            return self._cast(fn, node)
        if isinstance(fn, Func):
            return self.call_function(fn, node, want_value=True)
        if fn in _CAST_NAMES:
            return self._cast(_CAST_NAMES[fn], node)
        if isinstance(fn, B.Builtin):
            name = fn.name
        elif id(fn) in B.PYTHON_ALIASES:
            name = B.PYTHON_ALIASES[id(fn)]
        else:
            raise self.syntax_error(uncallable_message(fn, ast.unparse(node.func), _CAST_NAMES), node)
        cat = B.BUILTINS[name].category
        return getattr(self, "_call_" + cat)(name, node)

    def _nargs(self, node, name, n):
        if len(node.args) != n:
            raise self.type_error(f"{name}() takes {n} argument{'s' if n != 1 else ''}, got {len(node.args)}",
                                  node)

    def _cast(self, t: ScalarType, node):
        self._nargs(node, str(t), 1)
        a = self.scalar_expr(node.args[0])
        if is_weak(a) and (t.is_float or isinstance(a.value, int)):
            from .typing_rules import retype_literal

            return retype_literal(a, t, f"{t}()")
        return ir.Cast(t, default_type(a))

    def _call_special(self, name, node):
        self._nargs(node, name, 1)
        dim = self.const_int(node.args[0], f"the dimension of {name}()")
        if dim not in (0, 1, 2):
            raise self.type_error(f"{name}() dimension must be 0, 1 or 2, got {dim}", node)
        return ir.SpecialReg(name, dim)

    def _call_math(self, name, node):
        if name in ("min", "max") and len(node.args) > 2:
            args = [self.scalar_expr(a) for a in node.args]
            out = args[0]
            for a in args[1:]:
                x, y = unify(out, a, f"{name}()", self.loc(node))
                out = ir.Call(name, [default_type(x), default_type(y)])
                out.loc = self.loc(node)
                out = self.bounded(out, node)
            return out
        n = 1 if name in ir.MATH_UNARY else (2 if name in ir.MATH_BINARY else 3)
        self._nargs(node, name, n)
        args = [self.scalar_expr(a) for a in node.args]
        if any(not is_weak(a) for a in args):
            t = next(a.type for a in args if not is_weak(a))
            args = [coerce(a, t, f"argument of {name}()") for a in args]
        else:
            args = [default_type(a) for a in args]
            if name not in ir.MATH_INT_OK:
                args = [coerce(literal(float(a.value), a.loc), f32, name) for a in args]
        t = args[0].type
        if t == bool_:
            raise self.type_error(f"{name}() is not defined for bool", node)
        if name not in ir.MATH_INT_OK and not t.is_float:
            raise self.type_error(f"{name}() needs a float argument, got {t}; cast with f32(...)", node)
        if name == "abs" and t.code == 1:  # unsigned: abs is the identity
            return args[0]
        return ir.Call(name, args)

    def _call_atomic(self, name, node):
        op = name[len("atomic_"):]
        n = 4 if op == "cas" else 3
        self._nargs(node, name, n)
        base = self.array_ref(node.args[0])
        if isinstance(base.type, BufferType) and base.type.readonly:
            raise self.type_error(f"{name}() on readonly Buffer '{base.name}'", node)
        if isinstance(base.type, ArrayType) and base.type.scope == "local":
            raise self.type_error(f"{name}() needs a Buffer or shared array; '{base.name}' is a local array",
                                  node)
        elem = base.type.elem
        if elem == bool_:
            raise self.type_error(f"{name}() is not defined for bool elements", node)
        if elem == bf16:
            raise self.type_error(f"{name}() is not defined for bf16 elements (no backend has bf16 atomics); "
                                  "use an f32 or u32 array", node)
        if op != "add" and op != "xchg" and op != "cas" and elem.is_float and op in ("min", "max"):
            pass  # float min/max: allowed here; backends without it refuse
        idx = self.index_expr(node.args[1])
        vals = [coerce(self.scalar_expr(a), elem, f"value of {name}()") for a in node.args[2:]]
        if op == "cas":
            return ir.Atomic(op, base, idx, vals[1], vals[0])
        return ir.Atomic(op, base, idx, vals[0])

    def _call_select(self, name, node):
        self._nargs(node, "select", 3)
        c = self.cond_expr(node.args[0])
        a, b = self.scalar_expr(node.args[1]), self.scalar_expr(node.args[2])
        a, b = unify(a, b, "select()", self.loc(node), (node.args[1], None, node.args[2]))
        return ir.Select(c, default_type(a), default_type(b))

    def _call_subgroup(self, name, node):
        """``pk.subgroup_<op>(...)`` (docs/language.md "Subgroups"). A collective is hoisted into a
        temporary of its own (``ir.Subgroup``'s contract): ``_t = subgroup_add(v)`` runs before the
        statement that uses it."""
        op = name[len("subgroup_"):]
        if op in ir.SUBGROUP_REGS:
            self._nargs(node, name, 0)
            return ir.Subgroup(op, [])
        self._nargs(node, name, 2 if op in ("shuffle", "shuffle_xor") else 1)
        if op in ("any", "all"):
            args = [self.cond_expr(node.args[0])]
        else:
            v = default_type(self.scalar_expr(node.args[0]))
            if v.type not in _SUBGROUP_TYPES:
                hint = "; use subgroup_any/subgroup_all, or cast to i32" if v.type == bool_ else \
                    "; cast to i32, u32 or f32"
                raise self.type_error(f"{name}() is not defined for {v.type} (it takes i32, u32, i64, u64, f32 "
                                      f"or f64{hint})", node)
            args = [v]
            if len(node.args) == 2:
                lane = self.scalar_expr(node.args[1])
                what = "lane" if op == "shuffle" else "mask"
                if lane.type != i32 and not is_weak(lane):
                    raise self.type_error(f"the {what} of {name}() must be i32, got {lane.type}", node)
                args.append(coerce(lane, i32, f"{what} of {name}()"))
        call = ir.Subgroup(op, args)
        call.loc = self.loc(node)
        tmp = self.new_temp(call.type, node)
        assign = ir.Assign(tmp, call)
        assign.loc = call.loc
        self.pending.append(assign)
        return ir.Var(tmp, call.type)

    def _call_debug(self, name, node):
        raise self.syntax_error("pk.debug_print() is a statement; write it on its own line", node)

    def _call_barrier(self, name, node):
        raise self.syntax_error("barrier() is a statement; write it on its own line", node)

    def _call_alloc(self, name, node):
        raise self.syntax_error(
            f"{name}() must be assigned directly to a name: tile = pk.{name}(f32, 256)", node)
