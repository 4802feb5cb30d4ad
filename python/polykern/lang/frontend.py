"""Kernel frontend: a Python function's AST -> a typed, verified ``ir.Function``.

Scoping follows Python: a variable is function-wide, its type is fixed by its first assignment (or by an
annotation ``k: i32 = 0``), and it must be assigned (in source order) before it is read. Kernel-local
variables start at zero on every backend, so a variable assigned on only one branch reads as zero on the
other. Parameters cannot be reassigned.
"""
from __future__ import annotations

import ast
import typing

from ..errors import KernelTypeError
from ..ir import nodes as ir
from ..ir.types import ArrayType, BufferType, ScalarType, bf16, i32
from ..ir.verifier import verify
from ..passes.uniformity import check_barrier_uniformity
from ..passes.unroll import unroll
from . import builtins as B
from . import async_copy, debug_print, hopper, matrix
from . import dynamic_shared, vector_access
from .annotations import resolve
from .body_facts import BodyFacts
from .exprs import ExprTranslator
from .functions import Func, FunctionCalls, names_its_calls
from .source import get_kernel_source
from .specialize import ATTR as SPECIALIZATION_ATTR
from .specialize import describe, python_scope, type_params
from .typing_rules import coerce, default_type, is_weak

_UNSUPPORTED_STMT = {
    ast.With: "'with' statements", ast.AsyncWith: "'with' statements", ast.Try: "'try' statements",
    ast.Raise: "'raise'", ast.FunctionDef: "nested functions", ast.AsyncFunctionDef: "nested functions",
    ast.ClassDef: "class definitions", ast.Global: "'global'", ast.Nonlocal: "'nonlocal'",
    ast.Delete: "'del'", ast.Import: "imports", ast.ImportFrom: "imports", ast.AsyncFor: "'async for'",
    ast.Assert: "'assert' statements", ast.Match: "'match' statements",
}
if hasattr(ast, "TryStar"):
    _UNSUPPORTED_STMT[ast.TryStar] = "'try' statements"


class FunctionTranslator(ExprTranslator, FunctionCalls):
    """Translates a kernel (``translate``) or, with ``inline`` set, one inlined call of a device
    function (``translate_inline``, lang/functions.py). ``bindings``: the values of the
    pk.constexpr / pk.dtype parameters (lang/specialize.py), names the body sees as Python values."""

    def __init__(self, pyfunc, check_barriers: bool = True, bindings=None, src=None, inline=None,
                 name=None):
        self.pyfunc = pyfunc
        self.check_barriers = check_barriers
        self.src = src if src is not None else get_kernel_source(pyfunc)
        self.env = python_scope(pyfunc)
        self.bindings = dict(bindings or {})
        self.env.update(self.bindings)
        self.type_params = type_params(pyfunc, None)
        self.constexprs = {p for p, kind in self.type_params if kind == "constexpr"}
        self.inline = inline
        self.name = name or pyfunc.__name__
        self.vars: dict = {}  # source name -> type
        self.params: set = set()
        self.loop_depth = 0
        self._taken = None  # every name the kernel's source uses (temporaries avoid them)
        self.pending: list = []  # statements the expression being translated needs to run first
        self.facts = BodyFacts()  # what the body records for its kernel (lang/body_facts.py)

    # ------------------------------------------------------------------ function
    def translate(self) -> ir.Function:
        fdef = self.src.tree
        a = fdef.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
            raise self.syntax_error("kernel parameters must be plain positional parameters with types "
                                    "(no defaults, *args, **kwargs or keyword-only parameters)", fdef)
        try:
            hints = typing.get_type_hints(self.pyfunc)
        except Exception:  # noqa: BLE001 - fall back to raw annotations; errors reported per parameter
            hints = dict(getattr(self.pyfunc, "__annotations__", {}))
        fixed = dict(self.type_params)
        missing = [f"{p} (pk.{kind})" for p, kind in self.type_params if p not in self.bindings]
        if missing:
            raise self.type_error(
                f"kernel '{self.name}' has parameters fixed at build time without a value: {', '.join(missing)}; "
                f"build {fdef.name}.specialize({', '.join(p.split()[0] + '=...' for p in missing)})", fdef)
        params = []
        for arg in a.args:
            if arg.arg in fixed:
                continue
            t = hints.get(arg.arg)
            if isinstance(t, str) or self.bindings:  # a forward reference, or "T" of a pk.dtype parameter
                t = self._eval_annotation(arg.annotation) if arg.annotation is not None else None
            t = resolve(t, self._lookup_annotation_text(arg), self.loc(arg))
            if t is None:
                raise self.type_error(
                    f"parameter '{arg.arg}' needs a type annotation, e.g. {arg.arg}: f32 or "
                    f"{arg.arg}: Buffer[f32]", arg)
            if not isinstance(t, (ScalarType, BufferType)):
                raise self.type_error(
                    f"parameter '{arg.arg}' has annotation {t!r}; use a scalar type (i32, f32, ...) or "
                    "Buffer[T]", arg)
            if t == bf16:
                raise self.type_error(
                    f"parameter '{arg.arg}': a bf16 scalar cannot be a kernel argument (the host has no bf16 "
                    f"scalar); pass an f32 and convert with bf16({arg.arg})", arg)
            self.vars[arg.arg] = t
            self.params.add(arg.arg)
            params.append(ir.Param(arg.arg, t))
        if "return" in hints and hints["return"] is not None and hints["return"] is not type(None):
            raise self.type_error("kernels return nothing; write results to a Buffer", fdef)
        self.fn = ir.Function(self.name, params, [], loc=self.loc(fdef), source=self.src.text)
        if self.bindings:
            self.fn.attrs[SPECIALIZATION_ATTR] = describe(self.type_params, self.bindings)
        body = fdef.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]  # docstring
        self.fn.body = self.block(body)
        self._fresh("_")  # fills self._taken: every name in the kernel's source
        self.facts.apply(self.fn, self._taken | set(self.vars))
        bad = hopper.H.check_swizzled_use(self.fn)
        if bad is not None:
            raise KernelTypeError(bad[0], getattr(bad[1], "loc", None) or self.fn.loc)
        self.fn.attrs.update(hopper.H.info_attrs(self.fn))  # what a runtime needs to launch (ir/hopper.py)
        verify(self.fn)
        if self.check_barriers:
            check_barrier_uniformity(self.fn)
        return self.fn

    def _eval_annotation(self, node):
        """What an annotation means: evaluated in the kernel's scope (with its specialization values);
        a string in it (``"T"``, ``Buffer["T"]``) is looked up there too (lang/annotations.py)."""
        try:
            # The user's own annotation, evaluated in the kernel's module scope as Python would.
            value = eval(compile(ast.Expression(node), self.src.filename, "eval"), self.env)  # noqa: S307
        except KernelTypeError as exc:  # e.g. Buffer[f32, "writeonly"]: the message, at this annotation
            raise self.type_error(exc.message, node) from None
        except Exception as exc:  # noqa: BLE001
            raise self.type_error(f"cannot evaluate annotation '{ast.unparse(node)}': {exc}", node) from None
        return resolve(value, self._lookup_annotation_text(node), self.loc(node))

    def _lookup_annotation_text(self, node):
        def lookup(text):
            try:
                return eval(compile(text, self.src.filename, "eval"), self.env)  # noqa: S307
            except Exception as exc:  # noqa: BLE001
                raise self.type_error(f"cannot evaluate '{text}' in the annotation '{ast.unparse(node)}' "
                                      f"({type(exc).__name__}: {exc}); a name in quotes must be a pk.dtype "
                                      "parameter or a type", node) from None
        return lookup

    # ------------------------------------------------------------------ statements
    def block(self, stmts) -> list:
        out = []
        for s in stmts:
            saved, self.pending = self.pending, []
            try:
                res = self.stmt(s)
                res = self.pending + res  # statements an expression of `s` needs to run first
            except RecursionError:
                raise self.nested_too_deeply(s) from None
            finally:
                self.pending = saved
            for r in res:
                if r.loc is None:
                    r.loc = self.loc(s)
            out.extend(res)
        return out

    def nested_too_deeply(self, s):
        """The error for a statement whose translation ran out of Python's stack."""
        msg = ("this statement is nested too deeply to compile (operator chains of any length are fine, but not "
               "thousands of nested calls, unary operators or parentheses); split it into several statements")
        if self.inline is None:
            return self.syntax_error(msg, s)
        chain = " -> ".join([self.inline.kernel] + [f.name for f in self.inline.stack])
        return names_its_calls(self.syntax_error(f"{msg}, or nest fewer device function calls: it is inside "
                                                 f"{len(self.inline.stack)} ({chain})", s))

    def new_temp(self, t, node) -> str:
        name = self._fresh("_t")
        self._declare_scalar(name, t, node)
        return name

    def stmt(self, node) -> list:
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is None:
            what = _UNSUPPORTED_STMT.get(type(node), f"'{type(node).__name__}' statements")
            raise self.syntax_error(f"{what} are not supported in kernels", node)
        return method(node)

    def stmt_Pass(self, node):
        return []

    def stmt_Expr(self, node):
        v = node.value
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            return []  # a stray string literal (comment)
        if isinstance(v, ast.Call):
            try:
                fn = self.static_value(v.func)
            except KeyError:
                fn = None
            if fn is B.BUILTINS["vstore"]:
                return vector_access.vstore(self, v, node)
            if isinstance(fn, B.Builtin) and fn.name in matrix.STATEMENTS:
                return matrix.statement(self, fn.name, v, node)
            if isinstance(fn, B.Builtin) and fn.category == "copy":
                return async_copy.statement(self, fn.name, v, node)
            if isinstance(fn, B.Builtin) and fn.name in hopper.STATEMENTS:
                return hopper.statement(self, fn.name, v, node)
            if fn is B.BUILTINS["debug_print"]:
                return debug_print.statement(self, v, node)
            if fn is B.BUILTINS["barrier"]:
                if v.args or v.keywords:
                    raise self.type_error("barrier() takes no arguments", v)
                return [ir.Barrier()]
            if isinstance(fn, Func):  # a device function called for its effects (its value, if any, unused)
                if v.keywords:
                    raise self.syntax_error("keyword arguments are not supported in kernel calls", v)
                self.call_function(fn, v, want_value=False)
                return []
            e = self.expr(v)
            if not isinstance(e, ir.Atomic):
                raise self.syntax_error(f"the result of '{ast.unparse(v)}' is unused", node)
            return [ir.ExprStmt(e)]
        raise self.syntax_error(f"expression '{ast.unparse(v)}' has no effect", node)

    def stmt_Assign(self, node):
        if len(node.targets) != 1:
            raise self.syntax_error("chained assignment (a = b = c) is not supported in kernels", node)
        target = node.targets[0]
        if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Call) \
                and self._builtin_of(node.value) is B.BUILTINS["vload"]:
            return vector_access.vload(self, target, node.value, node)
        if isinstance(target, (ast.Tuple, ast.List)):
            raise self.syntax_error("tuple assignment is not supported in kernels; assign one name at a time",
                                    node)
        if isinstance(target, ast.Name) and isinstance(node.value, ast.Call):
            fn = self._builtin_of(node.value)
            if isinstance(fn, B.Builtin) and fn.name in matrix.DECLARE:
                return matrix.declare(self, target, node.value, fn.name)
            if fn is B.BUILTINS["mma"]:
                return matrix.mma(self, target, node.value)
            if isinstance(fn, B.Builtin) and fn.name in hopper.DECLARE:
                return hopper.declare(self, target, node.value, fn.name)
            alloc = self._alloc_call(node.value)
            if alloc is not None:
                return self._declare_array(target, alloc, node.value)
        if hopper.is_element(self, target):
            return [hopper.element_store(self, target, self.expr(node.value), node)]
        if isinstance(target, ast.Subscript):
            return [self._store(target, self.expr(node.value), node)]
        if isinstance(target, ast.Name):
            return [self._assign_name(target, self.expr(node.value), None, node)]
        raise self.syntax_error(f"cannot assign to '{ast.unparse(target)}' in a kernel", node)

    def stmt_AnnAssign(self, node):
        if not isinstance(node.target, ast.Name):
            raise self.syntax_error("annotated assignment needs a plain name", node)
        t = self._eval_annotation(node.annotation)
        if not isinstance(t, ScalarType):
            raise self.type_error(f"local variables must have a scalar type, got {t!r}", node.annotation)
        name = node.target.id
        if node.value is None:
            if name in self.vars and self.vars[name] != t:
                raise self.type_error(f"'{name}' is already a {self.vars[name]}, cannot redeclare it as {t}",
                                      node)
            self._declare_scalar(name, t, node)
            return []
        value = self.expr(node.value)
        return [self._assign_name(node.target, value, t, node)]

    def stmt_AugAssign(self, node):
        binop = ast.BinOp(left=self._load_form(node.target), op=node.op, right=node.value)
        ast.copy_location(binop, node)
        if isinstance(node.target, ast.Name):
            if node.target.id not in self.vars:
                raise self.syntax_error(f"name '{node.target.id}' is not defined", node.target)
            return [self._assign_name(node.target, self.expr(binop), None, node)]
        if hopper.is_element(self, node.target):
            return [hopper.element_store(self, node.target, self.expr(binop), node)]
        if isinstance(node.target, ast.Subscript):
            pre = []
            idx_node = node.target.slice
            if not isinstance(idx_node, (ast.Name, ast.Constant)):
                # Evaluate the index once: y[f(i)] += v reads and writes the same element.
                tmp = self._fresh("_idx")
                idx = self.index_expr(idx_node)
                self._declare_scalar(tmp, idx.type, node)
                pre.append(ir.Assign(tmp, idx))
                idx_node = ast.copy_location(ast.Name(id=tmp, ctx=ast.Load()), idx_node)
                sub = ast.copy_location(ast.Subscript(value=node.target.value, slice=idx_node, ctx=ast.Load()),
                                        node.target)
                binop.left = sub
                target = ast.copy_location(ast.Subscript(value=node.target.value, slice=idx_node,
                                                         ctx=ast.Store()), node.target)
            else:
                target = node.target
            return pre + [self._store(target, self.expr(binop), node)]
        raise self.syntax_error(f"cannot assign to '{ast.unparse(node.target)}' in a kernel", node)

    @staticmethod
    def _load_form(target):
        t = ast.parse(ast.unparse(target), mode="eval").body
        ast.copy_location(t, target)
        for n in ast.walk(t):
            ast.copy_location(n, target)
        return t

    def _fresh(self, base):
        if self._taken is None:
            self._taken = {n.id for n in ast.walk(self.src.tree) if isinstance(n, ast.Name)}
            self._taken.update(a.arg for a in ast.walk(self.src.tree) if isinstance(a, ast.arg))
        i = 0
        while f"{base}{i}" in self.vars or f"{base}{i}" in self._taken or f"{base}{i}" in self.fn.locals \
                or f"{base}{i}" in self.fn.arrays or f"{base}{i}" in self.fn.fragments:
            i += 1
        return f"{base}{i}"

    def _declare_scalar(self, name, t, node):
        if name in self.params:
            raise self.type_error(f"cannot assign to kernel parameter '{name}'; copy it to a local first", node)
        self.vars[name] = t
        self.fn.locals[name] = t

    def _assign_name(self, target, value, annotated, node):
        name = target.id
        if name in self.params:
            raise self.type_error(f"cannot assign to kernel parameter '{name}'; copy it to a local first", target)
        if not isinstance(value.type, ScalarType):
            raise self.type_error(f"cannot assign {value.type} to '{name}': Buffers and arrays cannot be "
                                  "aliased", node)
        if name in self.vars:
            t = self.vars[name]
            if not isinstance(t, ScalarType):
                raise self.type_error(f"cannot assign to '{name}', it is a {t}", target)
            if annotated is not None and annotated != t:
                raise self.type_error(f"'{name}' is already a {t}, cannot redeclare it as {annotated}", node)
        else:
            t = annotated if annotated is not None else default_type(value).type
            self._declare_scalar(name, t, node)
        if value.type != t and not is_weak(value):
            raise self.type_error(f"cannot assign {value.type} to {t} variable '{name}'", node)
        return ir.Assign(name, coerce(value, t, f"assignment to '{name}'"))

    def _store(self, target, value, node):
        base = self.array_ref(target.value)
        if isinstance(base.type, BufferType) and base.type.readonly:
            raise self.type_error(f"cannot write to readonly Buffer '{base.name}'", target)
        idx = self.index_expr(target.slice)
        elem = base.type.elem
        if not isinstance(value.type, ScalarType):
            raise self.type_error(f"cannot store {value.type} into '{base.name}'", node)
        if value.type != elem and not is_weak(value):
            raise self.type_error(f"cannot store {value.type} into {base.type} '{base.name}'", node)
        return ir.Store(base, idx, coerce(value, elem, f"store to '{base.name}'"))

    def _builtin_of(self, call):
        try:
            return self.static_value(call.func)
        except KeyError:
            return None

    def _call_matrix(self, name, node):
        raise self.syntax_error(f"pk.{name}() is a statement of its own: {matrix.USAGE[name]}", node)

    def _call_hopper(self, name, node):
        raise self.syntax_error(f"pk.{name}() is a statement of its own: {hopper.USAGE[name]}", node)

    def _call_warpgroup(self, name, node):
        return hopper.warpgroup_id(self, node)

    def _call_copy(self, name, node):
        raise self.syntax_error(f"pk.{name}() is a statement of its own: {async_copy.USAGE[name]}", node)

    def _call_vector(self, name, node):
        raise self.syntax_error(f"pk.{name}() is a statement of its own: {vector_access.USAGE[name]}", node)

    def _alloc_call(self, call):
        try:
            fn = self.static_value(call.func)
        except KeyError:
            return None
        if fn is B.BUILTINS["shared"] or fn is B.BUILTINS["local"] or fn is B.BUILTINS["shared_dynamic"]:
            return fn.name
        return None

    def _declare_array(self, target, scope, call):
        if scope == "shared_dynamic":
            return dynamic_shared.declare(self, target, call)
        if len(call.args) != 2 or call.keywords:
            raise self.type_error(f"pk.{scope}() takes (type, size), e.g. pk.{scope}(f32, 256)", call)
        try:
            elem = self.static_value(call.args[0])
        except KeyError:
            elem = None
        if not isinstance(elem, ScalarType):
            raise self.type_error(f"the first argument of pk.{scope}() must be a scalar type", call.args[0])
        size = self.const_int(call.args[1], f"the size of pk.{scope}()")
        if size <= 0:
            raise self.type_error(f"pk.{scope}() size must be positive, got {size}", call.args[1])
        name = target.id
        if name in self.vars:
            raise self.type_error(f"'{name}' is already defined; arrays must have a name of their own", target)
        over = self.facts.array_budget(scope, size * elem.nbytes)
        if over is not None:
            raise self.type_error(f"pk.{scope}({elem}, {size}) is too large: {over}", call.args[1])
        t = ArrayType(elem, size, scope)
        self.vars[name] = t
        self.fn.arrays[name] = t
        return []

    def stmt_If(self, node):
        cond = self.cond_expr(node.test)
        return [ir.If(cond, self.block(node.body), self.block(node.orelse))]

    def stmt_While(self, node):
        if node.orelse:
            raise self.syntax_error("'while ... else' is not supported in kernels", node)
        saved, self.pending = self.pending, []
        try:
            cond = self.cond_expr(node.test)
            pre = self.pending
        finally:
            self.pending = saved
        self.loop_depth += 1
        body = self.block(node.body)
        self.loop_depth -= 1
        if pre:
            # The condition needs statements each iteration: while True: pre; if not cond: break; body
            stop = ir.Break()
            exit_ = ir.If(ir.UnaryOp("not", cond), [stop], [])
            stop.loc = exit_.loc = self.loc(node.test)  # messages about the exit name the condition's line
            true = ir.Const(True, cond.type)
            return [ir.While(true, pre + [exit_] + body)]
        return [ir.While(cond, body)]

    def stmt_For(self, node):
        if node.orelse:
            raise self.syntax_error("'for ... else' is not supported in kernels", node)
        it = node.iter
        is_range = False
        if isinstance(it, ast.Call):
            fn = self._builtin_of(it)
            if isinstance(fn, B.Builtin) and fn.name in hopper.LOOPS:
                return hopper.wg_loop(self, node, fn.name)
            try:
                is_range = self.static_value(it.func) is range
            except KeyError:
                is_range = False
        if not is_range:
            raise self.syntax_error("kernels support only 'for NAME in range(...)' loops", node)
        if not isinstance(node.target, ast.Name):
            raise self.syntax_error("the loop variable must be a plain name", node.target)
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.type_error("range() takes 1 to 3 positional arguments", it)
        args = list(it.args)
        start = self.scalar_expr(args[0]) if len(args) >= 2 else None
        stop = self.scalar_expr(args[1] if len(args) >= 2 else args[0])
        step = self.const_int(args[2], "the step of range()") if len(args) == 3 else 1
        if step == 0:
            raise self.type_error("range() step must not be zero", args[2])
        if start is None:
            start = ir.Const(0, stop.type if not is_weak(stop) else i32)
            start.weak = is_weak(stop)
        name = node.target.id
        if name in self.vars and isinstance(self.vars[name], ScalarType):
            t = self.vars[name]
            start, stop = coerce(start, t, "range() start"), coerce(stop, t, "range() stop")
        else:
            from .typing_rules import unify

            start, stop = unify(start, stop, "range()", self.loc(it))
            start, stop = default_type(start), default_type(stop)
            t = start.type
            if not t.is_int:
                raise self.type_error(f"range() needs integer bounds, got {t}", it)
            self._declare_scalar(name, t, node.target)
        if not t.min_value() <= step <= t.max_value():
            raise self.type_error(f"range() step {step} does not fit the loop variable's type {t} "
                                  f"(range {t.min_value()}..{t.max_value()})", args[2])
        # Python evaluates range()'s bounds once, start first; a C-style loop re-reads `stop` every
        # iteration (and the body may change it), so a stop that is neither a constant nor a scalar
        # parameter (which nothing assigns) is copied to a temporary, after a non-trivial start.
        pre = []
        if not self._is_fixed(stop):
            if not isinstance(start, (ir.Const, ir.Var)):
                start = self._bound_temp(start, pre, it)
            stop = self._bound_temp(stop, pre, it)
        self.loop_depth += 1
        body = self.block(node.body)
        self.loop_depth -= 1
        loop = ir.For(name, start, stop, step, body)
        loop.loc = self.loc(node)
        if self._names_constexpr(it):  # range(BLOCK): unrolled where small enough (passes/unroll.py)
            return pre + (unroll(loop) or [loop])
        return pre + [loop]

    def _names_constexpr(self, node) -> bool:
        return any(isinstance(n, ast.Name) and n.id in self.constexprs and n.id not in self.vars
                   for n in ast.walk(node))

    def _is_fixed(self, e) -> bool:
        """Whether ``e`` has one value for the whole kernel: a constant or a scalar parameter."""
        return isinstance(e, ir.Const) or (isinstance(e, ir.Var) and e.name in self.params)

    def _bound_temp(self, e, pre, node):
        """A Var of a fresh temporary assigned ``e`` (the assignment is appended to ``pre``)."""
        tmp = self.new_temp(e.type, node)
        pre.append(ir.Assign(tmp, e))
        v = ir.Var(tmp, e.type)
        v.loc = e.loc
        return v

    def stmt_Break(self, node):
        if self.loop_depth == 0:
            raise self.syntax_error("'break' outside a loop", node)
        return [ir.Break()]

    def stmt_Continue(self, node):
        if self.loop_depth == 0:
            raise self.syntax_error("'continue' outside a loop", node)
        return [ir.Continue()]

    def stmt_Return(self, node):
        if self.inline is not None:
            return self.inline_return(node)
        if node.value is not None:
            raise self.type_error("kernels cannot return a value; write results to a Buffer", node)
        return [ir.Return()]


def translate(pyfunc, check_barriers: bool = True, bindings=None, name=None) -> ir.Function:
    """The verified IR of ``pyfunc``. ``check_barriers=False`` skips the barrier-uniformity rule
    (passes/uniformity.py): only for tests of a backend's behaviour on IR the language refuses.
    ``bindings``/``name``: a specialized kernel's values and name (lang/kernel.py)."""
    return FunctionTranslator(pyfunc, check_barriers, bindings=bindings, name=name).translate()

